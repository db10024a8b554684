"""A long message through a real process's pipe: a 40 MB JSON emit arrives in well under a second of the worker's
time (read a pipe's worth at a time, its end was searched for in the whole message on every read: 30 s, and it
never arrived)."""

from __future__ import annotations

import time
from pathlib import Path

from storm_py.clock import SYSTEM_CLOCK
from storm_py.multilang.json_wire import JsonSerializer
from storm_py.multilang.process import ShellProcess

RESOURCES = Path(__file__).parent / "resources"
SIZE = 40 * 1000 * 1000


def test_a_40_mb_json_emit_arrives_through_a_real_pipe_at_once() -> None:
    proc = ShellProcess(["python3", "big_emit.py", str(SIZE)], RESOURCES, JsonSerializer(), "big")
    try:
        proc.launch({"conf": {}, "context": {}, "pidDir": proc.pid_dir}, SYSTEM_CLOCK, 30)
        start, cpu_start = time.perf_counter(), time.process_time()
        while not proc.inbox and time.perf_counter() - start < 30:
            proc.wait(0.05)
        took, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        msg = proc.inbox.popleft()
        assert isinstance(msg, dict) and len(msg["tuple"][0]) == SIZE
        # the worker's work on it (reading, finding its end, parsing: ~0.5 s), whatever else the machine runs
        assert cpu < 1.0, f"the 40 MB emit cost {cpu:.2f} s of CPU ({took:.2f} s) to arrive"
    finally:
        proc.kill()
