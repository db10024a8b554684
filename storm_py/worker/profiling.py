"""This module owns a worker's profiling actions in its own process and the names of the files they leave.

Three actions, each writing one file into the worker's directory (``workers-artifacts/<topology-id>/<port>/``,
where the log viewer serves it):

* ``stack``: every thread's stack (:func:`stack_dump`), ``profile-stack-<epoch ms>.txt``;
* ``cpu``: where the threads spend their time over some seconds, sampled from ``sys._current_frames``
  (:class:`StackSamples`), as a speedscope profile ``profile-cpu-<epoch ms>.json`` (open it at speedscope.app);
* ``memory``: the lines that allocated the most while :mod:`tracemalloc` traced for some seconds, and the
  live objects by type (:func:`memory_report`), ``profile-memory-<epoch ms>.txt``.

The supervisor runs py-spy against the worker's pid for stacks and CPU profiles when it can
(:mod:`storm_py.supervisor.profiler`); what py-spy cannot do (a memory snapshot) or when it is not there, it asks
the worker by leaving a request file in ``profiling-requests/`` of that directory.  :class:`ProfilingAgent`, a
thread of the worker process, picks the requests up and runs them.  Nothing here runs unless asked: a worker that
is never profiled pays one directory listing per poll.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import re
import sys
import threading
import tracemalloc
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any, Final, Literal

from storm_py.clock import Clock

log = logging.getLogger(__name__)

Action = Literal["stack", "cpu", "memory"]
ACTIONS: Final[tuple[Action, ...]] = ("stack", "cpu", "memory")
#: The directory (inside the worker's) where the supervisor leaves requests.
REQUESTS_DIR: Final = "profiling-requests"
#: A profiling result's file name: ``profile-<action>-<epoch ms>.<ext>``.
DUMP_NAME: Final = re.compile(r"profile-(stack|cpu|memory)-(\d{13})\.(txt|svg|json)")
#: Longest a CPU profile or a memory trace may run, in seconds.
MAX_SECS: Final = 3600
#: Samples per second of the in-process CPU profiler.
SAMPLE_HZ: Final = 100
#: Lines listed by a memory report, and object types.
TOP_LINES: Final = 50
TOP_TYPES: Final = 30
#: Frames kept of each sampled stack (the innermost ones).
MAX_DEPTH: Final = 128


def dump_name(action: Action, epoch_ms: int, ext: str) -> str:
    """The file name of a result of ``action`` started at ``epoch_ms``."""
    return f"profile-{action}-{epoch_ms:013d}.{ext}"


def is_dump(name: str) -> bool:
    """Whether ``name`` is a profiling result's file name."""
    return DUMP_NAME.fullmatch(name) is not None


def dump_info(name: str) -> tuple[str, int] | None:
    """``(action, epoch ms)`` of a result's file name; None for any other name."""
    found = DUMP_NAME.fullmatch(name)
    return (found.group(1), int(found.group(2))) if found else None


def _frame_label(frame: FrameType) -> str:
    code = frame.f_code
    return f"{code.co_name} ({code.co_filename}:{frame.f_lineno})"


def frame_stack(frame: FrameType | None) -> list[str]:
    """The labels of ``frame`` and its callers, outermost first (at most :data:`MAX_DEPTH`, the innermost)."""
    out: list[str] = []
    while frame is not None and len(out) < MAX_DEPTH:
        out.append(_frame_label(frame))
        frame = frame.f_back
    out.reverse()
    return out


def stack_dump(frames: Mapping[int, FrameType], names: Mapping[int, str], pid: int, now: float) -> str:
    """Every thread's stack as text, innermost call first (as py-spy prints them)."""
    when = datetime.fromtimestamp(now, UTC).isoformat(timespec="milliseconds")
    lines = [f"Process {pid}: stack dump at {when}", ""]
    for ident in sorted(frames):
        lines.append(f"Thread {ident} ({names.get(ident, '?')})")
        lines.extend(f"    {label}" for label in reversed(frame_stack(frames[ident])))
        lines.append("")
    return "\n".join(lines)


