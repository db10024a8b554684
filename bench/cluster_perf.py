"""storm-perf's topologies across worker processes of a real cluster, beside the pyzmq+msgpack ceiling.

    python bench/cluster_perf.py [--workers 2] [--secs 15] [--warmup 8] [--json results.jsonl]
    python bench/cluster_perf.py --cases word_count --ackers 1 --encryption none,curve --rounds 3

Starts ``storm-py dev-cluster`` (ZooKeeper, nimbus, two supervisors) in a temporary directory, submits each
topology of ``bench/cluster_topologies.py`` with 0 and 1 acker per worker, reads the spouts' acked counts and
complete latencies from nimbus's REST API after a warm-up, and runs ``bench/zmq_ceiling.py`` (two processes,
batches of 100) in the same run.  Every result is also given as a ratio of that ceiling.

Throughput on this machine depends on how much of its two cores the workers get, so every row also says
what the machine did meanwhile: the load average, the share of all cores busy, the share the cluster's own
processes (workers, supervisors, nimbus, ZooKeeper) used and the share left to other processes, and the
workers' CPU time per acked tuple, which does not depend on the load.  The first line states the settings,
the build (pure Python or compiled), the commit and the machine.  Counts reach nimbus with the workers'
heartbeats (every ``worker.heartbeat.frequency.secs``), so both ends of the window are read at a heartbeat.

``--encryption none,curve`` runs every case on one cluster per ``storm.messaging.encryption`` setting, in turn,
``--rounds`` times (the settings alternate, so both see the same machine), and ends with one summary line per
case: each setting's median rate and median worker CPU per acked tuple, and how much each setting after the first
loses against it by either measure (``loss_pct``; issue 30's budget for CURVE against tags alone is 15 %).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
STORM = [sys.executable, "-m", "storm_py"]


def start_cluster(workdir: Path, base_conf: Path | None = None, supervisors: int = 2,
                  ports_per_supervisor: int | None = 2) -> subprocess.Popen[str]:
    """``storm-py dev-cluster`` in ``workdir``, returned once nimbus is up (``ports_per_supervisor`` None: the
    command's default)."""
    extra = ["--config", str(base_conf)] if base_conf is not None else []
    if ports_per_supervisor is not None:
        extra += ["--ports-per-supervisor", str(ports_per_supervisor)]
    proc = subprocess.Popen(
        [*STORM, "dev-cluster", "--workdir", str(workdir), "--supervisors", str(supervisors), *extra],
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


def _proc_stat(pid: str) -> tuple[int, float] | None:
    """(session id, CPU seconds) of a process, from /proc/<pid>/stat."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[3]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _is_worker(pid: str) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().split(b"\0")
    except OSError:
        return False
    return b"storm_py" in args and b"worker" in args


def worker_thread_cpu(session: int) -> dict[str, float]:
    """CPU seconds used so far by the threads of the cluster's live workers, summed by thread name (libzmq's
    I/O thread is ``ZMQbg/IO/0``; Python's threads keep the process's name), and their context switches so far
    (``<name> switches``: voluntary plus involuntary)."""
    out: dict[str, float] = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or not _is_worker(pid):
            continue
        stat = _proc_stat(pid)
        if stat is None or stat[0] != session:
            continue
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    head, rest = f.read().rsplit(")", 1)
            except OSError:
                continue
            name = head.split("(", 1)[1]
            fields = rest.split()
            out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            switches = f"{name} switches"
            out[switches] = out.get(switches, 0.0) + _switches(f"/proc/{pid}/task/{tid}/status")
    return out


def _switches(status_path: str) -> int:
    """Voluntary plus involuntary context switches of a thread so far (0 when it is gone)."""
    try:
        with open(status_path) as f:
            return sum(int(ln.split()[1]) for ln in f if ln.endswith("ctxt_switches\n") or "ctxt_switches:" in ln)
    except OSError:
        return 0


def cluster_cpu(session: int) -> tuple[float, float]:
    """CPU seconds used so far by the live processes of the cluster's session: (all of them, the workers)."""
    total = workers = 0.0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        stat = _proc_stat(pid)
        if stat is None or stat[0] != session:
            continue
        total += stat[1]
        if _is_worker(pid):
            workers += stat[1]
    return total, workers


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    tick = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]
    return (sum(fields[:8]) - idle) / tick, sum(fields[:8]) / tick


