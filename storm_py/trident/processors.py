"""The per-operation processors a Trident bolt runs: each, filter, map, aggregate, join, merge, persist, query.

A processor is built when the stream is declared and copied into every task with its bolt.  Per batch the
bolt opens a :class:`~storm_py.trident.task.BatchRun` holding each processor's batch state;
``execute(run, parent, values)`` takes one tuple (its values in the parent's fields), ``finish(run)`` runs once
the batch is complete (in the order the operations were declared, so parents finish before their children), and
``emit(run, values)`` hands an output tuple to the processors of the same bolt that read it and, if other bolts
read it, onto the wire as ``[attempt, *values]`` on each of the processor's streams.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from storm_py.trident.task import BatchRun, TaskScope
from storm_py.trident.tuple import Schema, TridentTuple

#: ``Counter.update``'s loop (C): adds 1 to ``mapping[key]`` (0 when missing) for every key of ``iterable``
_count_into: Callable[[dict[Any, Any], Iterable[Any]], None] = collections._count_elements  # type: ignore[attr-defined]


class Processor:
    """A node of a Trident bolt; subclasses override ``execute`` (and ``start``/``finish`` to keep batch state)."""

    #: a short word for plans and logs
    kind = "op"

    def __init__(self, schema: Schema) -> None:
        #: the fields of this processor's output
        self.schema = schema
        #: (processor, parent index) of the same bolt that read this output
        self.children: list[tuple[Processor, int]] = []
        #: the streams this output is sent on to other bolts (one per repartition reading it)
        self.streams: list[str] = []
        #: this processor's position in its bolt (its batch state is ``run.states[slot]``)
        self.slot = 0
        #: ``(entry, parent index)`` of the children, bound per task by ``prepare``
        self.targets: list[tuple[Callable[[BatchRun, int, list[Any]], None], int]] = []

    def operations(self) -> list[Any]:
        """The user objects to ``prepare`` and ``cleanup`` with the task."""
        return []

    def prepare(self, task: TaskScope) -> None:
        """Once per task, before the first batch: bind the children's entry points."""
        self.targets = [(child.entry(), index) for child, index in self.children]
        for prepare in filter(None, (getattr(op, "prepare", None) for op in self.operations())):
            prepare(task.conf, task.context)

    def cleanup(self) -> None:
        """When the task shuts down."""
        for cleanup in filter(None, (getattr(op, "cleanup", None) for op in self.operations())):
            cleanup()

    def entry(self) -> Callable[[BatchRun, int, list[Any]], None]:
        """What a parent calls with each tuple (``execute``, or a specialised equivalent)."""
        return self.execute

    def count_sink(self, width: int) -> tuple[int, Callable[[Any], Any]] | None:
        """``(slot, key getter)`` when this processor counts its input by one key (``run.states[slot]``), for
        its only parent to count its emits (``width`` values short of ``prefix``) itself; else None."""
        return None

    def wire_entry(self, parent: int) -> Callable[[BatchRun, int, list[Any]], None] | None:
        """What the bolt may call as ``entry`` with each wire tuple (``[attempt, *values]``) instead, or None."""
        return None

    def start(self, run: BatchRun) -> Any:
        """The batch state of a new batch (None when the processor keeps none)."""
        return None

    def execute(self, run: BatchRun, parent: int, values: list[Any]) -> None:
        """Process one input tuple."""
        raise NotImplementedError

    def finish(self, run: BatchRun) -> None:
        """The batch is complete."""

    def execute_all(self, run: BatchRun, parent: int, rows: list[list[Any]]) -> None:
        """Process several input tuples (a processor that keeps them may take the list at once)."""
        for values in rows:
            self.execute(run, parent, values)

    def emit_all(self, run: BatchRun, rows: list[list[Any]]) -> None:
        """Send several output tuples on (what an aggregation emits when its batch completes)."""
        for child, index in self.children:
            child.execute_all(run, index, rows)
        if self.streams:
            attempt, emit = run.attempt, run.task.collector.emit
            for stream in self.streams:
                for values in rows:
                    emit([attempt, *values], None, stream)

    def emit(self, run: BatchRun, values: list[Any]) -> None:
        """Send one output tuple on."""
        for execute, index in self.targets:
            execute(run, index, values)
        if self.streams:
            self.send(run, values)

    def send(self, run: BatchRun, values: list[Any]) -> None:
        """Put one output tuple on the wire to the other bolts reading it."""
        wire = [run.attempt, *values]
        for stream in self.streams:
            run.task.emit(wire, stream)