class StackSamples:
    """Sampled stacks counted by identity: the pure core of the in-process CPU profiler."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, ...]] = Counter()
        self.samples = 0

    def add(self, stacks: Iterable[list[str]]) -> None:
        """One sampling round: the stacks of the threads seen at that moment."""
        self.samples += 1
        for stack in stacks:
            if stack:
                self.counts[tuple(stack)] += 1

    def folded(self) -> str:
        """Brendan Gregg's folded format: ``outer;inner count`` per stack (the input of flamegraph tools)."""
        return "".join(f"{';'.join(s)} {n}\n" for s, n in sorted(self.counts.items()))

    def speedscope(self, name: str, interval: float) -> dict[str, Any]:
        """The samples as a speedscope file (https://www.speedscope.app/file-format-schema.json)."""
        index: dict[str, int] = {}
        samples: list[list[int]] = []
        weights: list[float] = []
        for stack, n in sorted(self.counts.items()):
            samples.append([index.setdefault(label, len(index)) for label in stack])
            weights.append(n * interval)
        return {
            "$schema": "https://www.speedscope.app/file-format-schema.json",
            "shared": {"frames": [{"name": label} for label in index]},
            "profiles": [{"type": "sampled", "name": name, "unit": "seconds", "startValue": 0,
                          "endValue": sum(weights), "samples": samples, "weights": weights}],
            "name": name, "exporter": "storm_py",
        }


def sample_cpu(seconds: float, clock: Clock, stop: threading.Event, hz: int = SAMPLE_HZ) -> StackSamples:
    """Sample every other thread's stack ``hz`` times a second for ``seconds`` (or until ``stop``)."""
    samples = StackSamples()
    me = threading.get_ident()
    interval = 1.0 / hz
    end = clock.now() + seconds
    while clock.now() < end and not stop.is_set():
        frames = sys._current_frames()
        samples.add(frame_stack(f) for ident, f in frames.items() if ident != me)
        del frames
        stop.wait(interval)
    return samples


def memory_report(snapshot: tracemalloc.Snapshot, types: Counter[str], traced_secs: float, now: float) -> str:
    """The top allocating lines of ``snapshot`` and the commonest live object ``types``, as text."""
    when = datetime.fromtimestamp(now, UTC).isoformat(timespec="milliseconds")
    stats = snapshot.statistics("lineno")
    total = sum(s.size for s in stats)
    lines = [f"Memory snapshot at {when}: {total / 1024:.1f} KiB in {sum(s.count for s in stats)} blocks "
             f"allocated while tracing for {traced_secs:g} s and still alive", "",
             f"Top {TOP_LINES} lines by size:"]
    for s in stats[:TOP_LINES]:
        frame = s.traceback[0]
        lines.append(f"{s.size / 1024:12.1f} KiB {s.count:10d} blocks  {frame.filename}:{frame.lineno}")
    lines += ["", f"Top {TOP_TYPES} object types tracked by the garbage collector:"]
    lines.extend(f"{n:12d}  {name}" for name, n in types.most_common(TOP_TYPES))
    return "\n".join(lines) + "\n"


def object_types() -> Counter[str]:
    """Live objects tracked by the garbage collector, counted by type name."""
    return Counter(type(o).__name__ for o in gc.get_objects())


@dataclass(frozen=True)
class Request:
    """One profiling request a supervisor left for its worker."""

    action: Action
    seconds: float
    file: str

    @classmethod
    def from_json(cls, value: Any) -> Request:
        """A request from its JSON form; ValueError naming what is wrong."""
        if not isinstance(value, Mapping):
            raise ValueError("a profiling request must be a JSON object")
        action, seconds, file = value.get("action"), value.get("seconds", 0), value.get("file")
        if action not in ACTIONS:
            raise ValueError(f"action must be one of {', '.join(ACTIONS)}, got {action!r}")
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 <= seconds <= MAX_SECS:
            raise ValueError(f"seconds must be a number from 0 to {MAX_SECS}, got {seconds!r}")
        if not isinstance(file, str) or not is_dump(file) or not file.startswith(f"profile-{action}-"):
            raise ValueError(f"file must be a profile-{action}-<epoch ms> name, got {file!r}")
        return cls(action, float(seconds), file)

    def to_json(self) -> dict[str, Any]:
        """The request's JSON form."""
        return {"action": self.action, "seconds": self.seconds, "file": self.file}


