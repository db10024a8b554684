"""This module owns what runs a :class:`~storm_py.stateful.api.windowed_bolt.BaseStatefulWindowedBolt` in a topology:
:class:`StatefulWindowedBolt`, a stateful bolt (so the wiring wraps it in Storm's stateful executor, which holds
its acks until a checkpoint commits) around a window executor, and the pure :class:`ReplayTracker`.

Without persistence (Storm's ``StatefulWindowedBoltExecutor``): window tuples are acked when they expire, and
the executor keeps, per input (source task, component, stream), the greatest message id expired and evaluated,
saved in a second state (``<component>-<task>-window``) with each checkpoint.  At start and after a rollback
the window is rebuilt from the replay: a tuple whose id is at or below the last expired one is acked and
dropped, one at or below the last evaluated one joins the window without evaluations (its effect is in the
restored state), and the last evaluated one (or the first one beyond it) ends the recovery of its input;
tuples of inputs already recovered wait until every input is.

With persistence (Storm's ``PersistentWindowedBoltExecutor``): every input is acked at once (held until the
checkpoint that saves it commits), the window's events are saved in partitions of ``max_events_in_memory`` in
the window state at each prepare, restored at start and after a rollback; emits are not anchored.

Either way, a window whose ``execute`` raises fails the next checkpoint, so the topology rolls back to the last
committed one and replays what came after.
"""

from __future__ import annotations

import logging
from typing import Any, Final, Protocol

from storm_py.api.components import OutputCollector, OutputFieldsDeclarer
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Fields, Tuple
from storm_py.errors import FailedException
from storm_py.stateful.api.bolt import BaseStatefulBolt
from storm_py.stateful.state.key_value import KeyValueState
from storm_py.stateful.state.providers import new_state, state_namespace
from storm_py.windowing.events import Event, Expiry, Step
from storm_py.windowing.executor import WindowedBoltExecutor, WindowedComponent
from storm_py.windowing.watermarks import WatermarkGenerator

log = logging.getLogger(__name__)

# what the tracker says of a tuple while its input recovers
DROP: Final = "drop"  # expired before the failure: ack it, it is not in any window again
REPLAY: Final = "replay"  # evaluated before the failure: into the window, no evaluation for it
LAST: Final = "last"  # the last one evaluated before the failure: into the window, then the input is recovered
HOLD: Final = "hold"  # new, while another input still recovers: keep it until every input is recovered
PROCESS: Final = "process"  # new and nothing recovers: the usual path
#: the keys of the persisted window (in the window state)
PARTITIONS_KEY: Final = "$partitions"
#: the component key naming the field that holds each input tuple's message id (Storm's)
MESSAGE_ID_FIELD: Final = "topology.bolts.message.id.field.name"


class StatefulWindowedComponent(WindowedComponent, Protocol):
    """What runs here: a :class:`~storm_py.stateful.api.windowed_bolt.BaseStatefulWindowedBolt` (a windowed bolt
    with its state hooks and persistence settings)."""

    def is_persistent(self) -> bool: ...

    def max_events_in_memory(self) -> int: ...

    def message_id_field(self) -> str | None: ...

    def init_state(self, state: KeyValueState) -> None: ...

    def pre_prepare(self, txid: int) -> None: ...

    def pre_commit(self, txid: int) -> None: ...

    def pre_rollback(self) -> None: ...

Input = tuple[int, str, str]  # (source task, source component, source stream)


def input_of(tup: Tuple) -> Input:
    """The input a tuple came on: its source task, component and stream."""
    return (tup.source_task, tup.source_component, tup.source_stream)


