"""This module owns the opt-in in-process path: a pystorm bolt or spout class (``streamparse_run module.Class``)
run inside the executor instead of a process, with no serialization.

The component is pystorm's own object and runs its own code (``initialize``, ``process``, ``process_tick``,
``next_tuple``, ``ack``/``fail``, auto-anchor, auto-ack, auto-fail); only its serializer is swapped for
:class:`_Loopback`, which carries each multilang message straight to the collector: ``emit`` (anchors and ids
mapped to storm_py tuples; the target task ids handed back as the process would read them), ``ack``, ``fail``,
``log`` (to ``storm_py.multilang.COMPONENT``), ``error`` (the component's errors), ``sync``.  What differs from the
faithful process path: an exception in ``process`` fails the tuple and is reported (with ``auto_fail``) instead of
ending a process, and heartbeats are not needed.  Batching bolts (threads of their own) keep the process path.
"""

from __future__ import annotations

import importlib
import io
import logging
import sys
from itertools import count
from typing import Any

from storm_py.api.components import Bolt, OutputCollector, Spout, SpoutOutputCollector
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import DEFAULT_STREAM, Tuple
from storm_py.errors import ShellProcessError
from storm_py.multilang.handshake import context_json
from storm_py.multilang.process import component_logger
from storm_py.multilang.shell import LOG_LEVELS


def load_class(target: str, src: str) -> Any:
    """``module.Class`` imported with ``src`` first on ``sys.path`` (as ``streamparse_run`` does from ``src/``)."""
    if src not in sys.path:
        sys.path.insert(0, src)
    module, _, name = target.rpartition(".")
    return getattr(importlib.import_module(module), name)


def runs_in_process(target: str, src: str) -> bool:
    """Whether ``target`` is a pystorm bolt or spout this module can run (batching bolts are not)."""
    from pystorm.bolt import BatchingBolt
    from pystorm.bolt import Bolt as PystormBolt
    from pystorm.spout import Spout as PystormSpout

    cls = load_class(target, src)
    return isinstance(cls, type) and (issubclass(cls, PystormSpout) or (
        issubclass(cls, PystormBolt) and not issubclass(cls, BatchingBolt)))


class _Loopback:
    """pystorm's serializer seam, carrying messages to the host component instead of a pipe."""

    output_stream = None

    def __init__(self, host: _InProcess) -> None:
        self.host = host
        #: pystorm's ``send_message`` lands straight in the host's handler
        self.send_message = host.handle

    def read_message(self) -> Any:
        raise ShellProcessError(f"in-process component {self.host.target} read from a process it does not have")


class _InProcess:
    """What the in-process bolt and spout share: the pystorm object and its messages."""

    collector: Any

    def __init__(self, target: str, src: str, outputs: dict[str, tuple[list[str], bool]]) -> None:
        self.target = target
        self.src = src
        self.outputs = outputs

    def declare_output_fields(self, declarer: Any) -> None:
        for stream, (fields, direct) in self.outputs.items():
            declarer.declare_stream(stream, fields, direct=direct)

    def _start(self, conf: dict[str, Any], context: TopologyContext) -> None:
        self.log = component_logger(context.this_component_id)
        self.component_id = context.this_component_id
        # pystorm wraps its streams at construction; empty in-memory ones, replaced by the loopback at once
        obj = load_class(self.target, self.src)(io.BytesIO(), io.BytesIO(), rdb_signal=None)
        obj.serializer = _Loopback(self)
        root = logging.getLogger()
        before = list(root.handlers)
        ctx = context_json(context)
        obj._setup_component(conf, ctx)
        # pystorm's StormHandler goes on the component's logger, not the process's root: its records come back
        # as ``log`` messages, to ``storm_py.multilang.COMPONENT`` as from a process
        for handler in [h for h in root.handlers if h not in before]:
            root.removeHandler(handler)
            if not obj.logger.handlers:
                obj.logger.addHandler(handler)
        obj.logger.propagate = False
        self.obj = obj
        obj.initialize(conf, ctx)

    def handle(self, msg: dict[str, Any]) -> None:
        command = msg.get("command")
        if command == "emit":
            self._emit(msg)
        elif command in ("ack", "fail"):
            self._ack_fail(command, msg.get("id"))
        elif command == "log":
            level = msg.get("level", 2)
            self.log.log(LOG_LEVELS.get(level, logging.INFO) if isinstance(level, int) else logging.INFO, "%s",
                         msg.get("msg"))
        elif command == "error":
            self.collector.report_error(ShellProcessError(f"{self.component_id}: {msg.get('msg')}",
                                                          component=self.component_id))
        # sync, metrics: nothing to do here

    def _emit(self, msg: dict[str, Any]) -> None:
        raise NotImplementedError

    def _ack_fail(self, command: str, tup_id: Any) -> None:
        raise NotImplementedError

    def _answer(self, msg: dict[str, Any], task_ids: list[int] | None) -> None:
        if task_ids is not None and msg.get("need_task_ids", True) and "task" not in msg:
            self.obj._pending_task_ids.append(task_ids)


