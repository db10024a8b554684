"""What every word-count peer shares: the sentences (``bench/storm_perf.py`` uses them too), the fields hash, a
result line, and the machine's load and CPU use around a run."""

from __future__ import annotations

import json
import os
import platform
import time
import zlib
from typing import Any

#: the five 8-word sentences of bench/storm_perf.py, cycled
SENTENCES = [
    "the cow jumped over the moon and away",
    "an apple a day keeps the doctor away",
    "four score and seven years ago our fathers",
    "snow white and the seven dwarfs went home",
    "i am at two with nature said he",
]
WORDS_PER_SENTENCE = 8


def expected_counts(n: int) -> dict[str, int]:
    """The word counts after sentences ``0 .. n-1``."""
    counts: dict[str, int] = {}
    for i in range(n):
        for w in SENTENCES[i % len(SENTENCES)].split():
            counts[w] = counts.get(w, 0) + 1
    return counts


def word_task(word: str, tasks: int, cache: dict[str, int]) -> int:
    """Fields grouping on the word: CRC-32 of its UTF-8, memoised (as storm_py's one-field grouping)."""
    t = cache.get(word)
    if t is None:
        t = cache[word] = zlib.crc32(word.encode()) % tasks
    return t


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine_cpu() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    tick = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]
    total = sum(fields[:8])
    return (total - idle) / tick, total / tick


def environment() -> dict[str, Any]:
    """Machine facts printed with every result so a figure can be read against the machine it came from."""
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), "")
    except OSError:
        pass
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "cpu_model": model,
            "loadavg_1_5_15": loadavg()}


def result(name: str, **fields: Any) -> None:
    """One ``RESULT {json}`` line on stdout (read by bench/peers/run_all.py)."""
    print("RESULT " + json.dumps({"peer": name, **fields}), flush=True)


def now() -> float:
    return time.monotonic()
