"""Numbers 0..N-1 through an async bolt that asks an HTTP endpoint for each (``asyncenrich.url``) into a sink.

The spout replays failed numbers and records its acks and fails, the sink the numbers it receives in order, as
lines of files under ``asyncenrich.out`` (the test reads them): ``acks``, ``fails`` and ``sunk``.
"""

from __future__ import annotations

import os
from typing import Any

import aiohttp

from storm_py import AsyncBolt, Bolt, FailedException, Spout, TopologyBuilder


def _append(path: str, line: str) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")


class NumberSpout(Spout):
    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.out = conf["asyncenrich.out"]
        self.todo = list(range(int(conf["asyncenrich.count"])))[::-1]

    def next_tuple(self) -> None:
        if self.todo:
            i = self.todo.pop()
            self.collector.emit([i], msg_id=i)

    def ack(self, msg_id: Any) -> None:
        _append(os.path.join(self.out, "acks"), str(msg_id))

    def fail(self, msg_id: Any) -> None:
        _append(os.path.join(self.out, "fails"), str(msg_id))
        self.todo.append(msg_id)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["i"])


class EnrichBolt(AsyncBolt):
    async def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.url = conf["asyncenrich.url"]
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))

    async def execute(self, tup: Any) -> None:
        i = tup.values[0]
        async with self.session.get(f"{self.url}/item/{i}") as reply:
            if reply.status != 200:
                raise FailedException(f"item {i}: HTTP {reply.status}")  # quietly: no error reported
            answer = int(await reply.text())
        self.collector.emit([i, answer])

    async def cleanup(self) -> None:
        await self.session.close()

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["i", "answer"])


class SinkBolt(Bolt):
    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.path = os.path.join(conf["asyncenrich.out"], "sunk")

    def execute(self, tup: Any) -> None:
        if tup.values[1] == 2 * tup.values[0]:
            _append(self.path, str(tup.values[0]))
        self.collector.ack(tup)


def build(conf: dict[str, Any]) -> Any:
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout())
    builder.set_bolt("enrich", EnrichBolt()).shuffle_grouping("numbers")
    builder.set_bolt("sink", SinkBolt()).shuffle_grouping("enrich")
    return builder.create_topology()
