"""Bytewax's sliding-window sum over event time, the input of bench/window_sum.py: ``[value, ts]`` with ts running
1 ms per item (``value = ts % 1000``), 60 s windows sliding every 10 s.  Runs with the peers' own interpreter
(``bench/peers/run_all.py --setup`` makes it: Bytewax 0.21.1 in build/peers-venv).

    build/peers-venv/bin/python bench/peers/bytewax_window.py [--n 1000000]

One worker: a source of batches of 1000 items -> ``key_on`` (one key) -> ``fold_window`` with an ``EventClock``
(waiting 10 s: Bytewax's watermark also moves with the system clock, so with no wait an item that arrives a
millisecond of real time after the one before it would be late) and a ``SlidingWindower`` (Bytewax's windows
are ``[start, end)``; storm_py's, as Storm's, ``(start, end]``) keeping count, sum and the first and last
timestamp -> a sink.  items/s = N / (last sink write - first source batch), system-wide monotonic clock.  Every
window's sum is checked against its timestamps.  One ``RESULT`` line.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from datetime import UTC

from common import environment, result

BATCH = 1000


def prefix_sum(n: int) -> int:
    """The sum of ``ts % 1000`` for ts in 1..n."""
    full, rest = divmod(n, 1000)
    return full * (999 * 1000 // 2) + rest * (rest + 1) // 2


def flow() -> Any:
    """The dataflow, configured by BW_N (items in all) and BW_OUT (directory for the sink's JSON)."""
    from datetime import datetime, timedelta

    import bytewax.operators as op
    import bytewax.operators.windowing as win
    from bytewax.dataflow import Dataflow
    from bytewax.inputs import DynamicSource, StatelessSourcePartition
    from bytewax.outputs import DynamicSink, StatelessSinkPartition

    n, out = int(os.environ["BW_N"]), Path(os.environ["BW_OUT"])
    epoch = datetime(2026, 1, 1, tzinfo=UTC)

    class Part(StatelessSourcePartition):  # type: ignore[misc]
        def __init__(self) -> None:
            self.i, self.started = 1, False

        def next_batch(self) -> list[tuple[int, int]]:
            if not self.started:
                self.started = True
                (out / "start.json").write_text(json.dumps(time.monotonic()))
            if self.i > n:
                raise StopIteration
            stop = min(n + 1, self.i + BATCH)
            batch = [(ts % 1000, ts) for ts in range(self.i, stop)]
            self.i = stop
            return batch

    class Source(DynamicSource):  # type: ignore[misc]
        def build(self, step_id: str, worker_index: int, worker_count: int) -> Part:
            return Part()

    class SinkPart(StatelessSinkPartition):  # type: ignore[misc]
        def __init__(self) -> None:
            self.windows, self.wrong, self.end = 0, 0, 0.0

        def write_batch(self, items: list[tuple[str, tuple[int, tuple[int, int, int, int]]]]) -> None:
            for _key, (_window, (count, total, first, last)) in items:
                self.windows += 1
                if total != prefix_sum(last) - prefix_sum(first - 1) or count != last - first + 1:
                    self.wrong += 1
            self.end = time.monotonic()

        def close(self) -> None:
            (out / "sink.json").write_text(json.dumps({"end": self.end, "windows": self.windows,
                                                       "wrong": self.wrong}))

    class Sink(DynamicSink):  # type: ignore[misc]
        def build(self, step_id: str, worker_index: int, worker_count: int) -> SinkPart:
            return SinkPart()

    def fold(state: tuple[int, int, int, int], item: tuple[int, int]) -> tuple[int, int, int, int]:
        count, total, first, _last = state
        value, ts = item
        return count + 1, total + value, ts if count == 0 else first, ts

    def merge(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
        return a[0] + b[0], a[1] + b[1], min(a[2], b[2]), max(a[3], b[3])

    df = Dataflow("window_sum")
    items = op.input("in", df, Source())
    keyed = op.key_on("key", items, lambda _item: "all")
    clock = win.EventClock(lambda item: epoch + timedelta(milliseconds=item[1]),
                           wait_for_system_duration=timedelta(seconds=10))
    windower = win.SlidingWindower(length=timedelta(seconds=60), offset=timedelta(seconds=10), align_to=epoch)
    sums = win.fold_window("sum", keyed, clock, windower, lambda: (0, 0, 0, 0), fold, merge)
    op.output("out", sums.down, Sink())
    return df


def run(n: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bytewax-window-") as tmp:
        env = {**os.environ, "BW_N": str(n), "BW_OUT": tmp, "PYTHONPATH": str(Path(__file__).resolve().parent)}
        cpu0 = os.times()
        proc = subprocess.run([sys.executable, "-m", "bytewax.run", "bytewax_window:flow()"], env=env, timeout=900,
                              check=False)
        if proc.returncode != 0:
            raise SystemExit(f"bytewax exited with {proc.returncode}")
        cpu1 = os.times()
        start = json.loads((Path(tmp) / "start.json").read_text())
        sink = json.loads((Path(tmp) / "sink.json").read_text())
    elapsed = sink["end"] - start
    cpu = (cpu1.children_user - cpu0.children_user) + (cpu1.children_system - cpu0.children_system)
    return {"items_per_s": round(n / elapsed), "items_per_cpu_s": round(n / cpu), "elapsed_s": round(elapsed, 3),
            "windows": sink["windows"], "wrong_sums": sink["wrong"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    args = ap.parse_args()
    from importlib.metadata import version

    import bytewax  # noqa: F401  (fails clearly when run with an interpreter that lacks it)

    env = environment()
    row = run(args.n)
    result("bytewax_sliding_window_sum_1p", **row, n=args.n, bytewax=version("bytewax"), **env)
    if row["wrong_sums"]:
        sys.exit("bytewax_window: wrong sums")


if __name__ == "__main__":
    main()
