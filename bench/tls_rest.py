"""What TLS costs on nimbus's REST API: p50/p99 of ``GET /api/v1/cluster/summary``, plain and TLS, same run.

    python bench/tls_rest.py [--requests 2000] [--warmup 200] [--json results.jsonl]

Two nimbus daemons in this process over the in-memory state store (the cluster state is not what is measured),
one plain and one with ``storm.tls.*`` from the dev CA (:mod:`storm_py.dev.tls_ca`, ECDSA P-256), each asked
sequentially, one request at a time, alternating blocks of 100 so both see the same machine load:

* ``client``: :class:`NimbusClient` as the CLI and the UI relay use it (one kept-alive connection per nimbus and
  thread, so the handshake is paid once);
* ``keep-alive``: one kept-alive ``http.client`` connection, the cost of TLS on the bytes alone;
* ``new connection``: urllib, a new connection per request (what ``curl`` in a loop does): the TLS row pays a
  full handshake (ECDHE + ECDSA P-256) every time.

The first line states the settings, the commit and the machine.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from storm_py.client import NimbusClient  # noqa: E402
from storm_py.cluster_state.memory import MemoryStorage  # noqa: E402
from storm_py.dev.tls_ca import make_dev_tls  # noqa: E402
from storm_py.nimbus.daemon import NimbusDaemon  # noqa: E402
from storm_py.node.tls import client_context  # noqa: E402

TOKEN = "bench-token"
PATH = "/api/v1/cluster/summary"
BLOCK = 100


def _commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _nimbus(root: Path, extra: dict[str, Any]) -> tuple[NimbusDaemon, threading.Thread]:
    daemon = NimbusDaemon({"nimbus.thrift.port": 0, "nimbus.auth.token": TOKEN, "storm.local.dir": str(root),
                           **extra}, MemoryStorage())
    daemon.start()
    thread = threading.Thread(target=daemon.run, daemon=True)
    thread.start()
    return daemon, thread


def _keep_alive(port: int, tls: dict[str, Any]) -> Callable[[], None]:
    context = client_context(tls)
    conn = (http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=30) if context
            else http.client.HTTPConnection("127.0.0.1", port, timeout=30))
    headers = {"Authorization": f"Bearer {TOKEN}"}

    def once() -> None:
        conn.request("GET", PATH, headers=headers)
        reply = conn.getresponse()
        reply.read()
        assert reply.status == 200, reply.status
    return once


def _client(port: int, tls: dict[str, Any]) -> Callable[[], None]:
    client = NimbusClient({"nimbus.seeds": [f"127.0.0.1:{port}"], "nimbus.auth.token": TOKEN, **tls})
    node = f"127.0.0.1:{port}"

    def once() -> None:
        client._http("GET", f"{client._base(node)}{PATH}", None, 30.0)
    return once


def _new_connection(port: int, tls: dict[str, Any]) -> Callable[[], None]:
    context = client_context(tls)
    url = f"{'https' if context else 'http'}://127.0.0.1:{port}{PATH}"

    def once() -> None:
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
        with urllib.request.urlopen(request, timeout=30, context=context) as reply:
            reply.read()
    return once


def _percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 3),
            "p99_ms": round(ordered[int(len(ordered) * 0.99) - 1] * 1000, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    print(f"# tls_rest: {args.requests} requests per row after {args.warmup} warm-up, commit {_commit()}, "
          f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cpus")
    with tempfile.TemporaryDirectory(prefix="tls-rest-") as tmp:
        root = Path(tmp)
        tls = make_dev_tls(root / "tls")
        plain_daemon, plain_thread = _nimbus(root / "plain", {})
        tls_daemon, tls_thread = _nimbus(root / "tls-nimbus", tls)
        try:
            rows: dict[str, Callable[[], None]] = {
                "client plain": _client(plain_daemon.port, {}),
                "client tls": _client(tls_daemon.port, tls),
                "keep-alive plain": _keep_alive(plain_daemon.port, {}),
                "keep-alive tls": _keep_alive(tls_daemon.port, tls),
                "new connection plain": _new_connection(plain_daemon.port, {}),
                "new connection tls": _new_connection(tls_daemon.port, tls),
            }
            samples: dict[str, list[float]] = {name: [] for name in rows}
            for once in rows.values():
                for _ in range(args.warmup):
                    once()
            while min(len(s) for s in samples.values()) < args.requests:
                for name, once in rows.items():
                    for _ in range(BLOCK):
                        start = time.perf_counter()
                        once()
                        samples[name].append(time.perf_counter() - start)
        finally:
            for daemon, thread in ((plain_daemon, plain_thread), (tls_daemon, tls_thread)):
                daemon.stop()
                thread.join(10)
    results = {name: _percentiles(s) for name, s in samples.items()}
    for name, r in results.items():
        print(f"{name:22s} p50 {r['p50_ms']:7.3f} ms   p99 {r['p99_ms']:7.3f} ms")
    for kind in ("client", "keep-alive", "new connection"):
        cost = results[f"{kind} tls"]["p50_ms"] - results[f"{kind} plain"]["p50_ms"]
        print(f"TLS cost ({kind}): {cost:+.3f} ms p50 per request")
    if args.json is not None:
        with args.json.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"bench": "tls_rest", "commit": _commit(), "requests": args.requests,
                                  "results": results}) + "\n")


if __name__ == "__main__":
    main()