class OperationCollector:
    """The collector operations emit through: each emit becomes ``prefix + values``."""

    def __init__(self, proc: Processor, prefix_width: list[str] | None = None) -> None:
        self.proc = proc
        self.run: BatchRun | None = None
        self.prefix: list[Any] = []
        #: the fields every prefix has (a function's input tuple), when fixed: lets a child take the emits in
        self.prefix_width = prefix_width
        #: the emits of one input tuple, when bound to a child counting them (``emit`` is then its ``append``)
        self.pending: list[Any] = []
        #: ``(slot, key getter)`` of that child (``Processor.count_sink``)
        self.sink: tuple[int, Callable[[Any], Any]] | None = None

    @property
    def discards(self) -> bool:
        """Nothing reads what is emitted here (an updater may then skip building its new values)."""
        return not self.proc.targets and not self.proc.streams

    def bind(self) -> None:
        """Once the targets are bound, with one child in the bolt and no other bolt reading: emit straight to it,
        into :attr:`pending` when the child counts by a key of the emits (``emit`` is the list's ``append``, no
        Python call per emit; counted after each input tuple), else to its entry point."""
        proc = self.proc
        self.pending, self.sink = [], None
        if len(proc.targets) != 1 or proc.streams:  # the class's emit
            self.__dict__.pop("emit", None)
            return
        ((entry, index),) = proc.targets
        child = proc.children[0][0]
        self.sink = child.count_sink(len(self.prefix_width)) if self.prefix_width is not None else None
        if self.sink is not None:
            self.emit = self.pending.append  # type: ignore[method-assign, assignment]
            return

        def emit(values: Sequence[Any]) -> None:
            entry(self.run, index, [*self.prefix, *values])  # type: ignore[arg-type]

        self.emit = emit  # type: ignore[method-assign]

    def emit(self, values: Sequence[Any]) -> None:
        out = [*self.prefix, *values]
        proc, run = self.proc, self.run
        assert run is not None
        for execute, index in proc.targets:
            execute(run, index, out)
        if proc.streams:
            proc.send(run, out)

    def report_error(self, exc: BaseException) -> None:
        assert self.run is not None
        self.run.task.report_error(exc)


class ProjectingProcessor(Processor):
    """A processor whose operation sees its input projected to ``in_positions``."""

    def __init__(self, schema: Schema, in_schema: Schema, in_positions: list[int]) -> None:
        super().__init__(schema)
        self.in_schema = in_schema
        self.in_positions = in_positions
        self.collector = OperationCollector(self)
        #: the projection as a slice when the positions are consecutive (the common case: one field)
        first = in_positions[0] if in_positions else 0
        consecutive = in_positions == list(range(first, first + len(in_positions)))
        self.span = (first, first + len(in_positions)) if consecutive else None

    def prepare(self, task: TaskScope) -> None:
        super().prepare(task)
        self.collector.bind()

    def project(self, values: list[Any]) -> TridentTuple:
        span = self.span
        if span is not None:
            return self.in_schema.make(values[span[0]:span[1]])
        return self.in_schema.make([values[i] for i in self.in_positions])