def write_result(directory: Path, name: str, data: bytes) -> Path:
    """Write a result file whole (a hidden partial file, then renamed): the log viewer never lists half of one."""
    path = directory / name
    part = directory / f".{name}.part"
    part.write_bytes(data)
    os.replace(part, path)
    return path


def run_request(request: Request, directory: Path, clock: Clock, stop: threading.Event) -> Path:
    """Run one request in this process; the result file written."""
    now = clock.wall()
    if request.action == "stack":
        names = {t.ident: t.name for t in threading.enumerate() if t.ident is not None}
        text = stack_dump(sys._current_frames(), names, os.getpid(), now)
        return write_result(directory, request.file, text.encode("utf-8"))
    if request.action == "cpu":
        samples = sample_cpu(request.seconds, clock, stop)
        doc = samples.speedscope(f"pid {os.getpid()}, {request.seconds:g} s", 1.0 / SAMPLE_HZ)
        return write_result(directory, request.file, json.dumps(doc).encode("utf-8"))
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        stop.wait(request.seconds)
        snapshot = tracemalloc.take_snapshot()
    finally:
        if started:
            tracemalloc.stop()
    text = memory_report(snapshot, object_types(), request.seconds, now)
    return write_result(directory, request.file, text.encode("utf-8"))


class ProfilingAgent:
    """Runs the profiling requests left in ``<worker dir>/profiling-requests/``, each on a thread of its own."""

    def __init__(self, directory: Path, clock: Clock, poll_secs: float) -> None:
        self.directory = directory
        self.requests = directory / REQUESTS_DIR
        self.clock = clock
        self.poll_secs = poll_secs
        self.stop_event = threading.Event()
        self._thread: threading.Thread | None = None

    def pending(self) -> list[tuple[Path, Request | None]]:
        """The request files waiting, oldest name first, each with its request (None: malformed)."""
        try:
            paths = sorted(p for p in self.requests.iterdir() if p.suffix == ".json" and not p.name.startswith("."))
        except OSError:
            return []
        out: list[tuple[Path, Request | None]] = []
        for path in paths:
            try:
                out.append((path, Request.from_json(json.loads(path.read_text(encoding="utf-8")))))
            except (OSError, ValueError) as err:
                log.warning("ignoring profiling request %s: %s", path.name, err)
                out.append((path, None))
        return out

    def poll(self) -> list[threading.Thread]:
        """Start every pending request; the threads started."""
        started = []
        for path, request in self.pending():
            try:
                path.unlink(missing_ok=True)
            except OSError as err:  # a request it cannot take away would run again at every poll
                log.warning("ignoring profiling request %s, which this worker cannot remove: %s", path.name, err)
                continue
            if request is None:
                continue
            thread = threading.Thread(target=self._run, args=(request,), name=f"profile-{request.action}",
                                      daemon=True)
            thread.start()
            started.append(thread)
        return started

    def _run(self, request: Request) -> None:
        try:
            path = run_request(request, self.directory, self.clock, self.stop_event)
            log.info("profiling: wrote %s", path.name)
        except Exception:  # a failed profile must never take the worker down
            log.exception("profiling request %s failed", request.file)

    def start(self) -> None:
        """Poll for requests on a daemon thread until :meth:`stop`."""
        self._thread = threading.Thread(target=self._loop, name="profiling-agent", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self.stop_event.is_set():
            self.poll()
            self.stop_event.wait(self.poll_secs)

    def stop(self) -> None:
        """Stop polling (and cut a running CPU profile or memory trace short)."""
        self.stop_event.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
