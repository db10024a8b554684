"""What profiling a worker costs it: the word count's throughput before, during and after a CPU profile or a memory
snapshot of one of its workers, taken through nimbus's profiling routes as ``storm-py profile`` takes them.

    python bench/profile_cost.py [--rounds 3] [--secs 15] [--warmup 15] [--tools py-spy,in-process]

Starts ``storm-py dev-cluster`` (ZooKeeper, nimbus, two supervisors) per tool, submits storm-perf's word count
across two workers with one acker each (``bench/cluster_topologies.py``), picks the worker of the first spout
executor, and then, ``--rounds`` times, for each action: a window of ``--secs`` before, the action started on that
worker (a CPU profile of ``--secs``; a memory snapshot, whose tracemalloc window the cluster's
``worker.profiler.memory.trace.secs`` sets to ``--secs``), a window inside the profile's time, the result awaited,
and a window of ``--secs`` after.  Each window gives the spouts' acked sentences a second, the profiled worker's
own spout's, the workers' CPU per sentence and the cluster's share of the cores (py-spy, a child of the
supervisor, is in it).  A round's ratios are during / before and after / before of the same worker, so they do
not depend on how fast the machine is that minute; after / before shows how much a window moves by itself.

``--tools``: ``py-spy`` is the supervisor running ``py-spy record``; ``in-process`` sets ``worker.profiler.command``
to empty, so that the worker samples its own threads.  The memory snapshot is always in process and runs on the
first tool's cluster only.  Counts reach nimbus with the workers' heartbeats, so every window's ends are read at a
heartbeat.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import cluster_perf as cp  # noqa: E402  (bench/ is the script's own directory)

#: Seconds after an action's start before its window opens: the worker looks for requests every second
#: (``worker.profiler.poll.secs``) and py-spy attaches in well under one.
LEAD_SECS = 1.5
#: Seconds before an action's end at which its window closes (a heartbeat read lands within about one).
TAIL_SECS = 1.0
TOOLS = {"py-spy": "py-spy", "in-process": ""}


@dataclass(frozen=True)
class Mark:
    """The counts at one heartbeat: when, the spouts' acked total, the profiled worker's, CPU seconds so far."""

    at: float
    acked: int
    worker_acked: int
    cluster_cpu: float
    workers_cpu: float
    machine_busy: float
    machine_total: float


def spout_rows(client: Any, tid: str) -> list[dict[str, Any]]:
    """The spout's executor rows (``host``, ``port``, ``acked``)."""
    page = client.request("GET", f"/topology/{quote(tid, safe='')}/component/spout")
    return list(page.get("executorStats", []))


def counts(client: Any, tid: str, where: str) -> tuple[int, int]:
    """The spouts' acked total and the acked count of those on worker ``where`` (``host:port``)."""
    rows = spout_rows(client, tid)
    total = sum(int(r.get("acked", 0)) for r in rows)
    mine = sum(int(r.get("acked", 0)) for r in rows if f"{r.get('host')}:{r.get('port')}" == where)
    return total, mine


def mark(client: Any, tid: str, where: str, session: int) -> Mark:
    """The counts read just after they changed (a heartbeat arrived)."""
    first = counts(client, tid, where)
    now = first
    deadline = time.monotonic() + 5
    while now[0] == first[0] and time.monotonic() < deadline:
        time.sleep(0.05)
        now = counts(client, tid, where)
    cluster, workers = cp.cluster_cpu(session)
    busy, total = cp.machine_cpu()
    return Mark(time.monotonic(), now[0], now[1], cluster, workers, busy, total)


def window(a: Mark, b: Mark) -> dict[str, Any]:
    """The figures of the window from ``a`` to ``b``."""
    secs, acked, cores = b.at - a.at, b.acked - a.acked, b.machine_total - a.machine_total
    return {
        "secs": round(secs, 2),
        "acked_per_s": round(acked / secs) if secs else None,
        "worker_acked_per_s": round((b.worker_acked - a.worker_acked) / secs) if secs else None,
        "worker_cpu_us_per_sentence": round((b.workers_cpu - a.workers_cpu) / acked * 1e6, 2) if acked else None,
        "cluster_cpu_pct": round(100 * (b.cluster_cpu - a.cluster_cpu) / cores, 1) if cores else None,
        "machine_busy_pct": round(100 * (b.machine_busy - a.machine_busy) / cores, 1) if cores else None,
    }


def sleep_until(t: float) -> None:
    time.sleep(max(0.0, t - time.monotonic()))