class EachProcessor(ProjectingProcessor):
    """``each(in_fields, function, out_fields)``: what the function emits is appended to the input."""

    kind = "each"

    def __init__(self, schema: Schema, in_schema: Schema, in_positions: list[int], function: Any,
                 parent_fields: list[str] | None = None) -> None:
        super().__init__(schema, in_schema, in_positions)
        self.function = function
        self.collector = OperationCollector(self, parent_fields)

    def operations(self) -> list[Any]:
        return [self.function]

    def execute(self, run: BatchRun, parent: int, values: list[Any]) -> None:
        collector = self.collector
        collector.run = run
        collector.prefix = values
        span = self.span  # ``project``, inlined: this runs per tuple
        if span is not None:
            tup = self.in_schema.make(values[span[0]:span[1]])
        else:
            tup = self.in_schema.make([values[i] for i in self.in_positions])
        try:
            self.function.execute(tup, collector)
        finally:
            pending = collector.pending
            if pending:  # emits the child counts: count them, as emitted
                slot, key = collector.sink  # type: ignore[misc]
                _count_into(run.states[slot], map(key, pending))
                pending.clear()

    def wire_entry(self, parent: int) -> Callable[[BatchRun, int, list[Any]], None] | None:
        """With the emits counted here (no prefix kept), the projection reads the wire tuple itself."""
        collector, span = self.collector, self.span
        sink = collector.sink
        if sink is None or span is None:
            return None
        execute, make, pending = self.function.execute, self.in_schema.make, collector.pending
        slot, key = sink
        first, end = span[0] + 1, span[1] + 1

        def each(run: BatchRun, parent: int, values: list[Any]) -> None:
            collector.run = run
            try:
                execute(make(values[first:end]), collector)
            finally:
                if pending:
                    _count_into(run.states[slot], map(key, pending))
                    pending.clear()

        return each


class FilterProcessor(ProjectingProcessor):
    """``filter(in_fields, filter)``: keeps the tuples the filter keeps."""

    kind = "filter"

    def __init__(self, schema: Schema, in_schema: Schema, in_positions: list[int], filter: Any) -> None:
        super().__init__(schema, in_schema, in_positions)
        self.filter = filter

    def operations(self) -> list[Any]:
        return [self.filter]

    def execute(self, run: BatchRun, parent: int, values: list[Any]) -> None:
        if self.filter.is_keep(self.project(values)):
            self.emit(run, values)


class MapProcessor(Processor):
    """``map`` (one output per input), ``flat_map`` (any number) and ``peek`` (the input, after a look)."""

    def __init__(self, schema: Schema, in_schema: Schema, function: Any, kind: str) -> None:
        super().__init__(schema)
        self.in_schema = in_schema
        self.kind = kind
        method = {"map": "execute", "flat_map": "execute", "peek": "accept"}[kind]
        self.function = function
        self.call = getattr(function, method, None) or function

    def operations(self) -> list[Any]:
        return [self.function]

    def execute(self, run: BatchRun, parent: int, values: list[Any]) -> None:
        tup = self.in_schema.make(values)
        if self.kind == "map":
            self.emit(run, self._checked(self.call(tup)))
        elif self.kind == "flat_map":
            for out in self.call(tup):
                self.emit(run, self._checked(out))
        else:
            self.call(tup)
            self.emit(run, values)

    def _checked(self, out: Any) -> list[Any]:
        values = list(out)
        if len(values) != len(self.schema.fields):
            raise ValueError(
                f"{self.kind} returned {values!r}: {len(values)} values for the fields {list(self.schema.fields)}"
            )
        return values


class ProjectProcessor(Processor):
    """``project(fields)`` (and the renaming side of ``merge``)."""

    kind = "project"

    def __init__(self, schema: Schema, positions: list[int]) -> None:
        super().__init__(schema)
        self.positions = positions

    def execute(self, run: BatchRun, parent: int, values: list[Any]) -> None:
        self.emit(run, [values[i] for i in self.positions])


class MergeProcessor(Processor):
    """``merge(*streams)``: every input tuple passes, under the first stream's field names."""

    kind = "merge"

    def execute(self, run: BatchRun, parent: int, values: list[Any]) -> None:
        self.emit(run, values)


