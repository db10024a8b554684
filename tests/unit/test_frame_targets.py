"""Every entry of a frame is checked against the task it targets (FrameTargets), before a worker loop sees it."""

from __future__ import annotations

import pytest

from storm_py.api.topology import ComponentSpec, Grouping, StormTopology
from storm_py.api.tuple import Fields
from storm_py.errors import CodecError
from storm_py.protocol.codec import encode
from storm_py.protocol.messages import FRAME_TUPLES, KIND_ACKER, KIND_ACKER_ROWS, KIND_TUPLE, KIND_TUPLES
from storm_py.runtime.acker import ACK, ACKED, FAIL, INIT
from storm_py.runtime.transfer.frames import FrameDecoder, FrameTargets

# tasks: 1 spout "s", 2 bolt "b" (subscribes to s/default), 3 acker, 4 bolt "b" in another worker
COMPONENTS = {1: "s", 2: "b", 3: "__acker", 4: "b"}
STREAMS = {"s": {"default": Fields(["a", "b"]), "other": Fields(["x"])}, "b": {"default": Fields(["w"])},
           "__acker": {}}  # fmt: skip
TOPOLOGY = StormTopology(
    {"s": ComponentSpec("s", None, 1, True)},
    {"b": ComponentSpec("b", None, 2, False, inputs={("s", "default"): Grouping("shuffle")}),
     "__acker": ComponentSpec("__acker", None, 1, False)},
)  # fmt: skip
TARGETS = FrameTargets.of(TOPOLOGY.components(), COMPONENTS, [1, 2, 3], "__acker")


def decode(*entries: list[object]) -> list[tuple[int, list[object]]]:
    return FrameDecoder(COMPONENTS, STREAMS, TARGETS).decode(encode([FRAME_TUPLES, "w", list(entries)]))[1]


def test_targets_of_a_worker() -> None:
    assert TARGETS.spouts == {1} and TARGETS.ackers == {3} and set(TARGETS.bolts) == {2}
    assert TARGETS.bolts[2] == {("s", "default")} and TARGETS.all_spout_tasks == {1}


def test_fitting_entries_pass() -> None:
    out = decode([2, KIND_TUPLE, "default", 1, [1, 2], None], [2, KIND_TUPLES, "default", 1, [[1, 2], [3, 4]],
                 [None, None, 5, 6]], [3, KIND_ACKER_ROWS, [[INIT, 9, 7, 1], [ACK, 9, 7], [FAIL, 9]]],
                 [1, KIND_ACKER, [ACKED, 9, 12]])  # fmt: skip
    assert [t for t, _ in out] == [2, 3, 1] and sum(len(items) for _, items in out) == 7


@pytest.mark.parametrize("entry", [
    [2, KIND_ACKER_ROWS, [[ACK, 1, 2]]],                      # ack rows for a bolt
    [2, KIND_ACKER, [ACK, 1, 2]],
    [3, KIND_TUPLE, "default", 1, [1, 2], None],              # a tuple for the acker
    [1, KIND_TUPLES, "default", 1, [[1, 2]], [None, None]],   # a tuple for a spout
    [2, KIND_TUPLE, "other", 1, [1], None],                   # a stream the bolt does not subscribe to
    [2, KIND_TUPLE, "default", 1, [1], None],                 # one value for two fields
    [2, KIND_TUPLES, "default", 1, [[1, 2], [1, 2, 3]], [None, None, None, None]],
    [2, KIND_TUPLES, "default", 1, [[1, 2]], [None, None, None, None]],  # anchors not two items per tuple
    [2, KIND_TUPLES, "default", 1, [[1, 2]], [None]],
    [1, KIND_ACKER_ROWS, [[ACKED, 1]]],                       # a spout row of the wrong length
    [1, KIND_ACKER_ROWS, [[INIT, 1, 2]]],                     # a code spouts do not read
    [3, KIND_ACKER_ROWS, [[INIT, 1, 2, 2]]],                  # INIT naming a bolt task as the spout
    [3, KIND_ACKER_ROWS, [[INIT, 1, 2]]],                     # INIT without its spout task
    [3, KIND_ACKER_ROWS, [[ACK, 1]]],                         # ACK without its value
    [3, KIND_ACKER_ROWS, [[99, 1, 2]]],                       # an unknown code
    [3, KIND_ACKER_ROWS, [[]]],
])  # fmt: skip
def test_entries_that_do_not_fit_their_target_reject_the_frame(entry: list[object]) -> None:
    with pytest.raises(CodecError):
        decode([2, KIND_TUPLE, "default", 1, [1, 2], None], entry)


def test_entries_for_tasks_of_other_workers_are_left_to_the_runtime() -> None:
    """A task moved by a rebalance: the runtime drops and counts what still arrives for it."""
    out = decode([4, KIND_TUPLE, "default", 1, [1, 2], None], [7, KIND_ACKER_ROWS, [[ACK, 1, 2]]])
    assert [t for t, _ in out] == [4, 7]
