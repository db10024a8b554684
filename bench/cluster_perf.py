"""storm-perf's topologies across worker processes of a real cluster, beside the pyzmq+msgpack ceiling.

    python bench/cluster_perf.py [--workers 2] [--secs 15] [--warmup 8] [--json results.jsonl]

Starts ``storm-py dev-cluster`` (ZooKeeper, nimbus, two supervisors) in a temporary directory, submits each
topology of ``bench/cluster_topologies.py`` with 0 and 1 acker per worker, reads the spouts' acked counts and
complete latencies from nimbus's REST API after a warm-up, and runs ``bench/zmq_ceiling.py`` (two processes,
batches of 100) in the same run.  Every result is also given as a ratio of that ceiling.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
STORM = [sys.executable, "-m", "storm_py"]


def start_cluster(workdir: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [*STORM, "dev-cluster", "--workdir", str(workdir), "--supervisors", "2", "--ports-per-supervisor", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"dev-cluster exited with {proc.poll()}")
        if line.startswith("nimbus:"):
            return proc
    raise RuntimeError("dev-cluster did not come up in 120 s")


def stop_cluster(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(proc.pid, signal.SIGKILL)


def spout_totals(client: Any, name: str) -> tuple[int, float, float, int, int]:
    """Acked count, mean and p99 complete latency of the spouts, and frames and tuples the workers sent."""
    page = client.topology(name)
    spouts = page["spouts"]
    acked = sum(int(s.get("acked", 0)) for s in spouts)
    lat = [float(s.get("completeLatency", 0.0)) for s in spouts if s.get("acked")]
    p99 = [float(s.get("completeLatencyP99", 0.0)) for s in spouts if s.get("acked")]
    frames = sum(int(w.get("transfer", {}).get("frames_sent", 0)) for w in page.get("workers", []))
    sent = sum(int(w.get("transfer", {}).get("tuples_sent", 0)) for w in page.get("workers", []))
    return acked, (sum(lat) / len(lat)) if lat else 0.0, max(p99) if p99 else 0.0, frames, sent


def run_case(
    conf_path: Path, entry: str, workers: int, ackers: int, secs: float, warmup: float, pending: int
) -> dict[str, Any]:
    from storm_py.client import NimbusClient
    from storm_py.config import read_storm_config

    name = f"{entry.split(':')[1].replace('_', '-')}-a{ackers}"
    subprocess.run(
        [*STORM, "submit", str(HERE), f"cluster_topologies:{entry.split(':')[1]}", "--name", name,
         "--config", str(conf_path), "-c", f"topology.workers={workers}",
         "-c", f"topology.acker.executors={ackers * workers}", "-c", f"topology.max.spout.pending={pending}"],
        check=True, capture_output=True, text=True,
    )
    client = NimbusClient(read_storm_config(conf_path))
    time.sleep(warmup)
    a0, _, _, f0, s0 = spout_totals(client, name)
    t0 = time.monotonic()
    time.sleep(secs)
    a1, lat, p99, f1, s1 = spout_totals(client, name)
    t1 = time.monotonic()
    subprocess.run([*STORM, "kill", name, "-w", "0", "--config", str(conf_path)], check=True, capture_output=True)
    row: dict[str, Any] = {"acked_per_s": round((a1 - a0) / (t1 - t0))}
    row["items_per_frame"] = round((s1 - s0) / (f1 - f0), 1) if f1 > f0 else None
    if ackers:
        row["latency_mean_ms"] = round(lat, 2)
        row["latency_p99_ms"] = round(p99, 2)
    return row


def zmq_ceiling() -> float:
    """Median tuples/s of bare pyzmq+msgpack between two processes, batches of 100 (``bench/zmq_ceiling.py``)."""
    out = subprocess.run([sys.executable, str(HERE / "zmq_ceiling.py"), "--n", "1000000", "--stacks", "raw",
                          "--batches", "100"], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        for result in row.get("results", []):
            if result.get("stack") == "raw" and result.get("batch") == 100:
                return float(result["tuples_per_s_median"])
    raise RuntimeError("zmq_ceiling.py printed no result for raw batches of 100")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--secs", type=float, default=15.0)
    ap.add_argument("--warmup", type=float, default=8.0)
    ap.add_argument("--cases", default="const_null,const_id_null,word_count")
    ap.add_argument("--pending", type=int, default=2000, help="topology.max.spout.pending")
    ap.add_argument("--ackers", default="0,1", help="ackers per worker to run, comma-separated")
    ap.add_argument("--no-ceiling", action="store_true", help="skip the zmq ceiling run")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    ceiling = 0.0 if args.no_ceiling else zmq_ceiling()
    print(json.dumps({"zmq_msgpack_ceiling_tuples_per_s": round(ceiling)}), flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="storm-py-bench-") as tmp:
        proc = start_cluster(Path(tmp))
        try:
            for case in args.cases.split(","):
                for ackers in (int(a) for a in args.ackers.split(",")):
                    row = {"topology": case, "workers": args.workers, "ackers_per_worker": ackers,
                           **run_case(Path(tmp) / "storm.yaml", f"cluster_topologies:{case}", args.workers, ackers,
                                      args.secs, args.warmup, args.pending)}
                    row["ratio_of_ceiling"] = round(row["acked_per_s"] / ceiling, 4) if ceiling else None
                    rows.append(row)
                    print(json.dumps(row), flush=True)
        finally:
            stop_cluster(proc)
    if args.json:
        with args.json.open("a") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
