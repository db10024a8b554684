"""This module owns the translation between a worker's batches and wire frames (pure: no sockets, no threads).

A worker hands remote traffic over as ``[(task, [items])]`` where an item is a :class:`Tuple` (bolt input)
or a short row of numbers (acker and spout ack traffic, see :mod:`storm_py.runtime.acker`).  One frame per
destination worker carries all of it, so a tuple crossing workers is encoded exactly once; the receiving side
rebuilds :class:`Tuple` objects with the stream's fields, the source component being derived from the source
task.  The frame layout itself belongs to :mod:`storm_py.protocol.messages`.

A frame comes from a socket, so the decoder trusts nothing in it: besides the layout (checked by the protocol),
every entry must fit its target (:class:`FrameTargets`) before the worker loop sees it — tuples only for bolt
tasks of this worker, from a component and stream the bolt subscribes to, with as many values as the stream has
fields (on a columnar stream: one batch of its columns); ack rows only for acker and spout tasks, of the length
and codes those read.  A frame with one entry that does not fit is rejected whole (:class:`CodecError`).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from storm_py.api.topology import ComponentSpec
from storm_py.api.tuple import Fields, Tuple, anchor_map, tuple_anchors
from storm_py.errors import CodecError
from storm_py.protocol.messages import (
    ACKER_ROW,
    ENTRY_KIND,
    ENTRY_TASK,
    FRAME_TUPLES,
    KIND_ACKER,
    KIND_ACKER_ROWS,
    KIND_TUPLES,
    TUPLE_IDS,
    TUPLE_SOURCE_TASK,
    TUPLE_STREAM,
    TUPLE_VALUES,
    acker_entry,
    acker_rows_entry,
    decode_frame,
    encode_batch,
    tuple_entry,
    tuples_entry,
)
from storm_py.runtime.acker import ACK, ACKED, FAIL, FAILED, INIT, RESET, RESET_TIMEOUT
from storm_py.runtime.transfer import Entries
from storm_py.vector.wire import batch_tuple_fits

log = logging.getLogger(__name__)


@dataclass
class Encoded:
    """One destination's frame, how many items it carries, and the items that could not be encoded."""

    frame: bytes | None
    count: int
    rejected: list[tuple[int, Any, CodecError]] = field(default_factory=list)


def _entry(task: int, item: Any) -> list[Any]:
    """One item as an entry of its own (used to single out what cannot be encoded)."""
    if type(item) is Tuple:
        flat: list[int] | None = None
        ids = tuple_anchors(item)
        if ids:
            flat = [x for pair in anchor_map(ids).items() for x in pair]
        return tuple_entry(task, item.source_stream, item.source_task, item.values, flat)
    # an acker/spout control row: a short tuple of ints (see storm_py.runtime.acker)
    return acker_entry(task, item)


def _runs(task: int, items: list[Any]) -> list[list[Any]]:
    """One entry per run of items: control rows together, tuples by (stream, source task)."""
    if not items:
        return []
    if type(items[0]) is not Tuple:
        return [acker_rows_entry(task, items)]
    out: list[list[Any]] = []
    stream: str | None = None
    source = -1
    values_list: list[Any] = []
    ids_list: list[Any] = []
    tuples: list[Tuple] = items  # one task's items are all tuples or all rows (compiled: native attribute reads)
    for t in tuples:
        if t.source_task != source or t.source_stream != stream:
            stream, source = t.source_stream, t.source_task
            values_list = []
            ids_list = []
            out.append(tuples_entry(task, stream, source, values_list, ids_list))
        # two anchor items per tuple: root and edge, or None and its {root: edge} map; none at all while the
        # run has no anchored tuple (filled in with None pairs once one comes, and at the end)
        root = t._root
        if root is not None or t._ids is not None:
            missing = 2 * len(values_list) - len(ids_list)
            if missing:
                ids_list.extend([None] * missing)
            if root is not None:
                ids_list.append(root)
                ids_list.append(t._edge)
            else:
                ids_list.append(None)
                ids_list.append(t._ids)
        values_list.append(t.values)
    for entry in out:
        values_list = entry[TUPLE_VALUES]
        ids_list = entry[TUPLE_IDS]
        if ids_list and len(ids_list) < 2 * len(values_list):
            ids_list.extend([None] * (2 * len(values_list) - len(ids_list)))
    return out


