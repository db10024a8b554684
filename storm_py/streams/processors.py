"""The processors: what each step of a generated bolt does to a value, fused into one chain of plain functions
per bolt (a value goes through every operation of the bolt by direct calls, no tuple in between).

:class:`Pipeline` builds the chain of one :class:`~storm_py.streams.planner.BoltPlan` from its steps (last step
first, so each function holds its successor), the entry function of each input stream, and the flushes that end
a window (windowed aggregations and joins emit then, upstream steps first).  Results leave through the
collector's ``emit`` the bolt gives it, anchored to the bolt's current anchors (:class:`Host`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Protocol

from storm_py.api.components import Anchors
from storm_py.api.tuple import Tuple
from storm_py.stateful.state.key_value import KeyValueState
from storm_py.streams import nodes as n
from storm_py.streams import planner as p
from storm_py.streams.aggregators import Count as CountAggregator
from storm_py.streams.operations import Aggregator, Updater
from storm_py.streams.planner import BoltPlan, Step

Sink = Callable[[Any], None]
#: a bolt collector's emit: (values, anchors, stream)
Emit = Callable[[list[Any], Anchors, str], Any]

#: a key with no state
_MISSING: Final = object()


class Host(Protocol):
    """The bolt running a pipeline: the anchors of what it emits now, and the state its ``init_state`` received
    (replaced after each recovery; ``None`` in a bolt without state)."""

    anchor: Anchors
    state: KeyValueState | None
    #: the event time (ms) of the value being processed, when the builder's windows use event time
    timestamp: int | None


def _nothing(value: Any) -> None:
    """The successor of a step whose results nothing consumes."""


def _fan(targets: list[Sink]) -> Sink:
    if not targets:
        return _nothing
    if len(targets) == 1:
        return targets[0]

    def fan(value: Any) -> None:
        for target in targets:
            target(value)

    return fan


class Pipeline:
    """The fused chain of one bolt: ``entries[(component, stream)](tuple)`` runs a tuple through, ``flush()`` ends
    a window."""

    def __init__(self, bolt: BoltPlan, emit: Emit, host: Host) -> None:
        self.holder = host
        self._emit = emit
        self._timestamp_field = bolt.timestamp_field
        self._flushes: list[tuple[int, Callable[[], None]]] = []
        ports: list[dict[int, Sink]] = [{} for _ in bolt.steps]
        feeds = [0] * len(bolt.steps)  # the edges into each step
        for each in bolt.steps:
            for fed, _ in each.children + [kid for kids in each.branch_children for kid in kids]:
                feeds[fed] += 1
        for _, entry_steps in bolt.entries.values():
            for fed, _ in entry_steps:
                feeds[fed] += 1
        for index in range(len(bolt.steps) - 1, -1, -1):
            step = bolt.steps[index]
            if step.kind == n.FLAT_MAP and step.output is None and len(step.children) == 1 \
                    and self._timestamp_field is None:
                then = bolt.steps[step.children[0][0]]
                if then.kind == n.MAP and then.output is not None and not then.children \
                        and feeds[step.children[0][0]] == 1:
                    ports[index] = {p.MAIN: self._flat_map_emitter(step.fn, then)}  # split-and-pair in one
                    continue
            targets = [ports[child][port] for child, port in step.children]
            if (step.output is not None and not targets and step.kind in (n.MAP, n.FLAT_MAP)
                    and self._timestamp_field is None):
                ports[index] = {p.MAIN: self._fused_emitter(step)}  # the common end of a bolt: one call less
                continue
            if step.output is not None:
                targets.append(self._emitter(step))
            ports[index] = self._build(index, step, _fan(targets), ports)
        self._flushes.sort(key=lambda item: item[0])
        self.entries: dict[tuple[str, str], Callable[[Tuple], None]] = {
            key: self._entry(how, _fan([ports[i][port] for i, port in steps]))
            for key, (how, steps) in bolt.entries.items()
        }

    def flush(self) -> None:
        """End the current window: every windowed step emits, upstream steps first."""
        for _, flush in self._flushes:
            flush()

    def _emitter(self, step: Step) -> Sink:
        emit, host, stream = self._emit, self.holder, step.output
        assert stream is not None
        if self._timestamp_field is not None:
            if step.pair:
                def emit_pair_at(pair: Any) -> None:
                    emit([pair[0], pair[1], host.timestamp], host.anchor, stream)

                return emit_pair_at

            def emit_value_at(value: Any) -> None:
                emit([value, host.timestamp], host.anchor, stream)

            return emit_value_at
        if step.pair:
            def emit_pair(pair: Any) -> None:
                emit([pair[0], pair[1]], host.anchor, stream)

            return emit_pair

        def emit_value(value: Any) -> None:
            emit([value], host.anchor, stream)

        return emit_value

    def _flat_map_emitter(self, flat: Callable[[Any], Any], step: Step) -> Sink:
        """A ``flat_map`` whose items go only to a ``map`` whose results all leave the bolt."""
        emit, host, stream, fn = self._emit, self.holder, step.output, step.fn
        assert stream is not None
        if step.pair:
            def flat_map_map_emit_pairs(value: Any) -> None:
                anchor = host.anchor
                for item in flat(value):
                    pair = fn(item)
                    emit([pair[0], pair[1]], anchor, stream)

            return flat_map_map_emit_pairs

        def flat_map_map_emit(value: Any) -> None:
            anchor = host.anchor
            for item in flat(value):
                emit([fn(item)], anchor, stream)

        return flat_map_map_emit

    def _fused_emitter(self, step: Step) -> Sink:
        """A ``map`` or ``flat_map`` whose results all leave the bolt: the function and the emit in one step."""
        emit, host, stream, fn = self._emit, self.holder, step.output, step.fn
        assert stream is not None
        if step.kind == n.MAP:
            if step.pair:
                def map_emit_pair(value: Any) -> None:
                    pair = fn(value)
                    emit([pair[0], pair[1]], host.anchor, stream)

                return map_emit_pair

            def map_emit(value: Any) -> None:
                emit([fn(value)], host.anchor, stream)

            return map_emit
        if step.pair:
            def flat_map_emit_pairs(value: Any) -> None:
                anchor = host.anchor
                for pair in fn(value):
                    emit([pair[0], pair[1]], anchor, stream)

            return flat_map_emit_pairs

        def flat_map_emit(value: Any) -> None:
            anchor = host.anchor
            for item in fn(value):
                emit([item], anchor, stream)

        return flat_map_emit

    def _entry(self, how: str, run: Sink) -> Callable[[Tuple], None]:
        """How a tuple of one input becomes a value (and, with event time, sets the timestamp)."""
        field = self._timestamp_field
        if field is not None:
            return _timed_entry(how, run, self.holder, field)
        if how == p.AS_TUPLE:
            return run
        if how == p.AS_PAIR:
            def pair_entry(tup: Tuple) -> None:
                values = tup.values
                key = values[0]
                run((_as_tuple(key) if key.__class__ is list else key, values[1]))

            return pair_entry

        def value_entry(tup: Tuple) -> None:
            run(tup.values[0])

        return value_entry

    def _build(self, index: int, step: Step, down: Sink, ports: list[dict[int, Sink]]) -> dict[int, Sink]:
        kind, fn = step.kind, step.fn
        if kind == n.MAP:
            def map_(value: Any) -> None:
                down(fn(value))

            return {p.MAIN: map_}
        if kind == n.FILTER:
            def filter_(value: Any) -> None:
                if fn(value):
                    down(value)

            return {p.MAIN: filter_}
        if kind == n.FLAT_MAP:
            def flat_map(value: Any) -> None:
                for item in fn(value):
                    down(item)

            return {p.MAIN: flat_map}
        if kind == n.PEEK:
            def peek(value: Any) -> None:
                fn(value)
                down(value)

            return {p.MAIN: peek}
        if kind == n.FOR_EACH:
            return {p.MAIN: fn}
        if kind == n.BRANCH:
            return {p.MAIN: _branch(fn, [_fan([ports[c][port] for c, port in kids]) for kids in step.branch_children])}
        if kind in (n.COMBINE, n.COMBINE_BY_KEY):
            entry, flush = _combine(fn, kind == n.COMBINE_BY_KEY, step.mode, down)
            if flush is not None:
                self._flushes.append((index, flush))
            return {p.MAIN: entry}
        if kind == n.JOIN:
            join = _Join(fn, step.arg, down)
            self._flushes.append((index, join.flush))
            return {p.MAIN: join.left, p.RIGHT_SIDE: join.right}
        if kind == n.UPDATE_STATE:
            return {p.MAIN: _update_state(fn, self.holder, down)}
        if kind == n.STATE_QUERY:
            return {p.MAIN: _state_query(self.holder, down)}
        return {p.MAIN: down}  # window, repartition, a branch's port: the values pass on


def _as_tuple(key: list[Any]) -> tuple[Any, ...]:
    """A key that crossed the wire as a list (the codec's tuples come back as lists) as the tuple it was."""
    return tuple(_as_tuple(k) if k.__class__ is list else k for k in key)


def _timed_entry(how: str, run: Sink, host: Host, field: str) -> Callable[[Tuple], None]:
    if how == p.AS_TUPLE:
        def tuple_entry(tup: Tuple) -> None:
            host.timestamp = tup.get_value_by_field(field) if tup.fields.contains(field) else None
            run(tup)

        return tuple_entry
    if how == p.AS_PAIR:
        def pair_entry(tup: Tuple) -> None:
            values = tup.values
            host.timestamp = values[-1]
            key = values[0]
            run((_as_tuple(key) if key.__class__ is list else key, values[1]))

        return pair_entry

    def value_entry(tup: Tuple) -> None:
        values = tup.values
        host.timestamp = values[-1]
        run(values[0])

    return value_entry


def _branch(predicates: list[Callable[[Any], Any]], downs: list[Sink]) -> Sink:
    routes = list(zip(predicates, downs, strict=True))

    def branch(value: Any) -> None:
        for predicate, down in routes:
            if predicate(value):
                down(value)
                return

    return branch


def _combine(agg: Aggregator, by_key: bool, mode: str, down: Sink) -> tuple[Sink, Callable[[], None] | None]:
    """The entry and, when windowed, the flush of an aggregation (global or per key)."""
    init, apply, merge, result = agg.init, agg.apply, agg.merge, agg.result
    accs: dict[Any, Any] = {}
    add = merge if mode == p.MERGE else apply
    out: Callable[[Any], Any] = (lambda acc: acc) if mode == p.PARTIAL else result
    if by_key:
        if mode == p.RUNNING and type(agg) is CountAggregator:  # count_by_key, the most common: no calls
            def count_by_key(pair: Any) -> None:
                key = pair[0]
                count = accs.get(key, 0) + 1
                accs[key] = count
                if down is not _nothing:
                    down((key, count))

            return count_by_key, None
        if mode == p.RUNNING and down is _nothing:  # nothing reads the results: keep the accumulators only
            def accumulate_by_key(pair: Any) -> None:
                key = pair[0]
                accs[key] = apply(accs[key] if key in accs else init(), pair[1])

            return accumulate_by_key, None
        if mode == p.RUNNING:
            def running_by_key(pair: Any) -> None:
                key = pair[0]
                acc = apply(accs[key] if key in accs else init(), pair[1])
                accs[key] = acc
                down((key, result(acc)))

            return running_by_key, None

        def add_by_key(pair: Any) -> None:
            key = pair[0]
            if key in accs:
                accs[key] = add(accs[key], pair[1])
            else:
                accs[key] = pair[1] if mode == p.MERGE else apply(init(), pair[1])

        def flush_by_key() -> None:
            items = list(accs.items())
            accs.clear()
            for key, acc in items:
                down((key, out(acc)))

        return add_by_key, flush_by_key
    if mode == p.RUNNING:
        def running(value: Any) -> None:
            acc = apply(accs[None] if None in accs else init(), value)
            accs[None] = acc
            down(result(acc))

        return running, None

    def add_global(value: Any) -> None:
        if None in accs:
            accs[None] = add(accs[None], value)
        else:
            accs[None] = value if mode == p.MERGE else apply(init(), value)

    def flush_global() -> None:
        if None in accs:
            down(out(accs.pop(None)))

    return add_global, flush_global


class _Join:
    """The values of both sides of a join within one window, combined when the window ends."""

    def __init__(self, joiner: Callable[[Any, Any], Any], kind: str, down: Sink) -> None:
        self.joiner = joiner
        self.kind = kind
        self.down = down
        self.lefts: dict[Any, list[Any]] = {}
        self.rights: dict[Any, list[Any]] = {}
        #: every key, in order of first arrival
        self.keys: dict[Any, None] = {}

    def left(self, pair: Any) -> None:
        key = pair[0]
        self.keys[key] = None
        self.lefts.setdefault(key, []).append(pair[1])

    def right(self, pair: Any) -> None:
        key = pair[0]
        self.keys[key] = None
        self.rights.setdefault(key, []).append(pair[1])

    def flush(self) -> None:
        lefts, rights, keys, kind, join, down = self.lefts, self.rights, self.keys, self.kind, self.joiner, self.down
        self.lefts, self.rights, self.keys = {}, {}, {}
        for key in keys:
            ls, rs = lefts.get(key), rights.get(key)
            if kind == n.CO_GROUP:
                down((key, join(ls or [], rs or [])))
                continue
            if ls is None:
                if kind not in (n.RIGHT, n.FULL):
                    continue
                ls = [None]
            if rs is None:
                if kind not in (n.LEFT, n.FULL):
                    continue
                rs = [None]
            for lv in ls:
                for rv in rs:
                    down((key, join(lv, rv)))


def _update_state(updater: Updater, holder: Host, down: Sink) -> Sink:
    init, apply = updater.init, updater.apply

    def update_state(pair: Any) -> None:
        state = holder.state
        assert state is not None, "a value before init_state"
        key = pair[0]
        current = state.get(key, _MISSING)
        new = apply(init() if current is _MISSING else current, pair[1])
        state.put(key, new)
        down((key, new))

    return update_state


def _state_query(holder: Host, down: Sink) -> Sink:
    def state_query(query: Any) -> None:
        state = holder.state
        assert state is not None, "a query before init_state"
        current = state.get(query, _MISSING)
        if current is not _MISSING:
            down((query, current))

    return state_query