class JoinProcessor(Processor):
    """``join``: an inner join of two streams within a batch, emitting ``key + left rest + right rest``."""

    kind = "join"

    def __init__(self, schema: Schema, keys: tuple[list[int], list[int]], rests: tuple[list[int], list[int]]) -> None:
        super().__init__(schema)
        self.keys = keys
        self.rests = rests

    def start(self, run: BatchRun) -> Any:
        return {}

    def execute(self, run: BatchRun, parent: int, values: list[Any]) -> None:
        table: dict[tuple[Any, ...], tuple[list[list[Any]], list[list[Any]]]] = run.states[self.slot]
        key = tuple(values[i] for i in self.keys[parent])
        sides = table.get(key)
        if sides is None:
            sides = table[key] = ([], [])
        sides[parent].append([values[i] for i in self.rests[parent]])

    def finish(self, run: BatchRun) -> None:
        for key, (lefts, rights) in run.states[self.slot].items():
            for left in lefts:
                for right in rights:
                    self.emit(run, [*key, *left, *right])


class PersistProcessor(ProjectingProcessor):
    """``partition_persist``: the batch's tuples go to the updater in the commit phase, between the state's
    ``begin_commit(txid)`` and ``commit(txid)``; what the updater emits is the new-values stream."""

    kind = "persist"

    def __init__(
        self, schema: Schema, in_schema: Schema, in_positions: list[int], state_id: int, updater: Any
    ) -> None:
        super().__init__(schema, in_schema, in_positions)
        self.state_id = state_id
        self.updater = updater
        #: the updater takes the batch as value lists (``update_rows``, read by position: a built-in one)
        self.rows = callable(getattr(updater, "update_rows", None))

    def operations(self) -> list[Any]:
        return [self.updater]

    def start(self, run: BatchRun) -> Any:
        return []

    def execute(self, run: BatchRun, parent: int, values: list[Any]) -> None:
        projected = self.project(values)
        run.states[self.slot].append(projected.values if self.rows else projected)

    def execute_all(self, run: BatchRun, parent: int, rows: list[list[Any]]) -> None:
        span, schema = self.span, self.in_schema
        if self.rows:
            if span is not None and span[0] == 0:  # read by position: fields after the span are never read
                run.states[self.slot].extend(rows)
            else:
                run.states[self.slot].extend(self.project(values).values for values in rows)
        elif span is None:
            run.states[self.slot].extend(self.project(values) for values in rows)
        else:
            first, end = span
            make = schema.make
            run.states[self.slot].extend([make(values[first:end]) for values in rows])

    def finish(self, run: BatchRun) -> None:
        state = run.task.states[self.state_id]
        txid = run.attempt.transaction_id
        collector = self.collector
        collector.run = run
        collector.prefix = []
        begin_attempt = getattr(state, "begin_attempt", None)
        if begin_attempt is not None:  # a state that tells attempts apart (e.g. ParquetState)
            begin_attempt(run.attempt)
        state.begin_commit(txid)
        if self.rows:
            self.updater.update_rows(state, run.states[self.slot], collector)
        else:
            self.updater.update_state(state, run.states[self.slot], collector)
        state.commit(txid)


class QueryProcessor(ProjectingProcessor):
    """``state_query``: the batch's tuples are looked up together (``batch_retrieve``), then each result is
    handed to ``execute`` whose emits are appended to the tuple."""

    kind = "query"

    def __init__(
        self, schema: Schema, in_schema: Schema, in_positions: list[int], state_id: int, function: Any
    ) -> None:
        super().__init__(schema, in_schema, in_positions)
        self.state_id = state_id
        self.function = function

    def operations(self) -> list[Any]:
        return [self.function]

    def start(self, run: BatchRun) -> Any:
        return []

    def execute(self, run: BatchRun, parent: int, values: list[Any]) -> None:
        run.states[self.slot].append(values)

    def finish(self, run: BatchRun) -> None:
        inputs: list[list[Any]] = run.states[self.slot]
        if not inputs:
            return
        tuples = [self.project(v) for v in inputs]
        results = self.function.batch_retrieve(run.task.states[self.state_id], tuples)
        if len(results) != len(tuples):
            raise ValueError(
                f"{type(self.function).__name__}.batch_retrieve returned {len(results)} results "
                f"for {len(tuples)} tuples"
            )
        collector = self.collector
        collector.run = run
        for values, tup, result in zip(inputs, tuples, results, strict=True):
            collector.prefix = values
            self.function.execute(tup, result, collector)