def encode_entries(src_worker: str, entries: Entries) -> Encoded:
    """Encode every item of ``entries`` into one frame; items that cannot be encoded are left out and named."""
    wire: list[list[Any]] = []
    count = 0
    for task, items in entries:
        wire.extend(_runs(task, items))
        count += len(items)
    try:
        return Encoded(encode_batch(src_worker, wire), count)
    except CodecError:
        pass
    # Something in the batch is not encodable: find it, keep the rest (the spout replays what is left out).
    kept: list[list[Any]] = []
    rejected: list[tuple[int, Any, CodecError]] = []
    for task, items in entries:
        for item in items:
            entry = _entry(task, item)
            try:
                encode_batch(src_worker, [entry])
            except CodecError as err:
                rejected.append((task, item, err))
                continue
            kept.append(entry)
    frame = encode_batch(src_worker, kept) if kept else None
    return Encoded(frame, len(kept), rejected)


#: Ack rows a spout task reads: ``(code, root, delta)``.
SPOUT_ROW_CODES = frozenset({ACKED, FAILED, RESET_TIMEOUT})
#: Row length an acker reads per code: INIT ``(code, root, xor, spout task)``, ACK ``(code, root, xor)``,
#: FAIL and RESET ``(code, root)`` (longer rows are tolerated for those two).
ACKER_ROW_LENGTHS = {INIT: 4, ACK: 3, FAIL: 2, RESET: 2}


@dataclass(frozen=True)
class FrameTargets:
    """What each task of one worker accepts from the wire (see the module docstring)."""

    spouts: frozenset[int]
    ackers: frozenset[int]
    #: bolt task -> the ``(source component, stream)`` pairs it subscribes to
    bolts: Mapping[int, frozenset[tuple[str, str]]]
    #: every spout task of the topology: the only valid task in an acker's INIT row
    all_spout_tasks: frozenset[int]

    @classmethod
    def of(
        cls,
        components: Mapping[str, ComponentSpec],
        task_to_component: Mapping[int, str],
        local_tasks: Iterable[int],
        acker_component: str,
    ) -> FrameTargets:
        """The targets of a worker running ``local_tasks`` of a topology of ``components``."""
        spouts: set[int] = set()
        ackers: set[int] = set()
        bolts: dict[int, frozenset[tuple[str, str]]] = {}
        for task in local_tasks:
            comp = task_to_component[task]
            spec = components[comp]
            if comp == acker_component:
                ackers.add(task)
            elif spec.is_spout:
                spouts.add(task)
            else:
                bolts[task] = frozenset(spec.inputs)
        all_spouts = frozenset(t for t, c in task_to_component.items() if components[c].is_spout)
        return cls(frozenset(spouts), frozenset(ackers), bolts, all_spouts)


def _rows_fit(task: int, rows: Collection[Any], targets: FrameTargets, where: str) -> None:
    """Raise unless every row is what task ``task`` (a spout or an acker) reads."""
    if task in targets.spouts:
        for row in rows:
            if len(row) != 3 or row[0] not in SPOUT_ROW_CODES:
                raise CodecError(f"{where}: ack row {row!r:.60} for spout task {task} is not (code, root, delta)",
                                 task=task)  # fmt: skip
        return
    if task in targets.ackers:
        lengths = ACKER_ROW_LENGTHS
        spout_tasks = targets.all_spout_tasks
        for row in rows:
            n = len(row)
            need = lengths.get(row[0]) if n else None
            if need is None or n < need or (need != 2 and n != need) or (need == 4 and row[3] not in spout_tasks):
                raise CodecError(f"{where}: ack row {row!r:.60} for acker task {task} is malformed", task=task)
        return
    if task in targets.bolts:
        raise CodecError(f"{where}: ack rows for bolt task {task}", task=task)
    # a task of another worker (moved by a rebalance): the runtime drops and counts it


