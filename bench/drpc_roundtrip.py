"""DRPC round trip on a dev cluster: p50/p99 of a trivial function (storm-starter's ``exclamation``).

    python bench/drpc_roundtrip.py [--requests 2000] [--warmup 200] [--workers 1] [--json results.jsonl]

Starts ``storm-py dev-cluster`` (ZooKeeper, nimbus, one supervisor, the DRPC server) in a temporary directory,
submits ``examples/basic_drpc.py`` (``exclamation``: DRPCSpout -> prepare-request -> one bolt -> JoinResult ->
ReturnResults) with ``topology.workers`` workers, and times sequential requests, one at a time:

* ``client``: ``DRPCClient.execute`` over its kept-alive connection to ``drpc.port`` (the topology answers);
* ``http``: ``GET /drpc/exclamation/ARGS`` on ``drpc.http.port``, a new connection per request (urllib);
* ``server only`` (the baseline, same run): ``DRPCClient.execute`` answered by a responder thread in this
  process fetching from ``drpc.invocations.port`` instead of a topology: the server's and the wire's share.

The first line states the settings, the build, the commit and the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO / "bench"))  # the other bench scripts (``python -P`` leaves the script's directory out)

from cluster_perf import STORM, start_cluster, stop_cluster  # noqa: E402  (bench/ is the script's own directory)


def percentiles(samples: list[float]) -> dict[str, float]:
    ms = sorted(s * 1000.0 for s in samples)
    return {
        "n": len(ms),
        "p50_ms": round(statistics.median(ms), 3),
        "p90_ms": round(ms[int(0.90 * (len(ms) - 1))], 3),
        "p99_ms": round(ms[int(0.99 * (len(ms) - 1))], 3),
        "max_ms": round(ms[-1], 3),
    }


def timed(call: Any, n: int, warmup: int) -> list[float]:
    for i in range(warmup):
        call(i)
    out: list[float] = []
    for i in range(n):
        t0 = time.perf_counter()
        call(i)
        out.append(time.perf_counter() - t0)
    return out


def describe() -> str:
    from storm_py import build

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                            check=False).stdout.strip()
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor())
    return (f"commit {commit}; {build.describe()}; Python {platform.python_version()}; {cpu}, "
            f"{os.cpu_count()} cores; load {os.getloadavg()[0]:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()

    from storm_py.drpc import DRPCClient, DRPCInvocationsClient

    print(f"# drpc round trip: {args.requests} requests after {args.warmup} warm-up; topology.workers="
          f"{args.workers}; {describe()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="drpc-bench-") as tmp:
        work = Path(tmp)
        project = work / "project"
        (project / "examples").mkdir(parents=True)
        shutil.copy(REPO / "examples" / "basic_drpc.py", project / "examples" / "basic_drpc.py")
        (project / "examples" / "__init__.py").write_text("", encoding="utf-8")
        cluster = start_cluster(work / "cluster", supervisors=1)
        try:
            config = work / "cluster" / "storm.yaml"
            conf = yaml.safe_load(config.read_text(encoding="utf-8"))
            host, token = "127.0.0.1", str(conf["nimbus.auth.token"])
            subprocess.run([*STORM, "submit", str(project), "examples.basic_drpc:build", "--name", "exclamation",
                            "--config", str(config), "-c", f"topology.workers={args.workers}"],
                           check=True, capture_output=True, timeout=300)
            rows: dict[str, dict[str, float]] = {}
            with DRPCClient(host, int(conf["drpc.port"]), timeout_secs=120, token=token) as client:
                assert client.execute("exclamation", "ready") == "ready!"  # waits for the topology to come up

                def via_client(i: int) -> None:
                    assert client.execute("exclamation", f"w{i}") == f"w{i}!"

                rows["client"] = percentiles(timed(via_client, args.requests, args.warmup))
                http_port = int(conf["drpc.http.port"])

                def via_http(i: int) -> None:
                    req = urllib.request.Request(f"http://{host}:{http_port}/drpc/exclamation/h{i}")
                    req.add_header("Authorization", f"Bearer {token}")
                    with urllib.request.urlopen(req, timeout=60) as resp:
                        assert resp.read() == f"h{i}!".encode()

                rows["http"] = percentiles(timed(via_http, args.requests, args.warmup))

                stop = threading.Event()
                responder = DRPCInvocationsClient(host, int(conf["drpc.invocations.port"]), token)

                def respond() -> None:
                    while not stop.is_set():
                        for inv in responder.fetch("echo", 100, 0.2):
                            responder.result(inv.id, inv.args + "!")

                thread = threading.Thread(target=respond, daemon=True)
                thread.start()

                def server_only(i: int) -> None:
                    assert client.execute("echo", f"e{i}") == f"e{i}!"

                rows["server only"] = percentiles(timed(server_only, args.requests, args.warmup))
                stop.set()
                thread.join(5)
        finally:
            stop_cluster(cluster)
    for name, row in rows.items():
        print(f"{name:12s} p50 {row['p50_ms']:7.3f} ms  p90 {row['p90_ms']:7.3f} ms  p99 {row['p99_ms']:7.3f} ms  "
              f"max {row['max_ms']:8.3f} ms  (n={row['n']})", flush=True)
        if args.json:
            with open(args.json, "a", encoding="utf-8") as out:
                out.write(json.dumps({"bench": "drpc_roundtrip", "path": name, "workers": args.workers, **row})
                          + "\n")


if __name__ == "__main__":
    main()
