"""This module owns :class:`ShellBolt`: a bolt whose tuples are processed by another process over Storm's
multilang protocol.

Each input goes to the process as ``{"id", "comp", "stream", "task", "tuple"}`` under an id of the pending
ledger; the process answers with ``emit`` (anchored to pending ids; answered with the target task ids unless
``need_task_ids`` is false or the emit is direct), ``ack``, ``fail``, ``log``, ``error``, ``metrics`` and
``sync``.  Every second a heartbeat tuple (task -1, stream ``__heartbeat``) is sent; a process that says nothing
for ``topology.subprocess.timeout.secs`` is killed.  A process that exits, hangs, writes what is not the protocol
or sends what the bolt cannot carry out (an emit on an undeclared stream, an ack of an unknown id) is a fault:
the error, naming the component, goes to the topology's errors, every pending input is failed (so spouts replay
it) and a new process is started, as the runtime treats a bolt that raises; a process that will not start is
reported the same way and tried again, backing off up to 30 s, its inputs failed meanwhile.  As in Storm, at
most ``topology.shellbolt.max.pending`` inputs wait to be written to the process, and its stdin pipe bounds what
it holds unanswered: :meth:`ShellBolt.room` tells the executor how many more it takes now, and the rest waits in
the executor's inbox (``execute`` itself waits for the pipe should it be handed more).

The executor drives it on its own thread: ``execute`` queues what goes out, :meth:`ShellBolt.background_step`
(called on every pass of the worker loop, which the process's watcher thread wakes) writes it, reads what came back
and handles it; the per-tuple part of that (inputs, emits, acks) is :class:`~storm_py.multilang.traffic.BoltTraffic`.
"""

from __future__ import annotations

from typing import Any, Final

from storm_py.api.components import Bolt, OutputCollector
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Tuple
from storm_py.config.keys import setting
from storm_py.errors import ShellProcessError
from storm_py.multilang.ledger import Heartbeat, PendingLedger, write_room
from storm_py.multilang.process import WAIT_SLICE, Fault, ShellProcess
from storm_py.multilang.shell import MAX_PENDING_KEY, ShellComponent
from storm_py.multilang.traffic import BoltTraffic
from storm_py.multilang.wire import EncodeError

#: Storm's heartbeat stream and the task id its heartbeat tuples come from
HEARTBEAT_STREAM: Final = "__heartbeat"
SYSTEM_TASK: Final = -1
#: longest wait between attempts to start a process that would not start
MAX_RESTART_BACKOFF: Final = 30.0


