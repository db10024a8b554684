"""An I/O-bound bolt behind a Kafka spout: each record costs the bolt ``scaleapp.cost.ms`` of waiting (a sleep,
as a call to a slow service would), so more executors raise its throughput.

KafkaSpout ``kafka`` (``scaleapp.bootstrap``, ``scaleapp.topic``, ``scaleapp.group``) -> bolt ``work``
(``scaleapp.executors`` executors, default 1, over ``scaleapp.tasks`` tasks) which appends each record's value to
a file of its own under ``scaleapp.out.dir`` (one line per record, written before the ack), so a test counts what
was processed, and how often.  With ``scaleapp.stateful`` true the bolt is ``CountingWork`` instead: after the same
wait it counts each record's value in its managed state (under ``topology.state.guarantee: exactly_once`` the
committed counts are exact, whatever rebalances happen).
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

from storm_py import BaseStatefulBolt, Bolt, TopologyBuilder
from storm_py.kafka import KafkaSpout, KafkaSpoutConfig


class Work(Bolt):
    """Waits ``scaleapp.cost.ms`` per record, then records its value and acks it."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.cost = float(conf.get("scaleapp.cost.ms", 2)) / 1000.0
        out = Path(str(conf["scaleapp.out.dir"]))
        out.mkdir(parents=True, exist_ok=True)
        self.file = (out / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.txt").open("a", encoding="utf-8")

    def execute(self, tup: Any) -> None:
        time.sleep(self.cost)
        value = tup.values[4]
        self.file.write((value.decode() if isinstance(value, bytes) else str(value)) + "\n")
        self.file.flush()
        self.collector.ack(tup)

    def cleanup(self) -> None:
        self.file.close()

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare([])


class CountingWork(BaseStatefulBolt):
    """Waits ``scaleapp.cost.ms`` per record, then counts its value in the task's state and acks it."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.cost = float(conf.get("scaleapp.cost.ms", 2)) / 1000.0

    def init_state(self, state: Any) -> None:
        self.counts = state

    def execute(self, tup: Any) -> None:
        time.sleep(self.cost)
        value = tup.values[4]
        key = value.decode() if isinstance(value, bytes) else str(value)
        self.counts.put(key, self.counts.get(key, 0) + 1)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare([])


def build(conf: dict[str, Any]) -> Any:
    spout_conf = KafkaSpoutConfig(str(conf["scaleapp.bootstrap"]), [str(conf["scaleapp.topic"])],
                                  group_id=str(conf["scaleapp.group"]), offset_commit_period_ms=500)
    tb = TopologyBuilder()
    tb.set_spout("kafka", KafkaSpout(spout_conf), 1)
    stateful = str(conf.get("scaleapp.stateful", "false")).lower() == "true"
    work = tb.set_bolt("work", CountingWork() if stateful else Work(), int(conf.get("scaleapp.executors", 1)))
    work.set_num_tasks(int(conf.get("scaleapp.tasks", 8))).shuffle_grouping("kafka")
    return tb.create_topology()
