"""A long message through a real process's pipe: a 40 MB JSON emit arrives about half a second after it is written
(read a pipe's worth at a time; its end was searched for in the whole message on every read, which took 30 s)."""

from __future__ import annotations

import time
from pathlib import Path

from storm_py.clock import SYSTEM_CLOCK
from storm_py.multilang.process import ShellProcess
from storm_py.multilang.serializer import JsonSerializer

RESOURCES = Path(__file__).parent / "resources"
SIZE = 40 * 1000 * 1000


def test_a_40_mb_json_emit_arrives_through_a_real_pipe_at_once() -> None:
    proc = ShellProcess(["python3", "big_emit.py", str(SIZE)], RESOURCES, JsonSerializer(), "big")
    try:
        proc.launch({"conf": {}, "context": {}, "pidDir": proc.pid_dir}, SYSTEM_CLOCK, 30)
        start = time.perf_counter()
        while not proc.inbox and time.perf_counter() - start < 30:
            proc.wait(0.05)
        took = time.perf_counter() - start
        msg = proc.inbox.popleft()
        assert isinstance(msg, dict) and len(msg["tuple"][0]) == SIZE
        assert took < 2.0, f"the 40 MB emit took {took:.2f} s to arrive"  # ~0.5 s; a busy machine's margin
    finally:
        proc.kill()
