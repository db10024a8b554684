"""A slow ticking spout and a bolt whose tasks, spread over the workers, write every credentials map they are
handed (``set_credentials``) to ``<credcheck.dir>/<task>.json``, so that a test sees what reached each task."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from storm_py import BasicBolt, CredentialsListener, Spout, TopologyBuilder


class Ticks(Spout):
    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.next = 0
        self.at = time.monotonic()

    def next_tuple(self) -> None:
        if time.monotonic() >= self.at:
            self.at = time.monotonic() + 0.1
            self.next += 1
            self.collector.emit([self.next])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])


class Holder(BasicBolt, CredentialsListener):
    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.out = Path(conf["credcheck.dir"]) / f"{context.get_this_task_id()}.json"

    def set_credentials(self, creds: dict[str, str]) -> None:
        tmp = self.out.with_suffix(".tmp")
        tmp.write_text(json.dumps(creds, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.out)

    def execute(self, tup: Any, collector: Any) -> None:
        pass


def build(conf: dict[str, Any]) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("ticks", Ticks(), 1)
    builder.set_bolt("holder", Holder(), 2).shuffle_grouping("ticks")
    return builder.create_topology()
