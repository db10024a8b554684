"""What the async bolt tests share: a local HTTP endpoint (aiohttp) that answers after a delay and can answer 500
or hang for chosen items on their first request, a replaying spout, the enrichment bolt calling the endpoint and a
recording sink.  What the components see is kept in :data:`RUNS` (LocalCluster runs them in the test's process,
each task on a private copy)."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from storm_py import AsyncBolt, Bolt, Spout, TopologyBuilder


@dataclass
class Run:
    """What one test's components saw."""

    acks: Counter[int] = field(default_factory=Counter)
    fails: Counter[int] = field(default_factory=Counter)
    sunk: list[int] = field(default_factory=list)
    active: int = 0
    peak: int = 0
    loops: set[int] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)


RUNS: dict[str, Run] = {}


def new_run(name: str) -> Run:
    RUNS[name] = run = Run()
    return run


class Endpoint:
    """``GET /item/{i}`` answers ``2*i`` after ``delay`` seconds (plus ``i % 7`` ms, so answers overtake each
    other); on its first request an item of ``bad`` gets a 500 and one of ``hang`` no answer at all."""

    def __init__(self, delay: float = 0.02, bad: frozenset[int] = frozenset(), hang: frozenset[int] = frozenset(),
                 jitter: bool = True) -> None:
        self.delay = delay
        self.bad = bad
        self.hang = hang
        self.jitter = jitter
        self.requests: Counter[int] = Counter()
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="test-endpoint", daemon=True)
        self._runner: web.AppRunner | None = None

    async def _item(self, request: web.Request) -> web.Response:
        i = int(request.match_info["i"])
        self.requests[i] += 1
        first = self.requests[i] == 1
        if first and i in self.hang:
            await asyncio.sleep(3600)
        await asyncio.sleep(self.delay + ((i % 7) / 1000 if self.jitter else 0.0))
        if first and i in self.bad:
            return web.Response(status=500, text="no")
        return web.Response(text=str(2 * i))

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_get("/item/{i}", self._item)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0, backlog=1024)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._start())
        self._ready.set()
        self._loop.run_forever()
        if self._runner is not None:
            self._loop.run_until_complete(self._runner.cleanup())
        self._loop.close()

    def start(self) -> None:
        self._thread.start()
        assert self._ready.wait(10), "the test endpoint did not start"

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextmanager
def endpoint(**kwargs: Any) -> Iterator[Endpoint]:
    server = Endpoint(**kwargs)
    server.start()
    try:
        yield server
    finally:
        server.stop()


class NumberSpout(Spout):
    """Emits 0..n-1 in order, each with itself as message id; a failed number is emitted again."""

    def __init__(self, run: str, n: int) -> None:
        self.run = run
        self.n = n

    def open(self, conf, context, collector):
        self.collector = collector
        self.todo = list(range(self.n))[::-1]

    def next_tuple(self):
        if self.todo:
            i = self.todo.pop()
            self.collector.emit([i], msg_id=i)

    def ack(self, msg_id):
        run = RUNS[self.run]
        with run.lock:
            run.acks[msg_id] += 1

    def fail(self, msg_id):
        run = RUNS[self.run]
        with run.lock:
            run.fails[msg_id] += 1
        self.todo.append(msg_id)

    def declare_output_fields(self, declarer):
        declarer.declare(["i"])


class EnrichBolt(AsyncBolt):
    """Asks the endpoint for each number and emits ``[i, answer]``; a non-200 answer raises (fails the input)."""

    def __init__(self, run: str, url: str) -> None:
        self.run = run
        self.url = url

    async def prepare(self, conf, context, collector):
        self.collector = collector
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        RUNS[self.run].loops.add(id(asyncio.get_running_loop()))

    async def execute(self, tup):
        run = RUNS[self.run]
        i = tup.values[0]
        with run.lock:
            run.active += 1
            run.peak = max(run.peak, run.active)
        try:
            async with self.session.get(f"{self.url}/item/{i}") as reply:
                if reply.status != 200:
                    raise RuntimeError(f"item {i}: HTTP {reply.status}")
                answer = int(await reply.text())
        finally:
            with run.lock:
                run.active -= 1
        self.collector.emit([i, answer])

    async def cleanup(self):
        await self.session.close()

    def declare_output_fields(self, declarer):
        declarer.declare(["i", "answer"])


class SinkBolt(Bolt):
    """Records the numbers it receives, in order, and acks them."""

    def __init__(self, run: str) -> None:
        self.run = run

    def prepare(self, conf, context, collector):
        self.collector = collector

    def execute(self, tup):
        run = RUNS[self.run]
        assert tup.values[1] == 2 * tup.values[0]
        with run.lock:
            run.sunk.append(tup.values[0])
        self.collector.ack(tup)

    def declare_output_fields(self, declarer):
        pass


def enrichment_topology(run: str, url: str, n: int, conf: dict[str, Any] | None = None):
    """numbers -> enrich (async, one task) -> sink (one task)."""
    builder = TopologyBuilder()
    builder.set_spout("numbers", NumberSpout(run, n))
    declarer = builder.set_bolt("enrich", EnrichBolt(run, url)).shuffle_grouping("numbers")
    for key, value in (conf or {}).items():
        declarer.add_configuration(key, value)
    builder.set_bolt("sink", SinkBolt(run)).shuffle_grouping("enrich")
    return builder.create_topology()
