"""A word count defined in a Flux YAML file against its twin built in Python with ``TopologyBuilder``: acked
sentences/s, one worker, the same run.

    python bench/flux_word_count.py [--secs 8] [--warmup 2] [--rounds 3] [--ackers 1]

Both are storm-perf's word count (``bench/storm_perf.py``: sentence spout -> split -> fields-grouped running count)
with the same component classes; the Flux variant names them by ``module:Class`` in YAML and builds them with
``storm_py.flux``.  Each run is a fresh LocalCluster measured as ``storm_perf.measure`` does (the spout executor's
acked count over ``--secs`` after ``--warmup``); the variants alternate for ``--rounds``.  One JSON line per run,
then the medians and their ratio (Flux / Python): a topology built by Flux is the same topology, so the ratio
should be 1 within the noise.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # after PYTHONPATH: a compiled build there wins
sys.path.append(str(Path(__file__).resolve().parent))  # the other bench scripts (``python -P`` leaves them out)

from storm_perf import measure, word_count  # bench/ is the script's own directory

from storm_py import flux

WORD_COUNT_YAML = """
name: "flux-word-count"
spouts:
  - id: "spout"
    className: "storm_perf:SentenceSpout"
bolts:
  - id: "split"
    className: "storm_perf:Split"
  - id: "count"
    className: "storm_perf:Count"
streams:
  - from: "spout"
    to: "split"
    grouping:
      type: SHUFFLE
  - from: "split"
    to: "count"
    grouping:
      type: FIELDS
      args: ["word"]
"""


def flux_word_count(path: Path) -> Any:
    """The word count as Flux builds it from the YAML file."""
    return flux.build(flux.parse_file(path)).topology


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--secs", type=float, default=8.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ackers", type=int, default=1)
    args = parser.parse_args()
    rates: dict[str, list[int]] = {"flux": [], "python": []}
    with tempfile.TemporaryDirectory(prefix="flux-bench-") as tmp:
        path = Path(tmp) / "word_count.yaml"
        path.write_text(WORD_COUNT_YAML, encoding="utf-8")
        builds = {"flux": lambda: flux_word_count(path), "python": word_count}
        for r in range(args.rounds):
            for variant in (("flux", "python") if r % 2 == 0 else ("python", "flux")):
                row = measure(builds[variant], args.ackers, args.secs, args.warmup)
                rates[variant].append(row["acked_per_s"])
                print(json.dumps({"variant": variant, "round": r, **row}), flush=True)
    medians = {v: statistics.median(xs) for v, xs in rates.items()}
    print(json.dumps({"median_sentences_per_s": medians,
                      "flux_over_python": round(medians["flux"] / max(1, medians["python"]), 3)}))


if __name__ == "__main__":
    main()
