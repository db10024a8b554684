"""Enrichment through a 20 ms HTTP call: an ``AsyncBolt`` (``topology.async.max.in.flight`` 100) against the same bolt
written synchronously, in the same run.

    python bench/async_enrichment.py [--secs 10] [--warmup 3] [--latency-ms 20] [--in-flight 100]

A local HTTP endpoint (a process of its own) answers every request after ``--latency-ms``.  Each case runs a
``LocalCluster`` (one worker): a spout of numbers with message ids (max spout pending 2,000) -> the enrichment
bolt (one task) calling the endpoint for each number.  The figure is inputs acked per second over ``--secs`` after
``--warmup``: the async bolt in ordered and in unordered mode, a plain bolt making the same call with ``urllib``
(one call at a time, as a synchronous bolt does), and the async bolt awaiting only ``asyncio.sleep`` of the
latency (the executor's own ceiling; the in-flight limit allows ``in-flight / latency``).  Beside them, a bare
aiohttp client keeping as many requests in flight with no topology around it: what the client and the endpoint
allow on the machine at that moment.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp

from storm_py import AsyncBolt, Bolt, LocalCluster, Spout, TopologyBuilder
from storm_py.runtime.async_loop import new_event_loop

ACKED = [0]
LOCK = threading.Lock()


class _Slow(asyncio.Protocol):
    """A minimal HTTP/1.1 keep-alive server answering every ``GET /item/{i}`` with ``i`` after a delay: cheaper than
    a web framework's, so that the endpoint's own CPU does not bound what is measured."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        loop = asyncio.get_running_loop()
        while b"\r\n\r\n" in self.buffer:
            head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
            body = head.split(b" ", 2)[1].rsplit(b"/", 1)[-1]
            loop.call_later(self.delay, self._answer, body)

    def _answer(self, body: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))


def serve(delay: float, ports: Any) -> None:
    """Serve until killed; put the port into ``ports``."""

    async def start() -> None:
        server = await asyncio.get_running_loop().create_server(lambda: _Slow(delay), "127.0.0.1", 0, backlog=2048)
        ports.put(server.sockets[0].getsockname()[1])
        await asyncio.Event().wait()

    asyncio.run(start())


class Endpoint:
    """The endpoint in a process of its own (so that it takes none of the measured process's CPU)."""

    def __init__(self, delay: float) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.ports: Any = ctx.Queue()
        self.process = ctx.Process(target=serve, args=(delay, self.ports), daemon=True)
        self.port = 0

    def __enter__(self) -> Endpoint:
        self.process.start()
        self.port = int(self.ports.get(timeout=30))
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.join(10)


class Numbers(Spout):
    """Emits 0, 1, 2 ... with message ids; counts the acks."""

    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector
        self.n = 0

    def next_tuple(self) -> None:
        self.n += 1
        self.collector.emit([self.n], msg_id=self.n)

    def ack(self, msg_id: Any) -> None:
        with LOCK:
            ACKED[0] += 1

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])


class AsyncEnrich(AsyncBolt):
    """One HTTP call per input on the bolt's event loop."""

    def __init__(self, url: str) -> None:
        self.url = url

    async def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))

    async def execute(self, tup: Any) -> None:
        async with self.session.get(f"{self.url}/item/{tup.values[0]}") as reply:
            await reply.read()

    async def cleanup(self) -> None:
        await self.session.close()


class AsyncSleep(AsyncBolt):
    """The latency without the call: what the executor itself sustains at this many inputs in flight."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    async def execute(self, tup: Any) -> None:
        await asyncio.sleep(self.delay)


class SyncEnrich(Bolt):
    """The same call, blocking: one input at a time."""

    def __init__(self, url: str) -> None:
        self.url = url

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        with urllib.request.urlopen(f"{self.url}/item/{tup.values[0]}", timeout=10) as reply:
            reply.read()
        self.collector.ack(tup)


def measure(bolt: Any, conf: dict[str, Any], secs: float, warmup: float) -> float:
    """Inputs acked per second over ``secs`` after ``warmup``."""
    builder = TopologyBuilder()
    builder.set_spout("numbers", Numbers()).set_max_spout_pending(2000)
    builder.set_bolt("enrich", bolt).shuffle_grouping("numbers")
    with LocalCluster() as cluster:
        cluster.submit_topology("enrich", conf, builder.create_topology())
        time.sleep(warmup)
        with LOCK:
            start, t0 = ACKED[0], time.monotonic()
        time.sleep(secs)
        with LOCK:
            done, t1 = ACKED[0], time.monotonic()
        cluster.kill_topology("enrich", wait_secs=0)
    return (done - start) / (t1 - t0)


def raw_client(url: str, in_flight: int, secs: float, warmup: float) -> float:
    """The same-run baseline: a bare aiohttp client keeping ``in_flight`` requests going, outside any topology."""
    done = [0]

    async def run() -> float:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            end = time.monotonic() + warmup + secs
            start: list[tuple[int, float]] = []

            async def caller() -> None:
                while time.monotonic() < end:
                    async with session.get(f"{url}/item/{done[0]}") as reply:
                        await reply.read()
                    done[0] += 1

            async def mark() -> None:
                await asyncio.sleep(warmup)
                start.append((done[0], time.monotonic()))

            await asyncio.gather(mark(), *(caller() for _ in range(in_flight)))
            n0, t0 = start[0]
            return (done[0] - n0) / (time.monotonic() - t0)

    loop = new_event_loop()
    try:
        return loop.run_until_complete(run())
    finally:
        loop.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--secs", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--in-flight", type=int, default=100)
    args = parser.parse_args()
    with Endpoint(args.latency_ms / 1000) as endpoint:
        url = f"http://127.0.0.1:{endpoint.port}"
        base = {"topology.async.max.in.flight": args.in_flight, "topology.message.timeout.secs": 60}
        rows = [
            ("AsyncBolt, ordered", measure(AsyncEnrich(url), base, args.secs, args.warmup)),
            ("AsyncBolt, unordered",
             measure(AsyncEnrich(url), {**base, "topology.async.output.mode": "unordered"}, args.secs, args.warmup)),
            ("synchronous Bolt", measure(SyncEnrich(url), base, args.secs, args.warmup)),
            (f"AsyncBolt awaiting asyncio.sleep({args.latency_ms:g} ms), no call",
             measure(AsyncSleep(args.latency_ms / 1000), base, args.secs, args.warmup)),
            (f"bare aiohttp client, {args.in_flight} requests in flight (no topology)",
             raw_client(url, args.in_flight, args.secs, args.warmup)),
        ]
    print(f"latency {args.latency_ms:g} ms, max in flight {args.in_flight}, {args.secs:g} s after {args.warmup:g} s")
    print("| bolt | inputs/s |")
    print("|---|---|")
    for name, rate in rows:
        print(f"| {name} | {rate:,.0f} |")
    print(f"async / sync: {rows[0][1] / rows[2][1]:.1f}x; async / bare client: {rows[0][1] / rows[4][1]:.2f}; "
          f"limit {args.in_flight / args.latency_ms * 1000:,.0f}/s")


if __name__ == "__main__":
    main()
