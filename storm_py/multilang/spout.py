"""This module owns :class:`ShellSpout`: a spout whose tuples come from another process over Storm's multilang
protocol.

Every spout call is a command the process answers with ``sync``: ``next``, ``ack`` and ``fail`` (with the message
id exactly as the process emitted it, any JSON type, ``0`` included), ``activate`` and ``deactivate``.  Before its
``sync`` the process may ``emit`` (answered with the target task ids unless ``need_task_ids`` is false or the
emit is direct), ``log``, ``error`` and ``metrics``.  As in Storm, a spout's heartbeat is that exchange: a process
that leaves a command unanswered for ``topology.subprocess.timeout.secs`` is killed.  A fault (exit, hang,
what is not the protocol, an emit the spout cannot carry out) is reported naming the component and a new process
is started; the trees already emitted are still acked or failed, to the new process.
"""

from __future__ import annotations

from typing import Any

from storm_py.api.components import Spout, SpoutOutputCollector
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import DEFAULT_STREAM
from storm_py.errors import ShellProcessError
from storm_py.multilang.ledger import Heartbeat
from storm_py.multilang.process import WAIT_SLICE, Fault, ShellProcess
from storm_py.multilang.shell import ShellComponent
from storm_py.multilang.wire import EncodeError, ProtocolError, quote

#: longest wait between attempts to start a process that would not start
MAX_RESTART_BACKOFF = 30.0


class ShellSpout(ShellComponent, Spout):
    """Storm's ``ShellSpout``: the process is ``[command, *args]``; subclass it to declare the output fields."""

    kind = "shell spout"

    def open(self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector) -> None:
        self._setup(conf, context)
        self._collector = collector
        self._failures = 0
        self._restart_at = 0.0
        self._process = None
        self._beat = Heartbeat(self._timeout, self._clock.now())
        self._restart()  # one that will not start is reported and tried again, backing off

    def next_tuple(self) -> None:
        self._command("next")

    def ack(self, msg_id: Any) -> None:
        self._command("ack", msg_id)

    def fail(self, msg_id: Any) -> None:
        self._command("fail", msg_id)

    def activate(self) -> None:
        self._command("activate")

    def deactivate(self) -> None:
        self._command("deactivate")

    def close(self) -> None:
        proc = getattr(self, "_process", None)
        self._process = None
        if proc is not None:
            proc.kill()

    # ------------------------------------------------------------------------------------------------ helpers

    def _command(self, command: str, msg_id: Any = "") -> None:
        """Send one command and handle what the process writes until its ``sync``."""
        proc = self._process
        if proc is None:
            if self._clock.now() < self._restart_at or not self._restart():
                return
            proc = self._process
            assert proc is not None
        try:
            proc.send(self._serializer.encode({"command": command, "id": msg_id}))
        except EncodeError as exc:
            self._collector.report_error(self._error(f"cannot send {command} of id {msg_id!r}: {exc.message}"))
            return
        clock = self._clock
        beat = self._beat
        beat.heard(clock.now())
        inbox = proc.inbox
        while True:
            if not inbox:
                if proc.unsent:
                    proc.flush()
                stirred = not inbox and proc.wait(WAIT_SLICE)
                now = clock.now()
                if not inbox:
                    if stirred:
                        beat.stirred(now)  # part of a long message: bytes arriving are a sign of life
                    if beat.expired(now):
                        self._fault(proc, f"left {command!r} unanswered for {beat.silence(now):.1f} s "
                                          f"(topology.subprocess.timeout.secs is {beat.timeout:g}): "
                                          f"killed{proc.exit_info()}")
                        return
                    continue
            msg = inbox.popleft()
            beat.heard(clock.now())
            if type(msg) is Fault:
                self._fault(proc, msg.reason)
                return
            try:
                if self._handle(msg, proc):
                    return
            except Exception as exc:  # the process asked for what cannot be done: Storm's ShellSpout dies here
                reason = exc.message if isinstance(exc, ShellProcessError) else f"{type(exc).__name__}: {exc}"
                self._fault(proc, reason)
                return

    def _handle(self, msg: dict[str, Any], proc: ShellProcess) -> bool:
        """Handle one message; return whether it was the ``sync`` that ends the command."""
        command = msg.get("command")
        if command == "sync":
            return True
        if command == "emit":
            values = msg.get("tuple")
            if not isinstance(values, list):
                raise ProtocolError(f"an emit needs a 'tuple' list, got {quote(repr(msg))}")
            stream = msg.get("stream") or DEFAULT_STREAM
            msg_id = msg.get("id")
            task = msg.get("task")
            if task:
                self._collector.emit_direct(int(task), values, msg_id, stream)
            else:
                targets = self._collector.emit(values, msg_id, stream)
                if msg.get("need_task_ids", True) is not False:
                    proc.send(self._serializer.encode(targets))
        elif not self._handle_shared(msg, command, self._collector.report_error):
            raise ProtocolError(f"unknown command {command!r}")
        return False

    def _fault(self, proc: ShellProcess, reason: str) -> None:
        """The process is lost: report it naming the component and start another."""
        error = self._error(reason)
        self._log.error("%s", error.message)
        self._collector.report_error(error)
        self._process = None
        proc.kill()
        self._restart()

    def _restart(self) -> bool:
        try:
            self._process = self._launch()
        except ShellProcessError as exc:
            self._failures += 1
            self._restart_at = self._clock.now() + min(MAX_RESTART_BACKOFF, 0.5 * 2 ** self._failures)
            self._log.error("%s", exc.message)
            self._collector.report_error(exc)
            return False
        self._failures = 0
        self._beat = Heartbeat(self._timeout, self._clock.now())
        return True