def parse_options(doc: str | None, options: list[tuple[str, Any, Any, str]]) -> argparse.Namespace:
    """A cluster bench's command line from ``(flag, type, default, help)`` rows, a ``--json`` among them (made
    absolute); then the working directory leaves the tree (``python -m storm_py`` must not import it ahead of
    PYTHONPATH)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag, kind, default, text in options:
        ap.add_argument(flag, type=kind, default=default, help=text)
    args = ap.parse_args()
    if args.json:
        args.json = args.json.resolve()
    os.chdir(tempfile.gettempdir())
    return args


def settings(args: argparse.Namespace) -> dict[str, Any]:
    """What a figure depends on: the command's settings, the build, the commit and the machine."""
    from storm_py.config import defaults

    version = subprocess.run([*STORM, "version"], capture_output=True, text=True, check=False).stdout
    commit = subprocess.run(["git", "-C", str(HERE), "describe", "--always", "--dirty"], capture_output=True,
                            text=True, check=False).stdout.strip()
    model = ""
    with open("/proc/cpuinfo") as f:
        model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    conf = defaults()
    return {
        "command": " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]),
        "workers": args.workers, "ackers_per_worker": args.ackers, "max_spout_pending": args.pending,
        "secs": args.secs, "warmup": args.warmup,
        "worker_gc_threshold0": conf.get("worker.gc.threshold0"),
        "heartbeat_secs": conf.get("worker.heartbeat.frequency.secs"),
        "build": version.splitlines()[0] if version else "?", "commit": commit,
        "machine": f"{os.cpu_count()} x {model}", "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()],
    }


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


def at_heartbeat(client: Any, name: str) -> tuple[tuple[int, float, float, int, int], float]:
    """The spouts' totals read just after they changed (a heartbeat arrived), and when."""
    first = spout_totals(client, name)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        time.sleep(0.05)
        now = spout_totals(client, name)
        if now[0] != first[0]:
            return now, time.monotonic()
    return first, time.monotonic()


def sleep_sampling(client: Any, name: str, secs: float, samples: list[int] | None) -> None:
    """Sleep ``secs``; given ``samples``, in steps of a second, appending the spouts' acked count after each."""
    if samples is None:
        time.sleep(secs)
        return
    end = time.monotonic() + secs
    while (left := end - time.monotonic()) > 0:
        time.sleep(min(1.0, left))
        samples.append(spout_totals(client, name)[0])


#: per-tuple scale of ``worker_thread_cpu`` figures by their name's last word: CPU in µs, context switches per
#: thousand tuples
_THREAD_SCALE = {"switches": 1e3}


def submit_case(conf_path: Path, entry: str, name: str, workers: int, ackers: int, pending: int,
                extra_conf: tuple[str, ...] = ()) -> Any:
    """Submit ``entry`` (``cluster_topologies:<function>``) as ``name`` with ``ackers`` per worker and ``extra_conf``
    ``KEY=VALUE`` settings; a ``NimbusClient`` of the cluster."""
    from storm_py.client import NimbusClient
    from storm_py.config import read_storm_config

    subprocess.run(
        [*STORM, "submit", str(HERE), f"cluster_topologies:{entry.split(':')[1]}", "--name", name,
         "--config", str(conf_path), "-c", f"topology.workers={workers}",
         "-c", f"topology.acker.executors={ackers * workers}", "-c", f"topology.max.spout.pending={pending}",
         *(arg for kv in extra_conf for arg in ("-c", kv))],
        check=True, capture_output=True, text=True,
    )
    return NimbusClient(read_storm_config(conf_path))


