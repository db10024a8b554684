"""The in-process word count with acking in a LocalCluster beside the hand-written executor, started together.

    python bench/paired_inproc.py --python VENV/bin/python [--rounds 4]

Each round starts two processes at once: the hand-written single-process executor with XOR acks
(``bench/peers/inproc.py``, run by this interpreter) and ``storm_perf.py``'s word count with one acker in a
LocalCluster run by ``--python`` (an install of storm_py to measure, e.g. a fresh venv's ``pip install .``).
Started together they see the same load, so their ratio holds on a shared machine where runs one after another
do not.  Each prints sentences/s and CPU us per sentence (``time.process_time``) over the same window.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent


def one(case: str, secs: float, warmup: float) -> dict[str, Any]:
    """One side of a pair, in this process: ``executor_xor`` or ``localcluster``."""
    sys.path += [str(BENCH), str(BENCH / "peers")]
    if case == "executor_xor":
        from inproc import Executor

        ex = Executor(acking=True)
        ex.run_for(warmup)
        a0, t0, c0 = ex.acked, time.perf_counter(), time.process_time()
        ex.run_for(secs)
        a1, t1, c1 = ex.acked, time.perf_counter(), time.process_time()
        build = "-"
    else:
        import storm_perf

        from storm_py import LocalCluster
        from storm_py import build as storm_build

        conf = {"topology.acker.executors": 1, "topology.max.spout.pending": 2000, "topology.workers": 1}
        with LocalCluster(supervisors=1, ports_per_supervisor=1) as cluster:
            tid = cluster.submit_topology("perf", conf, storm_perf.word_count())
            (worker,) = cluster.workers(tid)
            spout = next(ex for ex in worker.runtime.executors if ex.is_spout)
            time.sleep(warmup)
            a0, t0, c0 = spout.stats.acked, time.perf_counter(), time.process_time()
            time.sleep(secs)
            a1, t1, c1 = spout.stats.acked, time.perf_counter(), time.process_time()
            cluster.kill_topology("perf", 0)
        build = storm_build.describe()
    n = max(a1 - a0, 1)
    return {"case": case, "build": build, "sentences_per_s": round(n / (t1 - t0)),
            "cpu_us_per_sentence": round((c1 - c0) / n * 1e6, 2), "loadavg_1": round(os.getloadavg()[0], 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", help="the interpreter whose storm_py runs the LocalCluster side")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--secs", type=float, default=8.0)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--one", choices=["executor_xor", "localcluster"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.secs, args.warmup)), flush=True)
        return
    if not args.python:
        ap.error("--python is required")
    me = [str(Path(__file__).resolve()), "--secs", str(args.secs), "--warmup", str(args.warmup), "--one"]
    for rnd in range(1, args.rounds + 1):
        # from a neutral directory, so the LocalCluster side imports the install's storm_py, not a source tree
        procs = [subprocess.Popen([py, *me, case], stdout=subprocess.PIPE, text=True, cwd=tempfile.gettempdir())
                 for py, case in ((sys.executable, "executor_xor"), (args.python, "localcluster"))]
        executor, cluster = (json.loads(p.communicate()[0].strip().splitlines()[-1]) for p in procs)
        print(json.dumps({"round": rnd, "executor": executor, "localcluster": cluster,
                          "rate_ratio": round(cluster["sentences_per_s"] / executor["sentences_per_s"], 2),
                          "cpu_ratio": round(executor["cpu_us_per_sentence"] / cluster["cpu_us_per_sentence"], 2)}),
              flush=True)


if __name__ == "__main__":
    main()