def one_round(client: Any, tid: str, where: str, session: int, action: str, secs: float) -> dict[str, Any]:
    """Before, during and after one ``action`` on worker ``where``: the windows and their ratios."""
    from storm_py.cli.profile import RESULT_GRACE_SECS, start_action, wait_result

    b0 = mark(client, tid, where, session)
    sleep_until(b0.at + secs)
    b1 = mark(client, tid, where, session)
    started = time.monotonic()
    reply = start_action(client, tid, where, action, int(secs))
    length = float(reply.get("seconds") or secs)
    sleep_until(started + LEAD_SECS)
    d0 = mark(client, tid, where, session)
    sleep_until(started + length - TAIL_SECS)
    d1 = mark(client, tid, where, session)
    result = wait_result(client, tid, where, str(reply["file"]), length + RESULT_GRACE_SECS)
    listed = time.monotonic() - started
    a0 = mark(client, tid, where, session)
    sleep_until(a0.at + secs)
    a1 = mark(client, tid, where, session)
    before, during, after = window(b0, b1), window(d0, d1), window(a0, a1)
    row: dict[str, Any] = {
        "action": action, "tool": reply["tool"], "worker": where, "profile_secs": length,
        "result_listed_after_s": round(listed, 1), "result_bytes": result.get("size"),
        "before": before, "during": during, "after": after,
    }
    for key in ("acked_per_s", "worker_acked_per_s"):
        if before[key]:
            row[f"during_over_before_{key}"] = round(during[key] / before[key], 3)
            row[f"after_over_before_{key}"] = round(after[key] / before[key], 3)
    row["loadavg_1_5_15"] = [round(x, 2) for x in os.getloadavg()]
    return row


def profiled_worker(client: Any, tid: str) -> str:
    """``host:port`` of the first spout executor's worker, once every spout executor has reported."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        rows = [r for r in spout_rows(client, tid) if r.get("host") and r.get("port")]
        if len(rows) >= 2:
            return f"{rows[0]['host']}:{rows[0]['port']}"
        time.sleep(0.5)
    raise RuntimeError("the spout's executors did not report in 120 s")


def run_tool(args: Any, tool: str, actions: list[str], tmp: Path) -> list[dict[str, Any]]:
    """Every round of ``actions`` on one dev cluster whose supervisors profile with ``tool``."""
    base = tmp / f"base-{tool}.yaml"
    base.write_text(json.dumps({"worker.profiler.command": TOOLS[tool],
                                "worker.profiler.memory.trace.secs": int(args.secs)}), encoding="utf-8")
    workdir = tmp / f"cluster-{tool}"
    proc = cp.start_cluster(workdir, base)
    session = os.getsid(proc.pid)
    rows: list[dict[str, Any]] = []
    try:
        conf_path = workdir / "storm.yaml"
        name = "profiled-word-count"
        client = cp.submit_case(conf_path, "cluster_topologies:word_count", name, args.workers, args.ackers,
                                args.pending)
        tid = client.topology_id(name)
        where = profiled_worker(client, tid)
        time.sleep(args.warmup)
        for round_no in range(args.rounds):
            for action in actions:
                row = {"round": round_no, **one_round(client, tid, where, session, action, args.secs)}
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        cp.stop_cluster(proc)
    return rows


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per action and tool: each ratio's median and range over the rounds."""
    out = []
    for action, tool in dict.fromkeys((r["action"], r["tool"]) for r in rows):
        mine = [r for r in rows if (r["action"], r["tool"]) == (action, tool)]
        line: dict[str, Any] = {"summary": "profile cost", "action": action, "tool": tool, "rounds": len(mine)}
        for key in ("during_over_before_acked_per_s", "during_over_before_worker_acked_per_s",
                    "after_over_before_acked_per_s"):
            values = [r[key] for r in mine if key in r]
            if values:
                line[key] = {"median": round(statistics.median(values), 3), "min": min(values), "max": max(values)}
        out.append(line)
    return out


def main() -> None:
    args = cp.parse_options(__doc__, [
        ("--workers", int, 2, "workers of the word count"),
        ("--ackers", int, 1, "ackers per worker"),
        ("--pending", int, 2000, "topology.max.spout.pending"),
        ("--secs", float, 15.0, "each window's length, the CPU profile's and the memory snapshot's tracing time"),
        ("--warmup", float, 15.0, "seconds the topology runs before the first round"),
        ("--rounds", int, 3, "rounds of every action"),
        ("--tools", str, "py-spy,in-process", "who takes the CPU profile: py-spy, in-process, or both"),
        ("--actions", str, "cpu,memory", "actions to measure: cpu, memory"),
        ("--json", Path, None, "append every row to this file (JSON lines)"),
    ])
    tools = [t for t in args.tools.split(",") if t]
    actions = [a for a in args.actions.split(",") if a]
    for t in tools:
        if t not in TOOLS:
            sys.exit(f"--tools: unknown tool {t!r} (py-spy, in-process)")
    for a in actions:
        if a not in ("cpu", "memory"):
            sys.exit(f"--actions: unknown action {a!r} (cpu, memory)")
    print(json.dumps({"settings": {**cp.settings(args), "rounds": args.rounds, "tools": tools,
                                   "actions": actions}}), flush=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="storm-py-bench-") as tmp:
        for i, tool in enumerate(tools):
            todo = [a for a in actions if a == "cpu" or i == 0]
            rows.extend(run_tool(args, tool, todo, Path(tmp)))
    lines = summary(rows)
    for line in lines:
        print(json.dumps(line), flush=True)
    if args.json:
        cp.append_rows(args.json, [*rows, *lines])


if __name__ == "__main__":
    main()
