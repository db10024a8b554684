"""What tracing costs a sentence: instructions a sentence of the word count with ``topology.tracing.otlp.endpoint``
set and a share of the trees sampled, against the same topology with tracing off, in the same run.

    python bench/tracing_cost.py [--percents 0,1,100] [--rounds 2]       # needs valgrind
    PYTHONPATH=$(./scripts/compiled-build.sh) python bench/tracing_cost.py

The topology runs as in ``bench/two_workers.py --instructions`` (two worker runtimes in one thread, real frames
between them, a clock that stands still) under ``valgrind --tool=cachegrind``, twice per setting, and the
instructions a sentence are the difference of the two runs over the difference of their acked sentences.  With
tracing on, the spans go through the OpenTelemetry SDK's batch exporter (its thread's instructions count too) to an
OTLP/HTTP receiver in this process (outside valgrind); the workers are shut down at the end of each run, so every
span of the run is posted.  Each row says how many trees the receiver got a span of, per sentence.

A traced tree's cost is the 100 % row's extra instructions a sentence; at 1 % a sentence should then cost about
1 % of it, plus what looking at every tuple costs (deciding whether its tree is sampled).
"""

from __future__ import annotations

import argparse
import gc
import json
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE.parent))  # after PYTHONPATH: a compiled build put there comes first

from two_workers import TwoWorkers, cachegrind  # noqa: E402

from storm_py import build  # noqa: E402
from storm_py.clock import SimulatedClock  # noqa: E402

#: Passes of the two runs under valgrind (their difference is measured).
PASSES = (40, 160)


def tracing_conf(endpoint: str | None, percent: float | None) -> dict[str, Any]:
    """The topology settings of one row: tracing off (no endpoint), or on with ``percent`` % of trees sampled."""
    if endpoint is None:
        return {}
    return {"topology.tracing.otlp.endpoint": endpoint, "topology.tracing.sample.percent": percent}


def run_passes(args: argparse.Namespace) -> None:
    """The valgrind child: ``args.passes`` passes, the runtimes shut down, the acked count printed."""
    gc.set_threshold(100_000, *gc.get_threshold()[1:])
    conf = tracing_conf(args.endpoint or None, args.percent)
    tw = TwoWorkers("word_count", 1, 2000, SimulatedClock(), conf)
    tw.run_passes(args.passes)
    tw.shutdown()
    print(f"acked {tw.acked()}")


def measure(endpoint: str | None, percent: float | None, receiver: Any) -> dict[str, Any]:
    """Instructions a sentence of one setting, and the traces the receiver got per sentence."""
    counts = []
    traces = []
    for passes in PASSES:
        before = len(receiver.traces())
        extra = ["--endpoint", endpoint, "--percent", str(percent)] if endpoint else []
        counts.append(cachegrind(__file__, "--passes", str(passes), *extra))
        traces.append(len(receiver.traces()) - before)
    (a1, i1), (a2, i2) = counts
    return {
        "tracing": "off" if endpoint is None else f"{percent:g} %",
        "instructions_per_sentence": round((i2 - i1) / (a2 - a1)),
        "sentences": a2 - a1,
        "traced_trees_per_100_sentences": round(100 * (traces[1] - traces[0]) / (a2 - a1), 3),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--percents", default="0,1",
                    help="sampled shares to measure against tracing off (0: every tuple looked at, none traced)")
    ap.add_argument("--rounds", type=int, default=1, help="how many times each setting runs (alternating)")
    ap.add_argument("--json", type=Path, default=None, help="append the rows to this file (JSON lines)")
    ap.add_argument("--passes", type=int, default=0, help=argparse.SUPPRESS)  # the valgrind child
    ap.add_argument("--endpoint", default="", help=argparse.SUPPRESS)
    ap.add_argument("--percent", type=float, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.passes:
        run_passes(args)
        return
    if shutil.which("valgrind") is None:
        sys.exit("tracing_cost.py needs valgrind (apt-get install valgrind)")
    from tests.ops.otlp_receiver import OtlpReceiver

    receiver = OtlpReceiver()
    settings: list[tuple[str | None, float | None]] = [(None, None)]
    settings += [(receiver.endpoint, float(p)) for p in args.percents.split(",") if p]
    rows: list[dict[str, Any]] = []
    try:
        print(json.dumps({"build": build.describe(), "passes": PASSES}), flush=True)
        for _ in range(args.rounds):
            for endpoint, percent in settings:
                row = measure(endpoint, percent, receiver)
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        receiver.close()
    off = statistics.median(r["instructions_per_sentence"] for r in rows if r["tracing"] == "off")
    summary: dict[str, Any] = {"summary": "tracing", "build": build.describe(), "off": round(off)}
    for _, percent in settings[1:]:
        name = f"{percent:g} %"
        on = statistics.median(r["instructions_per_sentence"] for r in rows if r["tracing"] == name)
        summary[name] = {"instructions_per_sentence": round(on), "extra": round(on - off),
                         "extra_pct": round(100 * (on - off) / off, 2)}
    print(json.dumps(summary), flush=True)
    if args.json:
        with args.json.open("a") as f:
            for r in [*rows, summary]:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