class ReplayTracker:
    """Per input, the greatest message id expired and evaluated (the saved marks) and, while recovering, the
    marks restored from the last checkpoint (Storm's recovery states)."""

    def __init__(self) -> None:
        self.marks: dict[Input, list[int | None]] = {}
        self.recovering: dict[Input, tuple[int | None, int | None]] = {}

    def restore(self, saved: dict[Input, tuple[int | None, int | None]]) -> None:
        """Start recovering from the marks of the last checkpoint."""
        self.marks = {k: [e, v] for k, (e, v) in saved.items()}
        self.recovering = dict(saved)

    def is_recovering(self) -> bool:
        """Whether some input still replays what was evaluated before."""
        return bool(self.recovering)

    def decide(self, source: Input, msg_id: int) -> str:
        """What to do with a tuple of ``source`` with ``msg_id`` (see the module's constants)."""
        marks = self.recovering.get(source)
        if marks is None:
            return HOLD if self.recovering else PROCESS
        expired, evaluated = marks
        if expired is not None and msg_id <= expired:
            return DROP
        if evaluated is not None and msg_id < evaluated:
            return REPLAY
        if evaluated is not None and msg_id == evaluated:
            return LAST  # the caller ends the input's recovery (``recovered``) once the tuple is in the window
        self.recovered(source)  # a later one: this input is recovered
        return HOLD if self.recovering else PROCESS

    def recovered(self, source: Input) -> None:
        """``source`` replayed everything evaluated before the failure."""
        self.recovering.pop(source, None)

    def update(self, expired: list[tuple[Input, int]], evaluated: list[tuple[Input, int]]) -> None:
        """An evaluation: raise the marks of the inputs of its expired and new tuples."""
        for which, pairs in ((0, expired), (1, evaluated)):
            for source, msg_id in pairs:
                marks = self.marks.setdefault(source, [None, None])
                current = marks[which]
                if current is None or msg_id > current:
                    marks[which] = msg_id

    def saved(self) -> dict[Input, tuple[int | None, int | None]]:
        """The marks to save with a checkpoint."""
        return {k: (e, v) for k, (e, v) in self.marks.items()}


def tuple_image(event: Event[Tuple], ts: int, evaluated: bool) -> list[Any]:
    """What the persisted window keeps of one event (the codec carries it), with its timestamp ``ts`` in epoch ms
    (a processing-time window's restores on any host's clock)."""
    t = event.value
    return [t.values, t.fields.to_list(), t.source_component, t.source_stream, t.source_task, ts, evaluated]


def event_of(image: list[Any]) -> tuple[Tuple, int, bool]:
    """A saved event back: the tuple (no anchors: its tree completed when its checkpoint did), its timestamp (epoch
    ms) and whether the last evaluation saw it."""
    values, fields, component, stream, task, ts, evaluated = image
    return Tuple(list(values), Fields(list(fields)), component, stream, int(task), None), int(ts), bool(evaluated)


class _NoAck:
    """The collector of a persistent window: acks are the executor's (at once, held until commit)."""

    def __init__(self, delegate: Any) -> None:
        self.delegate = delegate

    def ack(self, tup: Tuple) -> None:
        """Ignored: the input was acked when it arrived."""

    def __getattr__(self, name: str) -> Any:
        if name == "delegate":
            raise AttributeError(name)
        return getattr(self.delegate, name)


class _WindowRunner(WindowedBoltExecutor):
    """The window executor inside a :class:`StatefulWindowedBolt`: its evaluations report to the owner."""

    def __init__(self, bolt: StatefulWindowedComponent, owner: StatefulWindowedBolt) -> None:
        super().__init__(bolt)
        self.owner = owner

    def apply(self, steps: list[Step[Tuple]]) -> None:
        collector, spec, owner = self.collector, self.spec, self.owner
        assert collector is not None and spec is not None
        for step in steps:
            if isinstance(step, Expiry):
                for tup in step.values:
                    collector.ack(tup)  # held until commit (persistent: ignored, acked on arrival)
                continue
            if owner.tracker.is_recovering():
                continue  # a window already evaluated before the failure: its effect is in the state
            window = self.window_of(step)
            collector.window = [] if owner.persistent else step.values
            try:
                self.bolt.execute(window)
            except Exception as exc:
                log.exception("stateful windowed bolt %s raised on %r", type(self.bolt).__name__, window)
                collector.report_error(exc)
                owner.broken = exc
            finally:
                collector.window = []
            owner.evaluated(step.expired, step.new)

    def reset(self) -> None:
        """An empty window, as at the start."""
        spec = self.spec
        assert spec is not None
        now = self.now()
        self.manager = spec.manager()
        self.manager.start(now)
        due = self.manager.next_due()
        self.due = float("inf") if due is None else due
        if self.watermarks is not None:
            self.watermarks = WatermarkGenerator(self.watermarks.streams, spec.lag_ms, spec.watermark_interval_ms)
            self.watermarks.start(now)


