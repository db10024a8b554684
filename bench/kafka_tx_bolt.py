"""Records/s through a transactional KafkaBolt (exactly-once, a checkpoint every second) beside the at-least-once
KafkaBolt, in one process, on the dev broker.

    python bench/kafka_tx_bolt.py [--records 200000] [--runs 2] [--interval 1.0]

Starts the dev broker (tansu, memory storage) on loopback.  Each run writes ``--records`` tuples of 100-byte
values to a fresh 4-partition topic:

- ``at_least_once``: ``KafkaBolt.execute`` per tuple; done when every input is acked (the broker confirmed it);
- ``exactly_once``: the bolt with ``with_transactional_id_prefix`` under ``topology.state.guarantee:
  exactly_once`` with an in-memory managed state; a checkpoint (prepare, then commit: one Kafka transaction with
  its marker) every ``--interval`` seconds of the run, and one at the end; done when the last one committed.

Prints one JSON line per mode: the best records/s over the runs and the ratio to at-least-once.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.append(str(HERE.parent))

from storm_py.clock import SYSTEM_CLOCK  # noqa: E402
from storm_py.dev.kafka import KafkaBrokerProcess  # noqa: E402
from storm_py.kafka import KafkaBolt  # noqa: E402
from storm_py.kafka.client import KafkaAdmin  # noqa: E402
from storm_py.stateful.state.key_value import KeyValueState  # noqa: E402
from tests.jdbc.harness import RecordingCollector, context, tup  # noqa: E402


def run(bootstrap: str, records: int, exactly_once: bool, interval: float) -> float:
    topic = f"bench-{uuid.uuid4().hex[:8]}"
    KafkaAdmin(bootstrap).create_topic(topic, 4)
    bolt = KafkaBolt(bootstrap, topic, key_field="key", value_field="value")
    conf = {"topology.message.timeout.secs": 30}
    if exactly_once:
        bolt.with_transactional_id_prefix(topic)
        conf["topology.state.guarantee"] = "exactly_once"
    collector = RecordingCollector()
    bolt.prepare(conf, context("out"), collector)
    value = b"x" * 100
    tuples = [tup(["key", "value"], [str(i).encode(), value]) for i in range(records)]
    state = KeyValueState()
    txid = 0

    def checkpoint() -> None:
        nonlocal txid
        bolt.pre_prepare(txid)
        state.prepare_commit(txid)
        bolt.pre_commit(txid)
        state.commit(txid)
        txid += 1

    start = SYSTEM_CLOCK.now()
    if exactly_once:
        bolt.init_state(state)
    next_checkpoint = start + interval
    for t in tuples:
        bolt.execute(t)
        if exactly_once and SYSTEM_CLOCK.now() >= next_checkpoint:
            checkpoint()
            next_checkpoint = SYSTEM_CLOCK.now() + interval
    if exactly_once:
        checkpoint()
        assert bolt.tx is not None and bolt.tx.written == txid - 1, "the last checkpoint did not commit"
    else:
        while len(collector.acked) < records:
            bolt.producer.poll(0.05)
    elapsed = SYSTEM_CLOCK.now() - start
    bolt.cleanup()
    return records / elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--interval", type=float, default=1.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-kafka-") as tmp:
        broker = KafkaBrokerProcess(log_path=Path(tmp) / "broker.log", die_with_parent=True)
        broker.start()
        try:
            best = {"at_least_once": 0.0, "exactly_once": 0.0}
            for _ in range(args.runs):
                best["at_least_once"] = max(best["at_least_once"],
                                            run(broker.bootstrap_servers, args.records, False, args.interval))
                best["exactly_once"] = max(best["exactly_once"],
                                           run(broker.bootstrap_servers, args.records, True, args.interval))
        finally:
            broker.stop()
    for mode, rate in best.items():
        print(json.dumps({"bench": "kafka_tx_bolt", "mode": mode, "records_per_s": round(rate),
                          "ratio_to_at_least_once": round(rate / best["at_least_once"], 3),
                          "records": args.records, "checkpoint_interval_s": args.interval}))


if __name__ == "__main__":
    main()
