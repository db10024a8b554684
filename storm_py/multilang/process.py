"""This module owns a shell component's process: launching it, its pipes and the threads that serve them.

:class:`ShellProcess` is the thin driver under :class:`~storm_py.multilang.bolt.ShellBolt` and
:class:`~storm_py.multilang.spout.ShellSpout`.  Both pipes are non-blocking and served by the executor's own
thread: it writes what stdin takes and keeps the rest for its next pass (a process that stops reading never
blocks the worker), and it reads and decodes stdout itself on every pass (:meth:`ShellProcess.read`), so no
message waits for another thread to get the interpreter.  A watcher thread only waits (``poll``, without the
interpreter) for stdout to become readable while the executor is not reading, wakes the executor, and then
waits until a read of the executor finds nothing to handle (while its reads find messages, the executor comes
back on its next pass without waiting, so a process writing steadily costs no wake-ups); when the component says
the process is busy (a shell bolt with more inputs out than one), the watcher lets its output gather for
``GATHER_WAIT`` before waking the executor, so one pass handles several answers; another thread copies
stderr into the component's log, a line at a time.  What went wrong (exit, garbage, a message or a stderr line
over its bound, broken pipe) arrives in the message queue as a :class:`Fault`, after every message read before
it; the worker holds no more of a process's output than those bounds.  All decisions are the component's.
"""

from __future__ import annotations

import io
import logging
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, Final

from storm_py.clock import Clock
from storm_py.config.keys import KEYS
from storm_py.errors import ShellProcessError
from storm_py.multilang.wire import DEFAULT_MAX_MESSAGE, QUOTE_LIMIT, ProtocolError, Serializer, quote

#: how much of a process's stdout is read at once, and at most per :meth:`ShellProcess.read`
CHUNK: Final = 1 << 16
MAX_READ: Final = 4 * CHUNK
#: the key bounding one line of a process's stderr, and its default
MAX_STDERR_LINE_KEY: Final = "topology.multilang.max.stderr.line.bytes"
DEFAULT_MAX_STDERR_LINE: Final[int] = KEYS[MAX_STDERR_LINE_KEY].default
#: the logger above every shell component's
COMPONENTS_LOGGER: Final = "storm_py.multilang"
#: stderr lines kept to explain a process's death, and how much of each (the error names them all)
STDERR_TAIL: Final = 5
STDERR_TAIL_CHARS: Final = 1000
#: real seconds between looks at the clock while waiting for a process to answer
WAIT_SLICE: Final = 0.05
#: real seconds a busy process's output gathers before its executor is woken: one read and one pass of the worker
#: loop then handle the answers to several inputs (a process that writes every message at once, as pystorm does,
#: otherwise wakes the loop for a few messages each time); short against the inputs it still holds
GATHER_WAIT: Final = 0.0003


class Fault:
    """Why a process can no longer be talked to (queued after the messages read before it)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


def _nothing_read(size: int) -> bytes | None:
    """The stdout reader of a process not started yet."""
    return None


def _gather(secs: float) -> None:
    """Wait ``secs`` real seconds (a busy process's output gathers meanwhile), without the interpreter."""
    select.select([], [], [], secs)


def component_logger(component_id: str) -> logging.Logger:
    """The logger a shell component's ``log`` messages and stderr go to."""
    return logging.getLogger(f"{COMPONENTS_LOGGER}.{component_id}")


def show_component_logs() -> None:
    """Let shell components' ``log`` messages at INFO and above through (a local run's set-up: its root logger
    may stand at WARNING); a level set on their loggers, or a lower one above them, is kept."""
    logger = logging.getLogger(COMPONENTS_LOGGER)
    if logger.level == logging.NOTSET and logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)


