"""This module owns a shell bolt's per-tuple traffic: the inputs it writes to its process and the emits and acks
the process answers with.

:class:`BoltTraffic` is made by :class:`~storm_py.multilang.bolt.ShellBolt` in ``prepare`` (never copied with the
topology, so it is compiled with the hot modules): :meth:`BoltTraffic.write` queues an input under a new pending
id, :meth:`BoltTraffic.carry_out` carries out the ``emit`` and ``ack`` messages at the head of the process's
inbox and hands back the first other message (a ``fail``, ``log``, ``sync``... or a fault) for the bolt to
handle.  What the process asked for that cannot be done raises :class:`~storm_py.errors.ShellProcessError`.
:meth:`BoltTraffic.execute` is the bolt's ``execute`` while it has a process with room for the tuple (the
executor calls it directly: no interpreted frame per input), and hands every other case to the bolt.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from storm_py.api.tuple import DEFAULT_STREAM, Tuple
from storm_py.multilang.ledger import PendingLedger, write_room
from storm_py.multilang.msgpack_wire import MsgpackSerializer
from storm_py.multilang.wire import EncodeError, ProtocolError, Serializer, ShortEmit, quote
from storm_py.runtime.bolt_collectors import BoltCollector


class BoltTraffic:
    """A shell bolt's pending inputs, the bytes queued for its process, and its emits and acks."""

    def __init__(
        self,
        ledger: PendingLedger[Tuple],
        serializer: Serializer,
        collector: Any,
        max_pending: int,
        general: Callable[[Tuple], None],
        refused: Callable[[Tuple, EncodeError], None],
    ) -> None:
        self.ledger = ledger
        #: encoded messages for the process, written together by the bolt's next flush
        self.outbuf: list[bytes] = []
        #: the running process's bytes for stdin that its pipe held back (``ShellProcess.unsent``); None: no process
        self.unsent: bytearray | None = None
        self._max_pending = max_pending
        self._general = general
        self._refused = refused
        self._encode_tuple: Callable[[str, str, str, int, list[Any]], bytes] = serializer.encode_tuple
        self._encode: Callable[[Any], bytes] = serializer.encode
        self._emit: Callable[..., Any] = collector.emit
        self._emit_direct: Callable[..., Any] = collector.emit_direct
        self._ack: Callable[[Any], None] = collector.ack
        # the runtime's own collector and the msgpack serializer, when they are what was given, are called
        # directly (compiled: a C call, not a call through Python objects); anything else through the above
        self._collector = collector if type(collector) is BoltCollector else None
        self._msgpack = serializer if type(serializer) is MsgpackSerializer else None

    def execute(self, tup: Tuple) -> None:
        """A shell bolt's ``execute``: with a process and room for ``tup`` (see
        :func:`~storm_py.multilang.ledger.write_room`) write it here, else take the bolt's general path
        (``general``: start a process, wait for room, or fail ``tup``); a value the format cannot carry goes to
        ``refused``."""
        unsent = self.unsent
        if unsent is None or not write_room(self._max_pending, len(self.outbuf), bool(unsent)):
            self._general(tup)
            return
        try:
            self.write(tup)
        except EncodeError as exc:
            self._refused(tup, exc)

    def write(self, tup: Tuple) -> None:
        """Queue ``tup`` for the process under a new pending id; a value the format cannot carry raises
        :class:`EncodeError` (and ``tup`` is not pending)."""
        ledger = self.ledger
        tid = ledger.add(tup)
        packer = self._msgpack
        try:
            if packer is not None:
                data = packer.encode_tuple(tid, tup.source_component, tup.source_stream, tup.source_task, tup.values)
            else:
                data = self._encode_tuple(tid, tup.source_component, tup.source_stream, tup.source_task, tup.values)
        except EncodeError:
            ledger.discard(tid)
            raise
        self.outbuf.append(data)

    def carry_out(self, inbox: deque[Any]) -> Any:
        """Carry out the emits and acks at the head of ``inbox`` (maps, or short ones: see
        :func:`storm_py.multilang.msgpack_fast.scan`); return the first other message or fault, taken out of it
        (None: ``inbox`` is empty)."""
        ledger = self.ledger
        ack = self._ack
        collector = self._collector
        take = inbox.popleft
        while inbox:
            msg = take()
            kind = type(msg)
            if kind is tuple:  # a short emit (see msgpack_fast.scan): one anchor, the default stream, no task ids
                short: ShortEmit = msg
                tid = short[1]
                anchor = ledger.anchor_number(tid) if type(tid) is int else ledger.anchor(tid)
                if collector is not None:
                    collector.emit(short[0], anchor, DEFAULT_STREAM)
                else:
                    self._emit(short[0], anchor, DEFAULT_STREAM)
                continue
            if kind is int:  # a short ack: its id's number
                tup = ledger.answer_number(msg, "ack")
                if collector is not None:
                    collector.ack(tup)
                else:
                    ack(tup)
                continue
            if kind is str:  # a short ack: its id
                ack(ledger.answer(msg, "ack"))
                continue
            if kind is not dict:
                return msg
            command = msg.get("command")
            if command == "emit":
                self.emit(msg)
            elif command == "ack":
                ack(ledger.answer(msg.get("id"), "ack"))
            else:
                return msg
        return None

    def emit(self, msg: dict[str, Any]) -> None:
        """Carry out an ``emit``: anchored to the pending inputs it names, answered with the target task ids
        unless ``need_task_ids`` is false or it is direct."""
        values = msg.get("tuple")
        if not isinstance(values, list):
            raise ProtocolError(f"an emit needs a 'tuple' list, got {quote(repr(msg))}")
        stream = msg.get("stream") or DEFAULT_STREAM
        ids = msg.get("anchors")
        anchors: Tuple | list[Tuple] | None = None
        if ids:  # one anchor goes as the tuple itself: the collector's fast path
            ledger = self.ledger
            anchors = ledger.anchor(ids[0]) if type(ids) is list and len(ids) == 1 else ledger.anchors(ids)
        task = msg.get("task")
        if task:
            self._emit_direct(int(task), values, anchors, stream)
            return
        targets = self._emit(values, anchors, stream)
        if msg.get("need_task_ids", True) is not False:
            self.outbuf.append(self._encode(targets))