class FrameDecoder:
    """Rebuilds the batches of a worker's frames, knowing which component each task belongs to.

    With ``targets`` (what a worker process passes) every entry is checked against its target task; without,
    only the layout and the source are (tests and benchmarks of the codec).
    """

    def __init__(
        self,
        task_to_component: Mapping[int, str],
        component_streams: Mapping[str, Mapping[str, Fields]],
        targets: FrameTargets | None = None,
        columnar: Collection[tuple[str, str]] = frozenset(),
    ) -> None:
        self._task_to_component = task_to_component
        self._component_streams = component_streams
        self._targets = targets
        #: the columnar streams ``(component, stream)``: each of their tuples is one batch of the stream's columns
        self._columnar = frozenset(columnar)

    def _tuples_fit(self, task: int, comp: str, stream: str, fields: Fields, values_list: list[Any],
                    src_worker: str | int) -> None:  # fmt: skip
        """Raise unless bolt task ``task`` subscribes to ``comp``/``stream`` and each tuple has every field."""
        targets = self._targets
        if targets is None:
            return
        inputs = targets.bolts.get(task)
        if inputs is None and task not in targets.spouts and task not in targets.ackers:
            return  # a task of another worker (moved by a rebalance): the runtime drops and counts it
        if inputs is None or (comp, stream) not in inputs:
            raise CodecError(
                f"frame from {src_worker!r}: tuples of {comp}/{stream} for task {task}, which does not subscribe "
                "to them in this worker",
                task=task, stream=stream,
            )  # fmt: skip
        if (comp, stream) in self._columnar:
            names = fields.to_list()
            for values in values_list:
                if not batch_tuple_fits(values, names):
                    raise CodecError(
                        f"frame from {src_worker!r}: a tuple of columnar stream {comp}/{stream} that is not one "
                        f"batch of the columns {names}", task=task, stream=stream)
            return
        n = len(fields)
        for values in values_list:
            if len(values) != n:
                raise CodecError(
                    f"frame from {src_worker!r}: a tuple of {comp}/{stream} with {len(values)} values for {n} fields",
                    task=task, stream=stream,
                )  # fmt: skip

    def _origin(self, src: int, stream: str, src_worker: str | int) -> tuple[str, Fields]:
        """Component and fields of tuples from task ``src`` on ``stream``; unknown ones reject the frame."""
        comp = self._task_to_component.get(src)
        fields = self._component_streams.get(comp, {}).get(stream) if comp is not None else None
        if comp is None or fields is None:
            raise CodecError(
                f"frame from {src_worker!r} holds tuples of unknown source task {src} or stream {stream!r}",
                source_task=src,
                stream=stream,
            )
        return comp, fields

    def decode(self, data: bytes) -> tuple[str | int, Entries, int]:
        """``(src_worker, entries, item count)`` of one frame; a bad frame raises :class:`CodecError`."""
        frame = decode_frame(data)
        if frame.frame_type != FRAME_TUPLES:
            raise CodecError(
                f"unexpected frame type {frame.frame_type} from {frame.src_worker!r} on a worker socket",
                frame_type=frame.frame_type,
            )
        out: Entries = []
        last_task: int | None = None
        batch: list[Any] = []
        count = 0
        items: list[Any]
        for entry in frame.payload:  # entries were checked when the frame was decoded
            task = entry[ENTRY_TASK]
            kind = entry[ENTRY_KIND]
            if kind == KIND_TUPLES:
                stream = entry[TUPLE_STREAM]
                src = entry[TUPLE_SOURCE_TASK]
                # both lists, as the protocol checked (typed: compiled code indexes them natively)
                values_list: list[Any] = entry[TUPLE_VALUES]
                ids_list: list[Any] = entry[TUPLE_IDS]
                comp, fields = self._origin(src, stream, frame.src_worker)
                if ids_list and len(ids_list) != 2 * len(values_list):
                    raise CodecError(f"frame from {frame.src_worker!r}: {len(values_list)} tuples, "
                                     f"{len(ids_list)} anchor items", task=task)  # fmt: skip
                self._tuples_fit(task, comp, stream, fields, values_list, frame.src_worker)
                if not ids_list:  # a run of unanchored tuples
                    items = [Tuple(v, fields, comp, stream, src, None) for v in values_list]
                else:
                    items = []
                    i = 0
                    for v in values_list:
                        root = ids_list[i]
                        edge = ids_list[i + 1]
                        i += 2
                        if root is not None:
                            items.append(Tuple(v, fields, comp, stream, src, None, root, edge))
                        else:
                            items.append(Tuple(v, fields, comp, stream, src, edge or None))
            elif kind == KIND_ACKER_ROWS:
                items = list(map(tuple, entry[2]))
                if self._targets is not None:
                    _rows_fit(task, items, self._targets, f"frame from {frame.src_worker!r}")
            elif kind == KIND_ACKER:
                items = [tuple(entry[ACKER_ROW])]
                if self._targets is not None:
                    _rows_fit(task, items, self._targets, f"frame from {frame.src_worker!r}")
            else:
                src = entry[TUPLE_SOURCE_TASK]
                stream = entry[TUPLE_STREAM]
                comp, fields = self._origin(src, stream, frame.src_worker)
                self._tuples_fit(task, comp, stream, fields, [entry[TUPLE_VALUES]], frame.src_worker)
                flat = entry[TUPLE_IDS]
                ids: Any = None
                if flat:
                    ids = flat if len(flat) == 2 else dict(zip(flat[::2], flat[1::2], strict=True))
                items = [Tuple(entry[TUPLE_VALUES], fields, comp, stream, src, ids)]
            count += len(items)
            if task != last_task:
                batch = []
                out.append((task, batch))
                last_task = task
            batch.extend(items)
        return frame.src_worker, out, count
