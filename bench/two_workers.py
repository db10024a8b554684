"""The cost of a topology across two workers, measured without processes or sockets.

    python bench/two_workers.py [--case word_count] [--ackers 1] [--secs 4]
    python bench/two_workers.py --instructions      # needs valgrind

Two :class:`~storm_py.runtime.worker_runtime.WorkerRuntime` objects run the cluster layout of
``bench/cluster_topologies.py`` (each component with one executor per worker) in one thread, and exchange
real frames: every batch for the other worker is encoded with ``encode_entries`` and decoded with
``FrameDecoder``, as between worker processes.  What is left out is ZeroMQ, the receiving thread and the
second core, so the result is the CPU cost per spout tuple of the runtime, the acker and the wire format.

``--instructions`` runs a fixed number of passes twice under ``valgrind --tool=cachegrind`` (on a simulated
clock that stands still, so that valgrind's slowness does not change how passes are cut) and reports the
instructions per acked spout tuple from the difference: unlike wall-clock time on a shared machine, that
number repeats to a tenth of a percent, so it can judge changes of a few percent.
"""

from __future__ import annotations

import argparse
import gc
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE.parent))  # after PYTHONPATH: a compiled build put there comes first

import cluster_topologies  # noqa: E402

from storm_py import build  # noqa: E402
from storm_py.clock import Clock, SimulatedClock  # noqa: E402
from storm_py.config import defaults  # noqa: E402
from storm_py.runtime.system_topology import layout_tasks, system_topology  # noqa: E402
from storm_py.runtime.transfer import Entries  # noqa: E402
from storm_py.runtime.transfer.frames import FrameDecoder, encode_entries  # noqa: E402
from storm_py.runtime.worker_runtime import WorkerRuntime  # noqa: E402

WORKERS = ("w0", "w1")


class TwoWorkers:
    """Two runtimes of one topology, driven in turn, their frames handed over in memory."""

    def __init__(self, case: str, ackers: int, pending: int, clock: Clock | None = None,
                 extra_conf: Mapping[str, Any] | None = None) -> None:
        conf = defaults()
        conf.update({
            "topology.workers": 2,
            "topology.acker.executors": 2 * ackers,
            "topology.max.spout.pending": pending,
            **(extra_conf or {}),
        })
        topology = system_topology(getattr(cluster_topologies, case)(conf), conf)
        layout = layout_tasks(topology)
        per: dict[str, list[tuple[str, tuple[int, int]]]] = {w: [] for w in WORKERS}
        seen: dict[str, int] = {}
        for cid, span in layout.all_executors():
            k = seen.get(cid, 0)
            seen[cid] = k + 1
            per[WORKERS[k % 2]].append((cid, span))
        task_to_worker = {t: w for w, ex in per.items() for _, (s, e) in ex for t in range(s, e + 1)}
        self.clock = clock or Clock()
        self.frames: dict[str, list[bytes]] = {w: [] for w in WORKERS}
        self.bytes_sent = 0
        self.runtimes = {
            w: WorkerRuntime(
                topology_id="bench", topology_name="bench", topology=topology, conf=conf, layout=layout,
                executors=per[w], task_to_worker=task_to_worker, worker_id=w, clock=self.clock,
                send_remote=self._sender(w), seed=i,
            )
            for i, w in enumerate(WORKERS)
        }
        self.decoders = {w: FrameDecoder(rt.task_to_component, rt.component_streams) for w, rt in self.runtimes.items()}
        self.spouts = [ex for rt in self.runtimes.values() for ex in rt.executors if ex.is_spout]
        for rt in self.runtimes.values():
            rt.prepare()
            rt.set_active(True)

    def _sender(self, src: str) -> Any:
        def send(peer: str, entries: Entries) -> None:
            encoded = encode_entries(src, entries)
            assert encoded.frame is not None and not encoded.rejected
            self.bytes_sent += len(encoded.frame)
            self.frames[peer].append(encoded.frame)

        return send

    def acked(self) -> int:
        return sum(ex.stats.acked for ex in self.spouts)

    def run_passes(self, passes: int) -> None:
        now = self.clock.now
        for _ in range(passes):
            for w, rt in self.runtimes.items():
                frames = self.frames[w]
                decode = self.decoders[w].decode
                for frame in frames:
                    rt.deliver(decode(frame)[1])
                frames.clear()
                rt.run_once(now())

    def shutdown(self) -> None:
        """Shut both runtimes down (closing what they opened, such as a span exporter)."""
        for rt in self.runtimes.values():
            rt.shutdown()

    def run_for(self, secs: float) -> None:
        end = time.perf_counter() + secs
        while time.perf_counter() < end:
            self.run_passes(10)