def run_case(
    conf_path: Path, entry: str, workers: int, ackers: int, secs: float, warmup: float, pending: int,
    session: int, name: str | None = None, extra_conf: tuple[str, ...] = (), samples: list[int] | None = None,
) -> dict[str, Any]:
    """Submit ``entry`` (``cluster_topologies:<function>``, with ``extra_conf`` ``KEY=VALUE`` settings), measure
    its spouts over ``secs`` after ``warmup`` (``samples``: the acked count every second, if given), kill it."""
    name = name or f"{entry.split(':')[1].replace('_', '-')}-a{ackers}"
    client = submit_case(conf_path, entry, name, workers, ackers, pending, extra_conf)
    sleep_sampling(client, name, warmup, samples)
    (a0, _, _, f0, s0), t0 = at_heartbeat(client, name)
    m0, c0, th0 = machine_cpu(), cluster_cpu(session), worker_thread_cpu(session)
    sleep_sampling(client, name, secs, samples)
    (a1, lat, p99, f1, s1), t1 = at_heartbeat(client, name)
    m1, c1, th1 = machine_cpu(), cluster_cpu(session), worker_thread_cpu(session)
    load = [round(x, 2) for x in os.getloadavg()]
    transfer = [w.get("transfer", {}) for w in client.topology(name).get("workers", [])]
    subprocess.run([*STORM, "kill", name, "-w", "0", "--config", str(conf_path)], check=True, capture_output=True)
    row: dict[str, Any] = {"acked_per_s": round((a1 - a0) / (t1 - t0))}
    row["items_per_frame"] = round((s1 - s0) / (f1 - f0), 1) if f1 > f0 else None
    if ackers:
        row["latency_mean_ms"] = round(lat, 2)
        row["latency_p99_ms"] = round(p99, 2)
    cores = m1[1] - m0[1]
    busy, ours, workers_cpu = m1[0] - m0[0], c1[0] - c0[0], c1[1] - c0[1]
    row["machine_busy_pct"] = round(100 * busy / cores, 1) if cores else None
    row["cluster_cpu_pct"] = round(100 * ours / cores, 1) if cores else None
    row["others_cpu_pct"] = round(100 * max(0.0, busy - ours) / cores, 1) if cores else None
    row["worker_cpu_us_per_tuple"] = round(workers_cpu / (a1 - a0) * 1e6, 2) if a1 > a0 else None
    if a1 > a0:  # switches: per thousand tuples
        row["worker_thread_cpu_us_per_tuple"] = {
            name: round((th1[name] - th0.get(name, 0.0)) / (a1 - a0) * _THREAD_SCALE.get(name.split()[-1], 1e6), 2)
            for name in sorted(th1)
        }
    # since the workers started: frames a peer's full queue refused (sent later by the pump), waits of the
    # receiving threads for the runtime to take in what it was handed
    row["transfer_totals"] = {k: sum(int(t.get(k, 0)) for t in transfer)
                              for k in ("send_blocked", "receive_waits", "overflow_max", "peers_refused")}
    row["loadavg_1_5_15"] = load
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


