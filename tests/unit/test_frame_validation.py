"""Frame validation (storm_py/protocol/messages.py): a malformed frame or entry is rejected with a CodecError
that names the entry and the field, whatever a peer (or anyone who reaches a worker's port) sends."""

from __future__ import annotations

from typing import Any

import pytest

from storm_py.errors import CodecError
from storm_py.protocol.codec import encode
from storm_py.protocol.messages import (
    acker_entry,
    acker_rows_entry,
    check_entries,
    decode_frame,
    encode_batch,
    tuple_entry,
    tuples_entry,
)


def _raw(obj: Any) -> bytes:
    return encode(obj)


@pytest.mark.parametrize(
    ("obj", "field"),
    [
        ({"not": "a list"}, "frame"),
        ([0, "w"], "3 fields"),
        ([0, "w", [], 1], "3 fields"),
        (["0", "w", []], "frame_type"),
        ([99, "w", []], "frame_type"),
        ([0, 1.5, []], "src_worker"),
        ([0, True, []], "src_worker"),
        ([0, "w", {}], "entries"),
        ([0, "w", [5]], r"entries\[0\]"),
        ([0, "w", [[5]]], r"entries\[0\]"),
        ([0, "w", [[5, 9]]], r"entries\[0\]\.kind"),
        ([0, "w", [[5, True, []]]], r"entries\[0\]\.kind"),
        ([0, "w", [["5", 1, []]]], r"entries\[0\]\.task"),
        ([0, "w", [[5, 0, "s", 1, []]]], r"entries\[0\] is a TUPLE entry with 5 fields"),
        ([0, "w", [[5, 0, 1, 1, [], None]]], r"entries\[0\]\.stream"),
        ([0, "w", [[5, 0, "s", "1", [], None]]], r"entries\[0\]\.source_task"),
        ([0, "w", [[5, 0, "s", 1, {}, None]]], r"entries\[0\]\.values"),
        ([0, "w", [[5, 0, "s", 1, [], [1]]]], r"entries\[0\]\.ids"),
        ([0, "w", [[5, 0, "s", 1, [], 7]]], r"entries\[0\]\.ids"),
        ([0, "w", [[5, 0, "s", 1, [], [1, -2]]]], r"entries\[0\]\.ids\[1\]"),
        ([0, "w", [[5, 0, "s", 1, [], ["a", 2]]]], r"entries\[0\]\.ids\[0\]"),
        ([0, "w", [[5, 0, "s", 1, [], [1, 2, 3, "x"]]]], r"entries\[0\]\.ids\[3\]"),
        ([0, "w", [[5, 0, "s", 1, [], [1, 2, -3, 4]]]], r"entries\[0\]\.ids\[2\]"),
        ([0, "w", [[5, 0, "s", 1, [], [True, 2]]]], r"entries\[0\]\.ids\[0\]"),
        ([0, "w", [[5, 0, "s", 1, [], [1, 2, 3]]]], r"entries\[0\]\.ids"),
        ([0, "w", [tuple_entry(1, "s", 1, [], None), [5, 1, [1, 2], 9, 9, 9]]], r"entries\[1\] is an ACKER"),
        ([0, "w", [tuple_entry(1, "s", 1, [], None), [5, 0, [1, 2]]]], r"entries\[1\] is a TUPLE"),
        ([0, "w", [acker_entry(1, [1]), [5, 1, [1], 2]]], r"entries\[1\] is an ACKER entry with 4 fields"),
        ([0, "w", [[5, 1, 3]]], r"entries\[0\]\.row"),
        ([0, "w", [[5, 1, [1, 2.5]]]], r"entries\[0\]\.row\[1\]"),
        ([1, "w", {5: True}], "frame_type' has unknown value 1"),  # the control frames of old are gone
        ([4, "w", 7], "frame_type' has unknown value 4"),
        ([0, "w", [[5, 2, "s", 1, [["a"]], [None, None, None, None]]]], r"entries\[0\] is a malformed TUPLES entry"),
        ([0, "w", [[5, 2, "s", 1, [["a"], ["b"]], [None, None]]]], r"entries\[0\] is a malformed TUPLES entry"),
        ([0, "w", [[5, 2, "s", 1, ["a"], [None, None]]]], r"entries\[0\] is a malformed TUPLES entry"),
        ([0, "w", [[5, 2, "s", 1, [["a"]], [1, -1]]]], r"entries\[0\] is a malformed TUPLES entry"),
        ([0, "w", [[5, 2, "s", 1, [["a"]], [None, {1: "x"}]]]], r"entries\[0\] is a malformed TUPLES entry"),
        ([0, "w", [[5, 3, [[1, 2], [3, "x"]]]]], r"entries\[0\] is a malformed ACKER_ROWS entry"),
        ([0, "w", [[5, 3, [1, 2]]]], r"entries\[0\] is a malformed ACKER_ROWS entry"),
        ([0, "w", [[5, 3, [[1]]], [6, 3, "rows"]]], r"entries\[1\] is a malformed ACKER_ROWS entry"),
    ],
)
def test_bad_frame_shapes_name_the_field(obj: Any, field: str) -> None:
    with pytest.raises(CodecError, match=field):
        decode_frame(_raw(obj))


def test_entry_checks_can_be_skipped() -> None:
    frame = _raw([0, "w", [[5, 0, 1, 1, [], None]]])
    with pytest.raises(CodecError):
        decode_frame(frame)
    assert decode_frame(frame, validate_entries=False).payload == [[5, 0, 1, 1, [], None]]
    with pytest.raises(CodecError, match="entries"):
        decode_frame(_raw([0, "w", "no list"]), validate_entries=False)


def test_well_formed_runs_pass_and_round_trip() -> None:
    entries = [
        tuples_entry(5, "s", 1, [["a"], ["b", 2]], [None, None, 1, 2]),
        tuples_entry(5, "s", 1, [["c"]], [None, {1: 2, 3: 4}]),
        acker_rows_entry(6, [[1, 2, 3, 4], [2, 9, 9]]),
        tuple_entry(7, "s", 1, ["x"], [1, 2, 3, 4]),
        acker_entry(8, [5, 1, 0]),
    ]
    check_entries(entries)
    assert decode_frame(encode_batch("w", entries)).payload == entries


def test_the_error_names_the_first_bad_entry_and_carries_its_index() -> None:
    good = acker_rows_entry(1, [[1, 2, 3]])
    with pytest.raises(CodecError) as info:
        check_entries([good, good, [1, 0, "s", 1, "values", None], good])
    assert "entries[2].values" in info.value.message
    assert info.value.fields["entry"] == 2