class StatefulWindowedBolt(BaseStatefulBolt):
    """A stateful windowed bolt as the stateful executor sees it (see the module docstring)."""

    @property
    def wrapped_component(self) -> Any:
        """The user's component this runs (what the runtime hands to it, e.g. credentials, goes there)."""
        return self.bolt

    def __init__(self, bolt: StatefulWindowedComponent) -> None:
        self.bolt = bolt
        self.persistent = bolt.is_persistent()
        self.partition_size = bolt.max_events_in_memory()
        self.runner = _WindowRunner(bolt, self)
        self.tracker = ReplayTracker()
        self.window_state: KeyValueState | None = None
        self.collector: Any = None
        self.id_field: str | None = None
        self.held: list[Tuple] = []
        self.initialized = False
        #: what a window's ``execute`` raised since the last rollback (fails the next checkpoint)
        self.broken: Exception | None = None

    # ---------------------------------------------------------------------------------- building the topology

    def get_component_configuration(self) -> dict[str, Any] | None:
        return self.runner.get_component_configuration()

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.check()
        self.runner.declare_output_fields(declarer)

    def check(self, conf: dict[str, Any] | None = None) -> None:
        """Without persistence the message id field must be set (``ValueError`` naming it)."""
        name = (conf or {}).get(MESSAGE_ID_FIELD) or self.bolt.message_id_field()
        if not self.persistent and not name:
            raise ValueError(
                f"stateful windowed bolt {type(self.bolt).__name__} needs a message id field ({MESSAGE_ID_FIELD}:"
                " with_message_id_field) unless it saves its window (with_persistence)"
            )

    # ---------------------------------------------------------------------------------------------- running

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.prepare_with_window_state(
            conf, context, collector, new_state(f"{state_namespace(context)}-window", conf, context)
        )

    def prepare_with_window_state(self, conf: dict[str, Any], context: TopologyContext, collector: Any,
                                  window_state: KeyValueState) -> None:
        """``prepare`` with a given window state (what unit tests call)."""
        self.check(conf)
        self.id_field = conf.get(MESSAGE_ID_FIELD) or self.bolt.message_id_field()
        self.collector = collector
        self.window_state = window_state
        self.runner.prepare(conf, context, _NoAck(collector) if self.persistent else collector)

    def message_id(self, tup: Tuple) -> int:
        """The message id of an input (``ValueError`` naming the field when it has none)."""
        name = self.id_field
        assert name is not None
        try:
            value = tup.values[tup.fields.index(name)]
        except ValueError:
            raise ValueError(
                f"tuple from {tup.source_component!r} on stream {tup.source_stream!r} has no message id field "
                f"{name!r} ({MESSAGE_ID_FIELD}; its fields: {tup.fields.to_list()})"
            ) from None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"message id field {name!r} of a tuple from {tup.source_component!r} must be an int,"
                             f" got {value!r}")
        return value

    def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            if not self.tracker.is_recovering():
                self.runner.execute(tup)
            return
        if self.persistent:
            self.runner.execute(tup)
            self.collector.ack(tup)  # held by the stateful executor until the checkpoint saving it commits
            return
        source = input_of(tup)
        decision = self.tracker.decide(source, self.message_id(tup))
        if decision == DROP:
            self.collector.ack(tup)
        elif decision == HOLD:
            self.held.append(tup)
        else:
            self.runner.execute(tup)
            if decision == LAST:
                self.tracker.recovered(source)
        if self.held and not self.tracker.is_recovering():
            held, self.held = self.held, []
            log.info("%s recovered its window: running %d held tuples", type(self.bolt).__name__, len(held))
            for t in held:
                self.runner.execute(t)

    def evaluated(self, expired: list[Tuple], new: list[Tuple]) -> None:
        """An evaluation happened: raise the saved marks (not needed with a persisted window)."""
        if not self.persistent:
            self.tracker.update([(input_of(t), self.message_id(t)) for t in expired],
                                [(input_of(t), self.message_id(t)) for t in new])

    def cleanup(self) -> None:
        self.runner.cleanup()

    # ---------------------------------------------------------------------------------------- the checkpoints

    def init_state(self, state: KeyValueState) -> None:
        if not self.initialized:
            self.initialized = True
            self.restore()
        self.bolt.init_state(state)

    def pre_prepare(self, txid: int) -> None:
        window_state = self.window_state
        assert window_state is not None
        if self.broken is not None:
            raise FailedException(
                f"stateful windowed bolt {type(self.bolt).__name__} raised in execute ({self.broken!r}): "
                f"checkpoint {txid} fails so the topology rolls back"
            )
        self.bolt.pre_prepare(txid)
        if self.persistent:
            self.save_window(window_state)
        else:
            for (task, component, stream), (expired, evaluated) in self.tracker.saved().items():
                window_state.put([task, component, stream], [expired, evaluated])
        window_state.prepare_commit(txid)

    def pre_commit(self, txid: int) -> None:
        self.bolt.pre_commit(txid)
        window_state = self.window_state
        assert window_state is not None
        if window_state.prepared_txid() == txid:
            window_state.commit(txid)

    def pre_rollback(self) -> None:
        self.bolt.pre_rollback()
        window_state = self.window_state
        assert window_state is not None
        window_state.rollback()
        if self.initialized:
            if not self.persistent:  # what is in the window was never acked: replay it with the rest
                manager = self.runner.manager
                assert manager is not None
                for event in manager.queue:
                    self.collector.fail(event.value)
                for t in self.held:
                    self.collector.fail(t)
                self.held = []
            self.restore()
        self.broken = None

    def restore(self) -> None:
        """The window as of the last commit: the saved events, or empty with the saved marks to recover."""
        window_state = self.window_state
        assert window_state is not None
        self.runner.reset()
        if self.persistent:
            manager = self.runner.manager
            assert manager is not None
            steps: list[Step[Tuple]] = []
            shift = self.runner.clock_ms(0)  # epoch ms back to the manager's ms, one shift for every saved event
            for image in self.load_window(window_state):
                tup, ts, evaluated = event_of(image)
                event = Event(tup, ts + shift)
                event.mark = 0 if evaluated else -1  # the next evaluation (mark 1) finds it new unless seen
                manager.queue.append(event)
                if manager.tracking:  # the policies count it again; a trigger only what came after the last
                    manager.eviction.track(event)  # evaluation (no evaluation is due for those: none was)
                    if not evaluated:
                        manager.trigger.track(event, manager, steps)
            if steps:
                self.runner.apply(steps)
            return
        saved: dict[Input, tuple[int | None, int | None]] = {}
        for key, value in window_state:
            if isinstance(key, list) and len(key) == 3:
                saved[(int(key[0]), str(key[1]), str(key[2]))] = (value[0], value[1])
        self.tracker.restore(saved)
        if saved:
            log.info("%s recovers its window from the marks %s", type(self.bolt).__name__, saved)

    def save_window(self, window_state: KeyValueState) -> None:
        """Write the window's events into ``window_state`` in partitions (the last evaluation's are marked)."""
        manager = self.runner.manager
        assert manager is not None
        last = manager.evaluations
        shift = self.runner.epoch_ms(0)  # the manager's ms to epoch ms, one shift for every event of this save
        images = [tuple_image(e, e.ts + shift, e.mark == last) for e in manager.queue]
        size = self.partition_size
        old = int(window_state.get(PARTITIONS_KEY, 0))
        count = (len(images) + size - 1) // size
        for i in range(count):
            window_state.put([PARTITIONS_KEY, i], images[i * size:(i + 1) * size])
        for i in range(count, old):
            window_state.delete([PARTITIONS_KEY, i])
        window_state.put(PARTITIONS_KEY, count)

    @staticmethod
    def load_window(window_state: KeyValueState) -> list[list[Any]]:
        """The saved events, in order."""
        images: list[list[Any]] = []
        for i in range(int(window_state.get(PARTITIONS_KEY, 0))):
            images.extend(window_state.get([PARTITIONS_KEY, i], []))
        return images
