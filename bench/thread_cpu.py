"""CPU seconds of each live thread of this process, read from ``/proc`` (the benches' per-thread CPU figures)."""

from __future__ import annotations

import os
import threading


def busiest_thread_cpu() -> dict[str, float]:
    """CPU seconds of each live thread (``/proc/self/task/<tid>/stat``), by thread name."""
    ticks = os.sysconf("SC_CLK_TCK")
    out: dict[str, float] = {}
    for thread in threading.enumerate():
        try:
            with open(f"/proc/self/task/{thread.native_id}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[f"{thread.name}-{thread.native_id}"] = (int(fields[11]) + int(fields[12])) / ticks
    return out