class ShellProcess:
    """One running process of a shell component and the threads serving its pipes."""

    def __init__(
        self,
        command: Sequence[str],
        cwd: Path,
        serializer: Serializer,
        component_id: str,
        env: dict[str, str] | None = None,
        wake: Callable[[], None] | None = None,
        shorthand: bool = False,
        busy: Callable[[], bool] | None = None,
        max_message: int = DEFAULT_MAX_MESSAGE,
        max_stderr_line: int = DEFAULT_MAX_STDERR_LINE,
    ) -> None:
        self.command = list(command)
        self.cwd = cwd
        self.serializer = serializer
        self.component_id = component_id
        self.log = component_logger(component_id)
        self._env = env
        self._wake = wake
        #: asked by the watcher when stdout becomes readable: the process has more inputs to answer, so its output
        #: may gather for ``GATHER_WAIT`` before the executor is woken
        self._busy = busy
        #: decoded messages and faults, in the order they were read (with ``shorthand``, pystorm's emits and acks
        #: may be in :func:`storm_py.multilang.msgpack_wire.scan`'s form)
        self.inbox: deque[Any] = deque()
        self._decoder = serializer.decoder(shorthand, max_message)
        self._max_stderr_line = max_stderr_line
        self._stdout_fd = -1
        self._read_stdout: Callable[[int], bytes | None] = _nothing_read
        #: stdout ended or broke (a Fault is queued): nothing more is read
        self._ended = False
        #: the watcher saw stdout readable and waits (on ``_gate``) until :meth:`read` finds nothing to handle
        self._watching = False
        self._gate = threading.Lock()
        #: bytes for stdin that the pipe did not take yet (see :meth:`flush`)
        self.unsent = bytearray()
        self._stdin_fd = -1
        self._stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL)
        self._threads: list[threading.Thread] = []
        self._proc: subprocess.Popen[bytes] | None = None
        self.pid: int | None = None
        self.pid_dir = tempfile.mkdtemp(prefix=f"storm-py-shell-{component_id}-")
        self._closing = False
        #: the watcher runs: stdout is read when it saw it readable (see :meth:`may_read`)
        self._watched = False

    # ------------------------------------------------------------------------------------------------ starting

    def launch(self, handshake: dict[str, Any], clock: Clock, timeout: float) -> int:
        """Start the process, send the handshake and wait for its pid (``timeout`` seconds of ``clock``)."""
        env = dict(os.environ if self._env is None else self._env)
        # the worker's own interpreter comes first on PATH: "python3" is the environment the worker runs in
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        try:
            self._proc = proc = subprocess.Popen(
                self.command, cwd=self.cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except OSError as exc:
            raise ShellProcessError(
                f"cannot start {self.command!r} in {str(self.cwd)!r}: {exc}", component=self.component_id
            ) from exc
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        self._stdin_fd = proc.stdin.fileno()
        self._stdout_fd = proc.stdout.fileno()
        # unbuffered, and None (no exception) when nothing can be read now
        self._read_stdout = io.FileIO(self._stdout_fd, "rb", closefd=False).read
        os.set_blocking(self._stdin_fd, False)
        os.set_blocking(self._stdout_fd, False)
        self._start("stderr", self._read_stderr, proc.stderr)
        self.send(self.serializer.encode_lenient(handshake))
        deadline = clock.now() + timeout
        while not self.inbox:
            if self.unsent:
                self.flush()
            self.wait(WAIT_SLICE)
            if self.inbox:
                break
            if clock.now() > deadline:
                raise ShellProcessError(f"did not answer the handshake within {timeout} s")
        self._gate.acquire()  # held by the watcher except while the executor reads what it saw
        self._start("watcher", self._watch, proc.stdout)
        self._watched = True
        first = self.inbox.popleft()
        if isinstance(first, Fault):
            if first.reason.startswith("exited"):
                raise ShellProcessError(f"{first.reason.replace('exited', 'exited during the handshake', 1)}")
            raise ShellProcessError(f"broke the handshake: {first.reason}")
        pid = first.get("pid") if isinstance(first, dict) else None
        if not isinstance(pid, int) or isinstance(pid, bool):
            raise ProtocolError(f"the handshake's answer must be {{\"pid\": N}}, got {quote(repr(first))}")
        self.pid = pid
        return pid

    def _start(self, role: str, target: Callable[[Any], None], stream: IO[bytes]) -> None:
        t = threading.Thread(target=target, args=(stream,), name=f"shell-{self.component_id}-{role}", daemon=True)
        t.start()
        self._threads.append(t)

    # ------------------------------------------------------------------------------------------------- threads

    def may_read(self) -> bool:
        """Whether :meth:`read` may find something now: the watcher saw stdout readable and waits for the read
        (or there is no watcher yet).  Otherwise the watcher is looking, and wakes the executor when it sees
        something, so a pass of the executor with nothing to read costs no system call."""
        return self._watching or not self._watched

    def read(self) -> bool:
        """Read and decode what stdout holds now (non-blocking, on the executor's thread); whether anything
        arrived.  The end of stdout, or what is not the protocol, is queued as a :class:`Fault`."""
        if self._ended:
            return False
        got = 0
        inbox = self.inbox
        read = self._read_stdout
        try:
            while got < MAX_READ:
                data = read(CHUNK)
                if data is None:  # nothing there now (non-blocking; no exception raised for it)
                    break
                if not data:
                    self._end(f"exited{self.exit_info(wait=True)}")
                    return True
                got += len(data)
                messages = self._decoder.feed(data)
                if messages:
                    inbox.extend(messages)
                if len(data) < CHUNK:
                    break
        except ProtocolError as exc:
            self._end(exc.message)
            return True
        except OSError as exc:
            self._end(f"its stdout failed: {exc}")
            return True
        except Exception as exc:  # whatever else decoding its output raised: the process's fault, not the worker's
            self._end(f"its output could not be decoded: {type(exc).__name__}: {exc}")
            return True
        if self._watching and not inbox:  # the watcher may look again (with messages to handle, the executor
            self._watching = False          # comes back for more on its next pass without waiting)
            self._gate.release()
        return got > 0

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` real seconds for stdout to become readable, then :meth:`read` it; whether
        anything arrived (part of a message, even: a sign of life)."""
        if self._ended:
            return False
        if self.read():
            return True
        try:
            select.select([self._stdout_fd], [], [], timeout)
        except (OSError, ValueError):
            pass
        return self.read()

    def _watch(self, stdout: IO[bytes]) -> None:
        """Wake the executor when stdout becomes readable; then wait until it has read before looking again."""
        poller = select.poll()
        poller.register(stdout.fileno(), select.POLLIN | select.POLLHUP | select.POLLERR)
        gate = self._gate
        busy = self._busy
        while not self._done():
            try:
                if not poller.poll(1000):
                    continue
            except OSError:
                return
            if busy is not None and busy():
                _gather(GATHER_WAIT)
            self._watching = True
            if self._wake is not None:
                self._wake()
            while not gate.acquire(timeout=1.0):
                if self._done():
                    return

    def _done(self) -> bool:
        """Whether the watcher can stop: the process is being killed or its stdout ended."""
        return self._closing or self._ended

    def _end(self, reason: str) -> None:
        self._ended = True
        self._fault(reason)
        if self._watching:
            self._watching = False
            self._gate.release()

    def _read_stderr(self, stderr: IO[bytes]) -> None:
        """Copy stderr into the log a line at a time; a line longer than its bound is a fault (read no further)."""
        limit = self._max_stderr_line
        try:
            while True:
                raw = stderr.readline(limit + 1)
                if not raw:
                    return
                if len(raw) > limit and not raw.endswith(b"\n"):
                    if not self._closing:
                        self._fault(f"wrote a stderr line longer than {limit} bytes ({MAX_STDERR_LINE_KEY}): "
                                    f"{quote(raw[:QUOTE_LIMIT + 1])}")
                    return
                line = raw.decode("utf-8", "replace").rstrip()
                if line:
                    self._stderr_tail.append(line if len(line) <= STDERR_TAIL_CHARS
                                             else line[:STDERR_TAIL_CHARS] + "...")
                    self.log.warning("stderr: %s", line)
        except (OSError, ValueError):
            pass

    def _fault(self, reason: str) -> None:
        self.inbox.append(Fault(reason))
        if self._wake is not None:
            self._wake()

    # ---------------------------------------------------------------------------------------------------- use

    def send(self, data: bytes) -> None:
        """Write ``data`` to the process's stdin, or as much as the pipe takes now (the rest waits in ``unsent``
        for :meth:`flush`, in order)."""
        if self.unsent:
            self.unsent += data
            self.flush()
            return
        try:
            n = os.write(self._stdin_fd, data)
        except BlockingIOError:
            n = 0
        except OSError as exc:
            self._lost_stdin(exc)
            return
        if n < len(data):
            self.unsent += data[n:]

    def flush(self) -> None:
        """Write what the pipe did not take before, as far as it takes it now."""
        unsent = self.unsent
        while unsent:
            try:
                n = os.write(self._stdin_fd, unsent)
            except BlockingIOError:
                return
            except OSError as exc:
                self._lost_stdin(exc)
                return
            del unsent[:n]

    def _lost_stdin(self, exc: OSError) -> None:
        self.unsent.clear()
        if not self._closing:
            self._fault(f"its stdin was closed: {exc}")

    def exited(self) -> bool:
        """Whether the process has exited."""
        return self._proc is not None and self._proc.poll() is not None

    def exit_info(self, wait: bool = False) -> str:
        """`` (exit code N; stderr: ...)``, for an error message."""
        proc = self._proc
        if proc is None:
            return ""
        code = proc.poll()
        if code is None and wait:
            try:
                code = proc.wait(1.0)
            except subprocess.TimeoutExpired:
                code = None
        parts = [f"exit code {code}" if code is not None else "still running"]
        if self._stderr_tail:
            parts.append("stderr: " + " | ".join(self._stderr_tail))
        return " (" + "; ".join(parts) + ")"

    def kill(self) -> None:
        """Kill the process, stop its threads and remove its pid directory."""
        self._closing = True
        self.unsent.clear()
        if self._watching:  # let the watcher see it is closing
            self._watching = False
            self._gate.release()
        proc = self._proc
        if proc is not None:
            if proc.poll() is None:
                proc.kill()
            try:
                proc.wait(5.0)
            except subprocess.TimeoutExpired:
                self.log.error("process %s of %s did not die", proc.pid, self.component_id)
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(2.0)
        if proc is not None:
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None:
                    try:
                        stream.close()
                    except OSError:
                        pass
        shutil.rmtree(self.pid_dir, ignore_errors=True)