class InProcessPystormBolt(_InProcess, Bolt):
    """A pystorm bolt class run in the executor (see the module's docstring).

    Per input it builds pystorm's ``Tuple`` and calls ``process``; an emit anchored to one input goes to the
    collector with the input itself (its fast path), and pystorm's own auto-ack (a class that does not override
    ``ack``) acks the input directly rather than through an ``ack`` message: the same effect, fewer calls.
    """

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        from pystorm.bolt import Bolt as PystormBolt
        from pystorm.component import Tuple as PystormTuple

        self.collector = collector
        self.pending: dict[int, Tuple] = {}
        self.ids = count()
        self._start(conf, context)
        self._tuple_class = PystormTuple
        self._direct_ack = self.obj.auto_ack and type(self.obj).ack is PystormBolt.ack

    def execute(self, tup: Tuple) -> None:
        obj = self.obj
        tid = next(self.ids)
        pending = self.pending
        pending[tid] = tup
        kind = obj._source_tuple_types[tup.source_component].get(tup.source_stream)
        values = tuple(tup.values) if kind is None else kind(*tup.values)
        ptup = self._tuple_class(tid, tup.source_component, tup.source_stream, tup.source_task, values)
        obj._current_tups = [ptup]
        try:
            if tup.is_tick():
                obj.process_tick(ptup)
            else:
                obj.process(ptup)
            if self._direct_ack:
                if pending.pop(tid, None) is not None:
                    self.collector.ack(tup)
            elif obj.auto_ack:
                obj.ack(ptup)
        except Exception as exc:  # pystorm reports it and, with auto_fail, fails the tuple
            self.collector.report_error(exc)
            if obj.auto_fail:
                obj.fail(ptup)
        obj._current_tups = []

    def _emit(self, msg: dict[str, Any]) -> None:
        ids = msg.get("anchors")
        anchors: Tuple | list[Tuple] | None = None
        if ids:
            pending = self.pending  # one anchor goes as the tuple itself: the collector's fast path
            anchors = pending.get(ids[0]) if len(ids) == 1 else [pending[a] for a in ids if a in pending]
        values = msg["tuple"]
        if type(values) is not list:
            values = list(values)
        stream = msg.get("stream") or DEFAULT_STREAM
        if "task" in msg:
            self.collector.emit_direct(int(msg["task"]), values, anchors, stream)
        else:
            targets = self.collector.emit(values, anchors, stream)
            if msg.get("need_task_ids", True):
                self._answer(msg, targets)

    def _ack_fail(self, command: str, tup_id: Any) -> None:
        tup = self.pending.pop(tup_id, None)
        if tup is not None:
            (self.collector.ack if command == "ack" else self.collector.fail)(tup)


class InProcessPystormSpout(_InProcess, Spout):
    """A pystorm spout class run in the executor (see the module's docstring)."""

    def open(self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector) -> None:
        self.collector = collector
        self._start(conf, context)

    def next_tuple(self) -> None:
        self.obj.next_tuple()

    def ack(self, msg_id: Any) -> None:
        self.obj.ack(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.obj.fail(msg_id)

    def activate(self) -> None:
        self.obj.activate()

    def deactivate(self) -> None:
        self.obj.deactivate()

    def _emit(self, msg: dict[str, Any]) -> None:
        values = msg["tuple"]
        if type(values) is not list:
            values = list(values)
        stream = msg.get("stream") or DEFAULT_STREAM
        if "task" in msg:
            self.collector.emit_direct(int(msg["task"]), values, msg.get("id"), stream)
        else:
            targets = self.collector.emit(values, msg.get("id"), stream)
            if msg.get("need_task_ids", True):
                self._answer(msg, targets)

    def _ack_fail(self, command: str, tup_id: Any) -> None:
        self.log.warning("a spout sent %s %r, which only bolts send", command, tup_id)