class ShellBolt(ShellComponent, Bolt):
    """Storm's ``ShellBolt``: the process is ``[command, *args]``; subclass it to declare the output fields."""

    kind = "shell bolt"
    _shorthand = True  # its traffic carries out short emits and acks

    def __init__(self, command: str, *args: str) -> None:
        super().__init__(command, *args)
        self._wake: Any = None

    def bind_wake(self, wake: Any) -> None:
        """The worker loop's wake-up, called when the process wrote something."""
        self._wake = wake

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self._setup(conf, context)
        self._collector = collector
        self._max_pending = int(setting(conf, MAX_PENDING_KEY))
        self._ledger: PendingLedger[Tuple] = PendingLedger()
        self._traffic = BoltTraffic(self._ledger, self._serializer, collector, self._max_pending,
                                    self._execute_general, self._refused)
        self._outbuf = self._traffic.outbuf
        # the executor calls the compiled path itself, unless a subclass takes inputs or gives room its own way
        if type(self).execute is ShellBolt.execute and type(self).room is ShellBolt.room:
            self.execute = self._traffic.execute  # type: ignore[method-assign]
        self._failures = 0
        self._restart_at = 0.0
        self._process = None
        self._beat = self._heartbeat()
        # a process that cannot start is reported and tried again (backing off) rather than taking the worker
        # down: its inputs fail at once meanwhile, and the rest of the worker runs on
        self._restart(self._clock.now())

    # -------------------------------------------------------------------------------------------------- input

    def room(self) -> int:
        """How many more inputs may be queued now (:func:`~storm_py.multilang.ledger.write_room`; without a
        process: any number, each failed at once)."""
        proc = self._process
        if proc is None:
            return 1 << 30
        return write_room(self._max_pending, len(self._outbuf), bool(proc.unsent))

    def execute(self, tup: Tuple) -> None:
        # once prepared, the instance's ``execute`` is BoltTraffic.execute: this path where it has a process with
        # room, _execute_general otherwise
        self._execute_general(tup)

    def _execute_general(self, tup: Tuple) -> None:
        if (self._process is None or not self.room()) and not self._may_write(tup):
            return
        try:
            self._traffic.write(tup)
        except EncodeError as exc:
            self._refused(tup, exc)

    def _refused(self, tup: Tuple, exc: EncodeError) -> None:
        """``tup`` holds a value the format cannot carry: report it and fail ``tup``."""
        self._collector.report_error(self._error(f"cannot send a tuple of {tup.source_component!r} "
                                                 f"stream {tup.source_stream!r}: {exc.message}"))
        self._collector.fail(tup)

    def _may_write(self, tup: Tuple) -> bool:
        """With no process, or as many inputs out as may be: start a process or wait for an answer; whether
        ``tup`` can be written now (if not, it is failed: the spout replays it)."""
        if self._process is None:
            now = self._clock.now()
            if now < self._restart_at or not self._restart(now):
                self._collector.fail(tup)  # no process to run it
                return False
        if not self.room():  # handed more than room() allowed (a tick tuple, say): wait for the pipe
            self._wait_for_room()
            if self._process is None:
                self._collector.fail(tup)
                return False
        return True

    def _heartbeat(self) -> Heartbeat:
        """A new process's heartbeat deadlines (a gap in watching forgiven, except under simulated time)."""
        return Heartbeat(self._timeout, self._clock.now(), forgive_unwatched=not self._clock.simulated)

    def _busy(self) -> bool:
        """More than one input is out: the process goes on writing answers after the first."""
        return len(self._ledger) > 1

    def background_step(self, now: float) -> bool:
        """Write what ``execute`` queued, handle what the process wrote, send heartbeats, notice faults."""
        did = False
        proc = self._process
        if proc is None:
            return self._restart(now) if now >= self._restart_at else False
        self._beat.watched(now)
        if self._outbuf:
            self._flush(proc)
            did = True
        elif proc.unsent:
            proc.flush()
        if proc.may_read() and proc.read() and not proc.inbox:
            self._beat.stirred(now)  # part of a long message: bytes arriving are a sign of life
        if proc.inbox:
            self._drain(proc, now)
            did = True
            if self._outbuf and self._process is proc:  # task ids asked for: answered in this pass
                self._flush(proc)
        if self._process is proc:
            self._timers(proc, now)
            if self._clock.simulated and (len(self._ledger) or self._beat.outstanding):
                # simulated time must not run ahead of a process still working: the loop counts as busy
                # (LocalCluster advances the clock only when every worker is idle)
                return True
        return did

    def cleanup(self) -> None:
        proc = getattr(self, "_process", None)
        self._process = None
        traffic = getattr(self, "_traffic", None)
        if traffic is not None:
            traffic.unsent = None
        if proc is not None:
            proc.kill()

    # ------------------------------------------------------------------------------------------------ helpers

    def _flush(self, proc: ShellProcess) -> None:
        out = self._outbuf
        proc.send(out[0] if len(out) == 1 else b"".join(out))
        out.clear()

    def _wait_for_room(self) -> None:
        """Block (the executor's backpressure) until the process has read what was queued for it, handling its
        answers meanwhile."""
        clock = self._clock
        while not self.room():
            proc = self._process
            if proc is None:
                return
            if self._outbuf:
                self._flush(proc)
            elif proc.unsent:
                proc.flush()
            stirred = not proc.inbox and proc.wait(WAIT_SLICE)
            now = clock.now()
            self._beat.watched(now)
            if proc.inbox:
                self._drain(proc, now)
            elif stirred:
                self._beat.stirred(now)
            if self._process is proc:
                self._timers(proc, now)

    def _timers(self, proc: ShellProcess, now: float) -> None:
        beat = self._beat
        if beat.expired(now):
            self._fault(proc, f"answered nothing for {beat.silence(now):.1f} s (topology.subprocess.timeout.secs "
                              f"is {beat.timeout:g}): killed{proc.exit_info()}", now)
            return
        if beat.due(now):
            self._outbuf.append(self._serializer.encode({
                "id": "heartbeat", "comp": None, "stream": HEARTBEAT_STREAM, "task": SYSTEM_TASK, "tuple": [],
            }))
            self._flush(proc)

    def _drain(self, proc: ShellProcess, now: float) -> None:
        inbox = proc.inbox
        self._beat.heard(now)
        carry_out = self._traffic.carry_out  # the two messages of every tuple, emit and ack; then the rest here
        try:
            while inbox:
                msg = carry_out(inbox)
                if msg is None:
                    return
                if type(msg) is Fault:
                    self._fault(proc, msg.reason, now)
                    return
                self._handle(msg, msg.get("command"))
        except Exception as exc:  # the process asked for what cannot be done: Storm's ShellBolt dies here
            reason = exc.message if isinstance(exc, ShellProcessError) else f"{type(exc).__name__}: {exc}"
            self._fault(proc, reason, now)

    def _handle(self, msg: dict[str, Any], command: Any) -> None:
        if command == "fail":
            self._collector.fail(self._ledger.answer(msg.get("id"), "fail"))
        elif command == "sync":
            pass
        elif not self._handle_shared(msg, command, self._collector.report_error):
            self._log.warning("ignored a message with the unknown command %r", command)

    def _fault(self, proc: ShellProcess, reason: str, now: float) -> None:
        """The process is lost: report it naming the component, fail what was pending, start another."""
        error = self._error(reason)
        self._log.error("%s", error.message)
        self._collector.report_error(error)
        self._process = None
        self._traffic.unsent = None
        proc.kill()
        self._outbuf.clear()
        for tup in self._ledger.drain():
            self._collector.fail(tup)
        self._restart(now)

    def _restart(self, now: float) -> bool:
        """Start a new process; on failure report it and try again later (backing off)."""
        try:
            self._process = self._launch(self._wake)
        except ShellProcessError as exc:
            self._failures += 1
            self._restart_at = now + min(MAX_RESTART_BACKOFF, 0.5 * 2 ** self._failures)
            self._log.error("%s", exc.message)
            self._collector.report_error(exc)
            return False
        self._failures = 0
        self._beat = self._heartbeat()
        self._traffic.unsent = self._process.unsent  # the compiled execute writes while it is empty
        return True
