"""This module owns the translation between a worker's batches and wire frames (pure: no sockets, no threads).

A worker hands remote traffic over as ``[(task, [items])]`` where an item is a :class:`Tuple` (bolt input)
or a short row of numbers (acker and spout ack traffic, see :mod:`storm_py.runtime.acker`).  One frame per
destination worker carries all of it, so a tuple crossing workers is encoded exactly once; the receiving side
rebuilds :class:`Tuple` objects with the stream's fields, the source component being derived from the source
task.  The frame layout itself belongs to :mod:`storm_py.protocol.messages`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from storm_py.api.tuple import Fields, Tuple
from storm_py.errors import CodecError
from storm_py.protocol.messages import (
    ACKER_ROW,
    ENTRY_KIND,
    ENTRY_TASK,
    FRAME_TUPLES,
    KIND_ACKER,
    TUPLE_IDS,
    TUPLE_SOURCE_TASK,
    TUPLE_STREAM,
    TUPLE_VALUES,
    decode_frame,
    encode_batch,
)

log = logging.getLogger(__name__)

Entries = list[tuple[int, list[Any]]]


@dataclass
class Encoded:
    """One destination's frame, how many items it carries, and the items that could not be encoded."""

    frame: bytes | None
    count: int
    rejected: list[tuple[int, Any, CodecError]] = field(default_factory=list)


def _entry(task: int, item: Any) -> list[Any]:
    if type(item) is Tuple:
        ids = item._ids
        flat: list[int] | None = None
        if ids:
            flat = []
            for root, edge in ids.items():
                flat.append(root)
                flat.append(edge)
        return [task, 0, item.source_stream, item.source_task, item.values, flat]
    # an acker/spout control row: a short tuple of ints (see storm_py.runtime.acker)
    return [task, KIND_ACKER, item]


def encode_entries(src_worker: str, entries: Entries) -> Encoded:
    """Encode every item of ``entries`` into one frame; items that cannot be encoded are left out and named."""
    wire: list[list[Any]] = []
    for task, items in entries:
        for item in items:
            wire.append(_entry(task, item))
    try:
        return Encoded(encode_batch(src_worker, wire), len(wire))
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


class FrameDecoder:
    """Rebuilds the batches of a worker's frames, knowing which component each task belongs to."""

    def __init__(
        self, task_to_component: Mapping[int, str], component_streams: Mapping[str, Mapping[str, Fields]]
    ) -> None:
        self._task_to_component = task_to_component
        self._component_streams = component_streams

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
        comps = self._task_to_component
        streams = self._component_streams
        for entry in frame.payload:
            task = entry[ENTRY_TASK]
            if entry[ENTRY_KIND] == KIND_ACKER:
                item: Any = tuple(entry[ACKER_ROW])
            else:
                src = entry[TUPLE_SOURCE_TASK]
                stream = entry[TUPLE_STREAM]
                comp = comps.get(src)
                fields = streams.get(comp, {}).get(stream) if comp is not None else None
                if comp is None or fields is None:
                    raise CodecError(
                        f"frame from {frame.src_worker!r} holds a tuple of unknown source task {src} "
                        f"or stream {stream!r}",
                        source_task=src,
                        stream=stream,
                    )
                flat = entry[TUPLE_IDS]
                ids = dict(zip(flat[::2], flat[1::2], strict=True)) if flat else None
                item = Tuple(entry[TUPLE_VALUES], fields, comp, stream, src, ids)
            if task != last_task:
                batch = []
                out.append((task, batch))
                last_task = task
            batch.append(item)
        return frame.src_worker, out, len(frame.payload)
