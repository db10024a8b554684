"""This module owns how a development server runs as a child process: started with absolute paths, its output
in a log file, stopped with SIGTERM then SIGKILL, and its failure told in its own last lines.

ZooKeeper, Redis and the Kafka broker (and the dev cluster's daemons) each change directory or read paths of
their own; a relative path handed to them would point somewhere else, so every path goes absolute first.  A
port already served is refused before the server starts (another server answering there would pass for the new
one).  A server that exits while starting explains why in its output: :func:`exit_message` puts its last lines in the
error.
"""

from __future__ import annotations

import ctypes
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

_PR_SET_PDEATHSIG = 1
#: how many of a failed server's last output lines its error shows
TAIL_LINES = 15


def absolute(path: Path | str) -> Path:
    """``path`` made absolute against the current directory (before a child changes its own)."""
    return Path(path).expanduser().resolve()


def accepts(host: str, port: int, timeout: float = 0.5) -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def port_taken_message(what: str, host: str, port: int) -> str | None:
    """Before ``what`` starts on ``host:port``: the error when something listens there already (a server of
    another run answering there would pass for the new one, which then fails to bind), else None."""
    if accepts(host, port):
        return f"cannot start {what} on {host}:{port}: something listens there already (stop it, or pick another port)"
    return None


def tail_text(text: str, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` non-blank lines of ``text``, each stripped of trailing spaces."""
    kept = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    return "\n".join(kept[-lines:])


def log_tail(path: Path, lines: int = TAIL_LINES) -> str:
    """The last lines of the log file ``path`` (``(no output)`` when it is missing or empty)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no output)"
    return tail_text(text, lines) or "(no output)"


def exit_message(what: str, code: int | None, output: str, log_path: Path | None = None) -> str:
    """The error of server ``what`` that exited with ``code`` while starting: its own last lines follow."""
    where = f" (log: {log_path})" if log_path is not None else ""
    return f"{what} exited with code {code}{where}:\n{output or '(no output)'}"


class ChildServer:
    """One server process with its stdout and stderr in ``log_path`` (``None``: an unnamed temporary file, gone
    when the server stops), appended to across restarts.

    Args:
        cmd: the command line (its paths already absolute: see :func:`absolute`).
        log_path: where its output goes.
        cwd: the directory it runs in.
        env: its environment (``None``: this process's).
        die_with_parent: on Linux, SIGTERM it when this process dies without stopping it.
    """

    def __init__(self, cmd: Sequence[str], log_path: Path | None, *, cwd: Path | None = None,
                 env: Mapping[str, str] | None = None, die_with_parent: bool = False) -> None:
        self.log_path = absolute(log_path) if log_path is not None else None
        self._scratch: IO[bytes] | None = None
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            out: IO[bytes] = self.log_path.open("ab")
        else:
            out = self._scratch = tempfile.TemporaryFile()  # noqa: SIM115 (kept open while the server runs)
        try:
            self.proc = subprocess.Popen(
                list(cmd), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                cwd=cwd, env=dict(env) if env is not None else None,
                # prctl is one system call in the child, taking no lock a parent thread could hold.
                preexec_fn=_die_with_parent if die_with_parent else None,  # noqa: PLW1509
            )
        except BaseException:
            self._close()
            raise
        finally:
            if self.log_path is not None:
                out.close()

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def running(self) -> bool:
        """Whether the process runs."""
        return self.proc.poll() is None

    def output_tail(self, lines: int = TAIL_LINES) -> str:
        """The last lines the server wrote."""
        if self.log_path is not None:
            return log_tail(self.log_path, lines)
        if self._scratch is None:
            return "(no output)"
        self._scratch.seek(0)
        return tail_text(self._scratch.read().decode("utf-8", errors="replace"), lines) or "(no output)"

    def exited(self, what: str) -> str | None:
        """None while it runs; once it has exited, the error saying so with its last lines."""
        code = self.proc.poll()
        if code is None:
            return None
        return exit_message(what, code, self.output_tail(), self.log_path)

    def stop(self, timeout: float) -> None:
        """SIGTERM, then SIGKILL when it has not exited within ``timeout`` seconds."""
        try:
            stop_child(self.proc, timeout)
        finally:
            self._close()

    def _close(self) -> None:
        scratch, self._scratch = self._scratch, None
        if scratch is not None:
            scratch.close()


def stop_child(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """Stop a child server: SIGTERM, then SIGKILL when it has not exited within ``timeout`` seconds."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout)


def _die_with_parent() -> None:
    """In the child, before exec: ask Linux to SIGTERM it when its parent dies."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
