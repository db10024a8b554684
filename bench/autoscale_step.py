"""The autoscaler against a rate step, beside a fixed topology sized for the peak, on one dev cluster.

    python bench/autoscale_step.py [--low-secs 20] [--high-secs 60] [--after-secs 60] [--low 200] [--high 2000]
                                   [--peak-executors 7] [--period 3] [--cooldown 12] [--wait 3] [--json out.jsonl]

Starts the dev broker and ``storm-py dev-cluster`` (ZooKeeper, nimbus, two supervisors of four slots), then runs the
autoscaler's test topology (``tests/autoscale/apps/scaleapp``: a KafkaSpout and a bolt ``work`` waiting 2 ms per
record over 8 tasks, ``--workers`` workers, by default one a slot) twice, each on a new topic: *autoscaled* (one
executor at first, ``topology.autoscale.*`` with the given period, cooldown and rebalance wait) and *fixed*
(``--peak-executors`` executors, no autoscaler).  Each run produces ``--low`` records/s for ``--low-secs``,
``--high`` for ``--high-secs``, then ``--low`` again for ``--after-secs``, sampling every half second the spout's
lag, the bolt's executors and the slots the topology holds.  Per run it prints: the seconds from the step up to the
lag being stable (under ``--stable-lag`` for the next ``--stable-secs``), the peak lag, the most and the last
executors, the seconds from the step down until the executors reached their last count, the executor-seconds used
from the step up to the end (the resource the autoscaler saves), the slots held, and whether every record was
processed exactly once.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.append(str(HERE.parent))  # after PYTHONPATH: a compiled build there wins

import cluster_perf as cp  # noqa: E402  (bench/ is the script's own directory)

from storm_py.clock import SYSTEM_CLOCK, wait_until  # noqa: E402
from storm_py.dev.kafka import KafkaBrokerProcess  # noqa: E402
from storm_py.kafka.client import KafkaAdmin  # noqa: E402
from tests.autoscale.harness import APP, BUFFER, PARTITIONS, PATIENT, WORKERS, PacedProducer  # noqa: E402
from tests.cluster.harness import DevClusterProcess, build_wheel  # noqa: E402

#: seconds between two samples
SAMPLE_SECS = 0.5


def sample(cluster: DevClusterProcess, name: str) -> dict[str, Any]:
    """The run's figures now: lag, the bolt's executors, the slots the topology holds."""
    client = cluster.client()
    view = client.request("GET", f"/topology/{name}/autoscale")
    row = next((r for r in client.topology_summaries() if r["name"] == name), {})
    lag = client.topology_lag(name).get("kafka", {}).get("totalLag")
    return {"t": SYSTEM_CLOCK.now(), "lag": lag, "executors": view["bolts"]["work"]["executors"],
            "slots": row.get("workersTotal", 0)}


def sample_for(cluster: DevClusterProcess, name: str, secs: float, rows: list[dict[str, Any]]) -> None:
    end = SYSTEM_CLOCK.now() + secs
    while SYSTEM_CLOCK.now() < end:
        rows.append(sample(cluster, name))
        SYSTEM_CLOCK.sleep(max(0.0, min(SAMPLE_SECS, end - SYSTEM_CLOCK.now())))


def stable_after(rows: list[dict[str, Any]], start: float, threshold: int, hold: float) -> float | None:
    """Seconds from ``start`` to the first sample after which the lag stays under ``threshold`` for ``hold``."""
    after = [r for r in rows if r["t"] >= start and r["lag"] is not None]
    for i, r in enumerate(after):
        window = [x for x in after[i:] if x["t"] <= r["t"] + hold]
        if window[-1]["t"] - r["t"] >= hold - SAMPLE_SECS and all(x["lag"] < threshold for x in window):
            return round(r["t"] - start, 1)
    return None


def executor_seconds(rows: list[dict[str, Any]], start: float) -> float:
    after = [r for r in rows if r["t"] >= start]
    return round(sum(a["executors"] * (b["t"] - a["t"]) for a, b in itertools.pairwise(after)), 1)


def processed(out_dir: Path) -> Counter[str]:
    seen: Counter[str] = Counter()
    for path in out_dir.glob("*.txt"):
        seen.update(line for line in path.read_text(encoding="utf-8").splitlines() if line)
    return seen


def run(args: argparse.Namespace, cluster: DevClusterProcess, wheel: Path, bootstrap: str, mode: str,
        work: Path) -> dict[str, Any]:
    name = f"step-{mode}"
    topic = f"step-{uuid.uuid4().hex[:8]}"
    KafkaAdmin(bootstrap).create_topic(topic, PARTITIONS)
    out_dir = work / name
    conf: dict[str, Any] = {
        "scaleapp.bootstrap": bootstrap, "scaleapp.topic": topic, "scaleapp.group": f"g-{uuid.uuid4().hex[:8]}",
        "scaleapp.out.dir": str(out_dir), "scaleapp.cost.ms": 2, "scaleapp.tasks": 8, "topology.workers": args.workers,
        "topology.max.spout.pending": 1000, "topology.executor.receive.buffer.size": BUFFER,
        "topology.message.timeout.secs": 30,
    }
    if mode == "autoscaled":
        conf.update({"topology.autoscale.enabled": "true", "topology.autoscale.period.secs": args.period,
                     "topology.autoscale.cooldown.secs": args.cooldown,
                     "topology.autoscale.rebalance.wait.secs": args.wait})
    else:
        conf["scaleapp.executors"] = args.peak_executors
    cluster.cli("submit", str(wheel), "scaleapp.topology:build", "--name", name,
                *(a for k, v in conf.items() for a in ("-c", f"{k}={v}")))
    client = cluster.client()
    wait_until(lambda: bool(client.topology(name)["workers"]), 180, interval=0.25, what=f"{name}'s worker")
    producer = PacedProducer(bootstrap, topic)
    rows: list[dict[str, Any]] = []
    producer.start(args.low)
    try:
        sample_for(cluster, name, args.low_secs, rows)
        producer.rate = args.high
        up = SYSTEM_CLOCK.now()
        sample_for(cluster, name, args.high_secs, rows)
        producer.rate = args.low
        down = SYSTEM_CLOCK.now()
        sample_for(cluster, name, args.after_secs, rows)
    finally:
        sent = producer.stop()
    wait_until(lambda: sum(processed(out_dir).values()) >= sent, 300, interval=0.5, what=f"{name}'s records")
    seen = processed(out_dir)
    cluster.cli("kill", name, "-w", "0")
    last = rows[-1]["executors"]
    settled = next((r["t"] for r in reversed(rows) if r["t"] >= down and r["executors"] != last), down)
    return {
        "mode": mode,
        "secs_step_to_lag_stable": stable_after(rows, up, args.stable_lag, args.stable_secs),
        "peak_lag": max((r["lag"] or 0) for r in rows),
        "max_executors": max(r["executors"] for r in rows),
        "last_executors": last,
        "secs_step_down_to_last_executors": round(max(0.0, settled - down), 1),
        "executor_secs_from_step": executor_seconds(rows, up),
        "slots": max(r["slots"] for r in rows),
        "records": sent,
        "exactly_once": len(seen) == sent and sum(seen.values()) == sent,
    }


def main() -> None:
    options: list[tuple[str, Any, Any, str]] = [
        ("--low", float, 200.0, "records/s before and after the step"),
        ("--high", float, 2000.0, "records/s of the step"),
        ("--low-secs", float, 20.0, "seconds at the low rate first"),
        ("--high-secs", float, 60.0, "seconds at the high rate"),
        ("--after-secs", float, 60.0, "seconds at the low rate after"),
        ("--workers", int, WORKERS, "topology.workers (a worker runs its executors on one thread)"),
        ("--peak-executors", int, 7, "the fixed topology's executors (2,000/s x 2 ms / 0.7 = 6: sized with room)"),
        ("--period", float, 3.0, "topology.autoscale.period.secs"),
        ("--cooldown", float, 12.0, "topology.autoscale.cooldown.secs"),
        ("--wait", float, 3.0, "topology.autoscale.rebalance.wait.secs"),
        ("--stable-lag", int, 1000, "the lag under which it is stable"),
        ("--stable-secs", float, 10.0, "how long it must stay under it"),
        ("--modes", str, "autoscaled,fixed", "the runs, in order"),
        ("--json", Path, None, "append each run as a JSON line to this file"),
    ]
    args = cp.parse_options(__doc__, options)
    print(json.dumps({"settings": {k: str(v) for k, v in vars(args).items()},
                      "loadavg": [round(x, 2) for x in os.getloadavg()]}), flush=True)
    with tempfile.TemporaryDirectory(prefix="autoscale-step-") as tmp:
        work = Path(tmp)
        wheel = build_wheel(APP, work / "wheel")
        broker = KafkaBrokerProcess(log_path=work / "broker.log", die_with_parent=True)
        broker.start()
        cluster = DevClusterProcess(work / "cluster", supervisors=2, conf=PATIENT)
        try:
            cluster.start()
            for mode in args.modes.split(","):
                row = run(args, cluster, wheel, broker.bootstrap_servers, mode, work)
                row["loadavg_1_5_15"] = [round(x, 2) for x in os.getloadavg()]
                print(json.dumps(row), flush=True)
                if args.json:
                    with args.json.open("a", encoding="utf-8") as f:
                        f.write(json.dumps(row) + "\n")
        finally:
            cluster.stop()
            broker.stop()


if __name__ == "__main__":
    main()