def append_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    """Append each row to ``path`` as a JSON line."""
    with path.open("a") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


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
    ap.add_argument("--encryption", default="", help="storm.messaging.encryption settings to compare, e.g. none,curve")
    ap.add_argument("--rounds", type=int, default=1, help="how many times each --encryption setting runs")
    args = ap.parse_args()
    if args.json:
        args.json = args.json.resolve()
    # run every command from outside the source tree: `python -m storm_py` would import the tree's modules
    # ahead of a compiled build given on PYTHONPATH
    os.chdir(tempfile.gettempdir())
    print(json.dumps({"settings": settings(args)}), flush=True)
    ceiling = 0.0 if args.no_ceiling else zmq_ceiling()
    print(json.dumps({"zmq_msgpack_ceiling_tuples_per_s": round(ceiling)}), flush=True)
    rows: list[dict[str, Any]] = []
    modes = [m for m in args.encryption.split(",") if m] or [None]
    with tempfile.TemporaryDirectory(prefix="storm-py-bench-") as tmp:
        for round_no in range(args.rounds):
            for mode in modes:
                base = None
                workdir = Path(tmp) / f"cluster-{round_no}-{mode or 'default'}"
                if mode is not None:
                    base = Path(tmp) / f"base-{mode}.yaml"
                    base.write_text(json.dumps({"storm.messaging.encryption": mode}), encoding="utf-8")
                rows.extend(run_cluster(args, workdir, base, ceiling, mode))
    if len(modes) > 1:
        for line in encryption_summary(rows, [str(m) for m in modes]):
            rows.append(line)
            print(json.dumps(line), flush=True)
    if args.json:
        append_rows(args.json, rows)


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


def encryption_summary(rows: list[dict[str, Any]], modes: list[str]) -> list[dict[str, Any]]:
    """Per case and acker count: each setting's median rate and worker CPU µs per tuple over the rounds, and the
    loss of each later setting against the first (rate lower, or CPU per tuple higher, in percent)."""
    out = []
    cases = dict.fromkeys((r["topology"], r["ackers_per_worker"]) for r in rows if "encryption" in r)
    for topology, ackers in cases:
        mine = [r for r in rows if (r.get("topology"), r.get("ackers_per_worker")) == (topology, ackers)]
        medians: dict[str, dict[str, Any]] = {}
        for mode in modes:
            of = [r for r in mine if r.get("encryption") == mode]
            medians[mode] = {
                "rounds": len(of),
                "acked_per_s": _median([r["acked_per_s"] for r in of]),
                "worker_cpu_us_per_tuple": _median([r["worker_cpu_us_per_tuple"] for r in of
                                                    if r.get("worker_cpu_us_per_tuple") is not None]),
            }  # fmt: skip
        base = medians[modes[0]]
        loss: dict[str, dict[str, float | None]] = {}
        for mode in modes[1:]:
            m = medians[mode]
            rate = (round(100 * (1 - m["acked_per_s"] / base["acked_per_s"]), 1)
                    if m["acked_per_s"] and base["acked_per_s"] else None)  # fmt: skip
            cpu = (round(100 * (m["worker_cpu_us_per_tuple"] / base["worker_cpu_us_per_tuple"] - 1), 1)
                   if m["worker_cpu_us_per_tuple"] and base["worker_cpu_us_per_tuple"] else None)  # fmt: skip
            loss[mode] = {"rate": rate, "cpu_per_tuple": cpu}
        out.append({"summary": "encryption", "topology": topology, "ackers_per_worker": ackers,
                    "against": modes[0], "medians": medians, "loss_pct": loss})  # fmt: skip
    return out


def run_cluster(args: argparse.Namespace, workdir: Path, base: Path | None, ceiling: float,
                mode: str | None) -> list[dict[str, Any]]:  # fmt: skip
    """Every case of ``args`` on one dev cluster (started with the base config ``base``)."""
    rows: list[dict[str, Any]] = []
    proc = start_cluster(workdir, base)
    session = os.getsid(proc.pid)
    try:
        for case in args.cases.split(","):
            for ackers in (int(a) for a in args.ackers.split(",")):
                row: dict[str, Any] = {"topology": case, "workers": args.workers, "ackers_per_worker": ackers}
                if mode is not None:
                    row["encryption"] = mode
                row.update(run_case(workdir / "storm.yaml", f"cluster_topologies:{case}", args.workers, ackers,
                                    args.secs, args.warmup, args.pending, session))  # fmt: skip
                row["ratio_of_ceiling"] = round(row["acked_per_s"] / ceiling, 4) if ceiling else None
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        stop_cluster(proc)
    return rows


if __name__ == "__main__":
    main()
