"""The word-count peers and storm_py in one run, alternating, so every figure has its baselines beside it.

    python bench/peers/run_all.py --setup          # once: Bytewax 0.21.1 in build/peers-venv
    python bench/peers/run_all.py [--rounds 2] [--builds pure,compiled] [--secs 15] [--warmup 8]

Each round runs, in this order: storm_py across two worker processes (``bench/cluster_perf.py --cases
word_count --ackers 0,1``) for each build; the hand-written pyzmq pipeline with XOR acking and without
(``zmq_pipeline.py``); Bytewax's running word count on one worker and on two processes (``bytewax_wc.py``);
storm_py in process (``bench/storm_perf.py --cases word_count``, a LocalCluster) for each build; the
hand-written single-process executor with and without XOR acks and the plain loop (``inproc.py``).

``--builds compiled`` runs storm_py from a wheel compiled with mypyc (``STORM_PY_COMPILE=1``), unpacked into
build/bench-compiled-site and put first on PYTHONPATH (made when missing or older than the sources; ``--rebuild``
forces it).  Every row is printed as JSON with the load average at its time; the summary table follows.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PEERS_VENV = REPO / "build" / "peers-venv"
COMPILED_SITE = REPO / "build" / "bench-compiled-site"
PY = sys.executable


def setup() -> None:
    if not (PEERS_VENV / "bin" / "python").exists():
        subprocess.run([PY, "-m", "venv", str(PEERS_VENV)], check=True)
    subprocess.run([str(PEERS_VENV / "bin" / "python"), "-m", "pip", "install", "-q", "bytewax==0.21.1"], check=True)


def compiled_site(rebuild: bool) -> Path:
    """A compiled build of the working tree, unpacked where PYTHONPATH can put it first."""
    newest = max(p.stat().st_mtime for p in (REPO / "storm_py").rglob("*.py"))
    stamp = COMPILED_SITE / "storm_py" / "compiled.json"
    if rebuild or not stamp.exists() or stamp.stat().st_mtime < newest:
        wheels = REPO / "build" / "bench-compiled-wheel"
        subprocess.run(["rm", "-rf", str(wheels), str(COMPILED_SITE)], check=True)
        subprocess.run([PY, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(wheels),
                        str(REPO)], check=True, env={**os.environ, "STORM_PY_COMPILE": "1"}, cwd=REPO)
        (wheel,) = wheels.glob("storm_py-*.whl")
        subprocess.run([PY, "-m", "pip", "install", "-q", "--no-deps", "--target", str(COMPILED_SITE), str(wheel)],
                       check=True)
    return COMPILED_SITE


def _env(build: str, site: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if build == "compiled":
        assert site is not None
        env["PYTHONPATH"] = str(site)
    return env


def _lines(cmd: list[str], env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Run a benchmark command from a neutral directory and collect the JSON objects it prints."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tempfile.gettempdir(), check=False)
    rows = []
    for line in proc.stdout.splitlines():
        text = line.removeprefix("RESULT ").strip()
        if text.startswith("{"):
            try:
                rows.append(json.loads(text))
            except json.JSONDecodeError:
                continue
    if proc.returncode != 0:
        rows.append({"error": f"{' '.join(cmd[1:3])} exited with {proc.returncode}", "stderr": proc.stderr[-2000:]})
    return rows


def emit(rows: list[dict[str, Any]], system: str, all_rows: list[dict[str, Any]], rnd: int) -> None:
    for row in rows:
        row = {"round": rnd, "system": system, **row}
        all_rows.append(row)
        print(json.dumps(row), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--setup", action="store_true", help="install the peers (Bytewax) and exit")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--builds", default="pure,compiled")
    ap.add_argument("--rebuild", action="store_true", help="rebuild the compiled build")
    ap.add_argument("--secs", type=float, default=15.0, help="storm_py cluster measuring window")
    ap.add_argument("--warmup", type=float, default=8.0)
    ap.add_argument("--inproc-secs", type=float, default=8.0)
    ap.add_argument("--zmq-n", type=int, default=1_000_000, help="sentences of the pyzmq pipeline with acking")
    ap.add_argument("--zmq-n-noack", type=int, default=4_000_000)
    ap.add_argument("--bytewax-n", type=int, default=1_000_000)
    ap.add_argument("--skip", default="", help="comma-separated: cluster, zmq, bytewax, inproc")
    args = ap.parse_args()
    if args.setup:
        setup()
        return
    builds = [b for b in args.builds.split(",") if b]
    site = compiled_site(args.rebuild) if "compiled" in builds else None
    skip = set(args.skip.split(","))
    commit = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"], capture_output=True,
                            text=True, check=False).stdout.strip()
    print(json.dumps({"settings": {"command": " ".join(sys.argv), "commit": commit, "builds": builds,
                                   "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()],
                                   "cpus": os.cpu_count()}}), flush=True)
    rows: list[dict[str, Any]] = []
    bench = REPO / "bench"
    for rnd in range(1, args.rounds + 1):
        if "cluster" not in skip:
            for build in builds:
                emit(_lines([PY, str(bench / "cluster_perf.py"), "--cases", "word_count", "--ackers", "0,1",
                             "--secs", str(args.secs), "--warmup", str(args.warmup), "--no-ceiling"],
                            _env(build, site)), f"storm_py cluster ({build})", rows, rnd)
        if "zmq" not in skip:
            emit(_lines([PY, str(HERE / "zmq_pipeline.py"), "--ack", "xor", "--n", str(args.zmq_n)]),
                 "pyzmq pipeline", rows, rnd)
            emit(_lines([PY, str(HERE / "zmq_pipeline.py"), "--ack", "none", "--n", str(args.zmq_n_noack)]),
                 "pyzmq pipeline", rows, rnd)
        if "bytewax" not in skip:
            bw = PEERS_VENV / "bin" / "python"
            for processes in (1, 2):
                if bw.exists():
                    emit(_lines([str(bw), str(HERE / "bytewax_wc.py"), "--processes", str(processes),
                                 "--n", str(args.bytewax_n)]), "bytewax", rows, rnd)
                else:
                    emit([{"error": "Bytewax not installed: run with --setup"}], "bytewax", rows, rnd)
        if "inproc" not in skip:
            for build in builds:
                emit(_lines([PY, str(bench / "storm_perf.py"), "--cases", "word_count", "--secs",
                             str(args.inproc_secs), "--warmup", "2"], _env(build, site)),
                     f"storm_py LocalCluster ({build})", rows, rnd)
            emit(_lines([PY, str(HERE / "inproc.py"), "--secs", str(args.inproc_secs), "--warmup", "2"]),
                 "hand-written, one process", rows, rnd)
    print("\n| round | system | case | sentences/s | CPU us/sentence | load avg (1 min) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        if not ("topology" in r or "peer" in r or "error" in r):
            continue  # a command's settings line
        case = r.get("peer") or (f"{r.get('topology', '')} ackers={r.get('ackers_per_worker', r.get('ackers'))}"
                                 if "topology" in r else r.get("error", ""))
        rate = r.get("sentences_per_s") or r.get("acked_per_s") or "-"
        cpu = r.get("cpu_us_per_sentence") or r.get("worker_cpu_us_per_tuple") or "-"
        load = (r.get("loadavg_1_5_15") or ["-"])[0]
        print(f"| {r['round']} | {r['system']} | {case} | {rate:,} | {cpu} | {load} |" if isinstance(rate, int)
              else f"| {r['round']} | {r['system']} | {case} | {rate} | {cpu} | {load} |")


if __name__ == "__main__":
    main()
