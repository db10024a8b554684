"""The component base classes users extend: spouts, bolts, basic bolts, custom groupings, and the declarer.

Collectors handed to components are implemented by the runtime; here they are only described as Protocols.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from storm_py.api.tuple import DEFAULT_STREAM, Fields, Tuple

if TYPE_CHECKING:
    from storm_py.api.context import TopologyContext

Anchors = Tuple | Iterable[Tuple] | None


class SpoutOutputCollector(Protocol):
    """What a spout emits through."""

    def emit(self, values: Sequence[Any], msg_id: Any = None, stream: str = DEFAULT_STREAM) -> list[int]: ...

    def emit_batch(self, batch: Sequence[Sequence[Any]], msg_id: Any = None, stream: str = DEFAULT_STREAM) -> int: ...

    def emit_direct(
        self, task_id: int, values: Sequence[Any], msg_id: Any = None, stream: str = DEFAULT_STREAM
    ) -> None: ...

    def get_pending_count(self) -> int: ...

    def report_error(self, exc: BaseException) -> None: ...


class OutputCollector(Protocol):
    """What a rich bolt emits, acks and fails through."""

    def emit(self, values: Sequence[Any], anchors: Anchors = None, stream: str = DEFAULT_STREAM) -> list[int]: ...

    def emit_direct(
        self, task_id: int, values: Sequence[Any], anchors: Anchors = None, stream: str = DEFAULT_STREAM
    ) -> None: ...

    def ack(self, tup: Tuple) -> None: ...

    def fail(self, tup: Tuple) -> None: ...

    def reset_timeout(self, tup: Tuple) -> None: ...

    def report_error(self, exc: BaseException) -> None: ...


class BasicOutputCollector(Protocol):
    """What a basic bolt emits through: every emit is anchored to the current input."""

    def emit(self, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> list[int]: ...

    def emit_direct(self, task_id: int, values: Sequence[Any], stream: str = DEFAULT_STREAM) -> None: ...

    def report_error(self, exc: BaseException) -> None: ...


@runtime_checkable
class ArrowSchema(Protocol):
    """An Arrow schema (a ``pyarrow.Schema``): column names, and the Arrow C data interface of its types."""

    @property
    def names(self) -> list[str]: ...

    def __arrow_c_schema__(self) -> object: ...


class OutputFieldsDeclarer:
    """Collects the streams a component declares in ``declare_output_fields``.

    A columnar stream (``columnar=True``, or ``fields`` given as a ``pyarrow.Schema``) carries batches of rows;
    ``columnar`` maps each such stream to its declared schema (``None`` when only column names were declared).
    """

    def __init__(self) -> None:
        self.streams: dict[str, tuple[Fields, bool]] = {}
        self.columnar: dict[str, ArrowSchema | None] = {}

    def declare(self, fields: Fields | Sequence[str] | ArrowSchema, stream: str = DEFAULT_STREAM,
                direct: bool = False, columnar: bool | None = None) -> None:
        """Declare ``stream`` (default ``"default"``) with ``fields``; ``direct`` makes it a direct stream and
        ``columnar`` a stream of batches (``None``: columnar exactly when ``fields`` is a ``pyarrow.Schema``)."""
        self.declare_stream(stream, fields, direct, columnar)

    def declare_stream(self, stream_id: str, fields: Fields | Sequence[str] | ArrowSchema, direct: bool = False,
                       columnar: bool | None = None) -> None:
        """Declare the stream ``stream_id`` with ``fields`` (see :meth:`declare`)."""
        if not isinstance(stream_id, str) or not stream_id:
            raise ValueError(f"stream id must be a non-empty string, got {stream_id!r}")
        if stream_id in self.streams:
            raise ValueError(f"stream {stream_id!r} is declared twice")
        if columnar is not None and not isinstance(columnar, bool):
            raise ValueError(f"columnar of stream {stream_id!r} must be True, False or None, got {columnar!r}")
        schema: ArrowSchema | None = None
        if isinstance(fields, ArrowSchema):
            if columnar is False:
                raise ValueError(f"stream {stream_id!r} is declared with a pyarrow.Schema and columnar=False")
            schema = fields
            names = Fields(list(fields.names))
        else:
            names = fields if isinstance(fields, Fields) else Fields(list(fields))
        self.streams[stream_id] = (names, bool(direct))
        if schema is not None or columnar:
            self.columnar[stream_id] = schema


@runtime_checkable
class Configured(Protocol):
    """A component with configuration of its own (every :class:`Component` has it)."""

    def get_component_configuration(self) -> dict[str, Any] | None: ...


def own_configuration(component: Any) -> dict[str, Any] | None:
    """``component``'s own configuration, ``None`` when it declares none (for a wrapper passing on its user's)."""
    return component.get_component_configuration() if isinstance(component, Configured) else None


@runtime_checkable
class RunsInWrapper(Protocol):
    """A bolt that runs inside a bolt of the system's (a windowed bolt inside its window executor): the builder
    puts it there when the bolt is set."""

    def topology_bolt(self) -> Any: ...


class Component:
    """What spouts and bolts have in common."""

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """Declare output streams; the default declares none."""

    def get_component_configuration(self) -> dict[str, Any] | None:
        """Component-specific configuration (Storm's whitelist of keys applies at run time)."""
        return None


class Spout(Component):
    """Storm's ``BaseRichSpout``: one thread calls every method, never concurrently; ``next_tuple`` must not block."""

    def open(self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector) -> None:
        """Called once when the task starts (for a topology submitted inactive: at its first activation)."""

    def next_tuple(self) -> None:
        """Emit zero or more tuples; called again and again while the topology is active."""

    def ack(self, msg_id: Any) -> None:
        """The tuple tree of ``msg_id`` was fully processed."""

    def fail(self, msg_id: Any) -> None:
        """The tuple tree of ``msg_id`` failed or timed out."""

    def activate(self) -> None:
        """The topology became active."""

    def deactivate(self) -> None:
        """The topology became inactive: ``next_tuple`` is no longer called."""

    def close(self) -> None:
        """The task is shutting down (not guaranteed to be called)."""


class Bolt(Component):
    """Storm's ``BaseRichBolt``: ack or fail every input through the collector."""

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        """Called once when the task starts."""

    def execute(self, tup: Tuple) -> None:
        """Process one input tuple."""

    def cleanup(self) -> None:
        """The task is shutting down (not guaranteed to be called)."""


class BasicBolt(Component):
    """Storm's ``BaseBasicBolt``: emits are anchored to the input, which is acked when ``execute`` returns.

    Raise :class:`~storm_py.errors.FailedException` to fail the input instead.
    """

    def prepare(self, conf: dict[str, Any], context: TopologyContext) -> None:
        """Called once when the task starts."""

    def execute(self, tup: Tuple, collector: BasicOutputCollector) -> None:
        """Process one input tuple."""

    def cleanup(self) -> None:
        """The task is shutting down (not guaranteed to be called)."""


class CustomStreamGrouping:
    """A user-defined grouping: ``prepare`` once with the target tasks, then ``choose_tasks`` per tuple."""

    def prepare(self, context: TopologyContext, stream: Any, target_tasks: list[int]) -> None:
        """Receive the sorted target task ids of the subscribing component."""

    def choose_tasks(self, task_id: int, values: list[Any]) -> list[int]:
        """The target tasks for one tuple emitted by ``task_id``."""
        raise NotImplementedError