def measure(case: str, ackers: int, pending: int, secs: float) -> dict[str, Any]:
    """Best of eight slices of ``secs / 8`` each, after a one-second warm-up."""
    tw = TwoWorkers(case, ackers, pending)
    tw.run_for(1.0)
    best = float("inf")
    sent_bytes = 0.0
    for _ in range(8):
        a0, b0, t0 = tw.acked(), tw.bytes_sent, time.perf_counter()
        tw.run_for(secs / 8)
        dt, n = time.perf_counter() - t0, tw.acked() - a0
        if n and dt / n < best:
            best, sent_bytes = dt / n, (tw.bytes_sent - b0) / n
    return {
        "case": case, "ackers_per_worker": ackers, "spout_tuples_per_s_one_core": round(1 / best),
        "us_per_spout_tuple": round(best * 1e6, 2), "wire_bytes_per_spout_tuple": round(sent_bytes, 1),
    }


def cachegrind(script: str, *script_args: str) -> tuple[int, int]:
    """Run ``script`` under valgrind: the ``acked N`` it prints and the instructions it took."""
    cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
           sys.executable, str(Path(script).resolve()), *script_args]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    acked = int(re.search(r"^acked (\d+)$", proc.stdout, re.M).group(1))  # type: ignore[union-attr]
    refs = int(re.search(r"I\s+refs:\s+([\d,]+)", proc.stderr).group(1).replace(",", ""))  # type: ignore[union-attr]
    return acked, refs


def _cachegrind(args: argparse.Namespace, passes: int) -> tuple[int, int]:
    return cachegrind(__file__, "--case", args.case, "--ackers", str(args.ackers), "--pending", str(args.pending),
                      "--passes", str(passes), "--gc", args.gc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", default="word_count", choices=["word_count", "const_id_null", "const_null"])
    ap.add_argument("--ackers", type=int, default=1, help="acker executors per worker (0 turns acking off)")
    ap.add_argument("--pending", type=int, default=2000, help="topology.max.spout.pending")
    ap.add_argument("--secs", type=float, default=4.0)
    ap.add_argument("--instructions", action="store_true", help="instructions per spout tuple, with valgrind")
    ap.add_argument("--gc", default="100000",
                    help="generation-0 threshold of the collector: a number (700 is CPython's default, 100000 the "
                         "workers' worker.gc.threshold0), or off")
    ap.add_argument("--passes", type=int, default=0, help=argparse.SUPPRESS)  # one fixed run (for valgrind)
    args = ap.parse_args()
    if args.gc == "off":
        gc.disable()
    else:
        gc.set_threshold(int(args.gc), *gc.get_threshold()[1:])
    if args.passes:
        # time stands still, so that timers (the spouts' flush interval) cut no pass short under valgrind
        tw = TwoWorkers(args.case, args.ackers, args.pending, SimulatedClock())
        tw.run_passes(args.passes)
        print(f"acked {tw.acked()}")
        return
    if args.instructions:
        if shutil.which("valgrind") is None:
            sys.exit("--instructions needs valgrind (apt-get install valgrind)")
        a1, i1 = _cachegrind(args, 60)
        a2, i2 = _cachegrind(args, 160)
        print({"case": args.case, "ackers_per_worker": args.ackers, "gc": args.gc, "build": build.describe(),
               "instructions_per_spout_tuple": round((i2 - i1) / (a2 - a1)), "spout_tuples": a2 - a1})
        return
    print({**measure(args.case, args.ackers, args.pending, args.secs), "gc": args.gc, "build": build.describe()})


if __name__ == "__main__":
    main()
