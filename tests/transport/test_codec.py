"""Tests of the wire codec (round trips, ext types, bad frames) and of batch frames round-tripping.

The validation of frame entries is in the unit tier (tests/unit/test_frame_validation.py)."""

from __future__ import annotations

import math
import struct
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storm_py.errors import CodecError
from storm_py.protocol import codec, messages
from storm_py.protocol.codec import CODEC_VERSION, decode, encode, register_ext, unregister_ext
from storm_py.protocol.messages import (
    FRAME_TUPLES,
    KIND_ACKER,
    KIND_TUPLE,
    acker_entry,
    decode_frame,
    encode_batch,
    tuple_entry,
)

U64 = (1 << 64) - 1
ATTEMPT_CODE = 77
POINT_CODE = 78


class Attempt:
    """A transaction attempt: the kind of value a later layer carries as an ext type."""

    def __init__(self, txid: int, attempt: int) -> None:
        self.txid = txid
        self.attempt = attempt

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Attempt) and (self.txid, self.attempt) == (other.txid, other.attempt)

    def __hash__(self) -> int:
        return hash((self.txid, self.attempt))

    def __repr__(self) -> str:
        return f"Attempt({self.txid}, {self.attempt})"


class Point:
    """An ext type whose payload is itself structured (and may nest other ext values)."""

    def __init__(self, label: Any, extra: Any) -> None:
        self.label = label
        self.extra = extra

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Point) and (self.label, self.extra) == (other.label, other.extra)

    __hash__ = None  # type: ignore[assignment]


def _attempt_to_bytes(a: Attempt) -> bytes:
    return struct.pack(">QI", a.txid, a.attempt)


def _attempt_from_bytes(data: bytes) -> Attempt:
    txid, attempt = struct.unpack(">QI", data)
    return Attempt(txid, attempt)


@pytest.fixture(scope="module", autouse=True)
def _ext_types():
    register_ext(ATTEMPT_CODE, Attempt, _attempt_to_bytes, _attempt_from_bytes)
    register_ext(
        POINT_CODE,
        Point,
        lambda p: codec.pack_value([p.label, p.extra]),
        lambda b: Point(*codec.unpack_value(b)),
    )
    yield
    unregister_ext(ATTEMPT_CODE)
    unregister_ext(POINT_CODE)


# ---------------------------------------------------------------------------------- strategies

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(1 << 63), max_value=U64)
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary()
)
keys = st.none() | st.booleans() | st.integers(min_value=-(1 << 63), max_value=U64) | st.text() | st.binary()
attempts = st.builds(Attempt, st.integers(min_value=0, max_value=U64), st.integers(min_value=0, max_value=2**32 - 1))

values = st.recursive(
    scalars | attempts,
    lambda children: (
        st.lists(children, max_size=6)
        | st.tuples(children, children)
        | st.dictionaries(keys, children, max_size=6)
        | st.builds(Point, children, children)
    ),
    max_leaves=40,
)


def normalized(value: Any) -> Any:
    """What a value looks like after a round trip: tuples become lists."""
    if isinstance(value, list | tuple):
        return [normalized(v) for v in value]
    if isinstance(value, dict):
        return {k: normalized(v) for k, v in value.items()}
    if isinstance(value, Point):
        return Point(normalized(value.label), normalized(value.extra))
    return value


# ---------------------------------------------------------------------------------- round trips


@given(values)
@settings(max_examples=300)
def test_round_trip_of_nested_values(value: Any) -> None:
    frame = encode(value)
    assert frame[0] == CODEC_VERSION
    assert decode(frame) == normalized(value)


@given(st.lists(st.integers(min_value=0, max_value=U64), max_size=20))
def test_unsigned_64_bit_ids_round_trip(ids: list[int]) -> None:
    assert decode(encode(ids)) == ids


def test_extreme_ints_and_types() -> None:
    value = [0, -1, U64, -(1 << 63), 1 << 63, 2**32, True, False, None, 1.5, "é", b"\x00\xff"]
    out = decode(encode(value))
    assert out == value
    assert type(out[6]) is bool and type(out[0]) is int


def test_tuples_decode_as_lists_and_buffers_as_bytes() -> None:
    assert decode(encode((1, (2, 3)))) == [1, [2, 3]]
    assert decode(encode([bytearray(b"ab"), memoryview(b"cd")])) == [b"ab", b"cd"]


def test_int_map_keys_survive() -> None:
    assert decode(encode({1: True, 2: False, U64: None})) == {1: True, 2: False, U64: None}


def test_float_specials() -> None:
    out = decode(encode([math.inf, -math.inf, math.nan, -0.0]))
    assert out[0] == math.inf and out[1] == -math.inf and math.isnan(out[2])
    assert math.copysign(1.0, out[3]) == -1.0


def test_decode_accepts_bytearray_and_memoryview() -> None:
    frame = encode({"a": [1, 2]})
    assert decode(bytearray(frame)) == {"a": [1, 2]}
    assert decode(memoryview(frame)) == {"a": [1, 2]}


def test_ext_values_nested_anywhere() -> None:
    a = Attempt(U64, 3)
    value = {"tx": a, "batch": [1, [a, {"inner": a}]], "point": Point(Attempt(1, 1), [a])}
    out = decode(encode(value))
    assert out == value
    assert isinstance(out["batch"][1][1]["inner"], Attempt)


def test_encode_is_reentrant_from_to_bytes() -> None:
    class Wrapper:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

    register_ext(90, Wrapper, lambda w: encode(w.inner), lambda b: Wrapper(decode(b)))
    try:
        out = decode(encode([Wrapper([1, Wrapper("x")]), 2]))
        assert out[1] == 2
        assert out[0].inner[0] == 1 and out[0].inner[1].inner == "x"
    finally:
        unregister_ext(90)


# ---------------------------------------------------------------------------------- unsupported values


@pytest.mark.parametrize(
    ("value", "named"),
    [(object(), "object"), ({1, 2}, "set"), (frozenset(), "frozenset"), (1 + 2j, "complex")],
)
def test_unsupported_types_name_the_type(value: Any, named: str) -> None:
    with pytest.raises(CodecError, match=rf"\b{named}\b"):
        encode({"nested": [1, value]})


@pytest.mark.parametrize("value", [1 << 64, -(1 << 63) - 1])
def test_out_of_range_ints(value: int) -> None:
    with pytest.raises(CodecError, match="range"):
        encode([value])


def test_self_referencing_value() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(CodecError, match="nested too deeply"):
        encode(loop)


def test_encode_works_after_a_failed_encode() -> None:
    with pytest.raises(CodecError):
        encode([1, 2, object()])
    assert decode(encode([3, 4])) == [3, 4]


def test_subclass_of_registered_class_is_not_covered() -> None:
    class Sub(Attempt):
        pass

    with pytest.raises(CodecError, match="Sub"):
        encode(Sub(1, 2))


# ---------------------------------------------------------------------------------- ext registry


def test_register_rejects_bad_codes_and_conflicts() -> None:
    class Other:
        pass

    with pytest.raises(CodecError, match=r"0\.\.127"):
        register_ext(128, Other, lambda o: b"", lambda b: Other())
    with pytest.raises(CodecError, match=r"0\.\.127"):
        register_ext(-1, Other, lambda o: b"", lambda b: Other())
    with pytest.raises(CodecError, match="already registered for"):
        register_ext(ATTEMPT_CODE, Other, lambda o: b"", lambda b: Other())
    with pytest.raises(CodecError, match="already registered as ext type"):
        register_ext(91, Attempt, _attempt_to_bytes, _attempt_from_bytes)
    with pytest.raises(CodecError, match="natively"):
        register_ext(92, type("MyList", (list,), {}), lambda o: b"", lambda b: [])
    # same class, same code: allowed (replaces the functions)
    register_ext(ATTEMPT_CODE, Attempt, _attempt_to_bytes, _attempt_from_bytes)
    assert codec.registered_ext_codes()[ATTEMPT_CODE] is Attempt


def test_ext_to_bytes_failures_are_codec_errors() -> None:
    class Bad:
        pass

    register_ext(93, Bad, lambda o: 1 / 0, lambda b: Bad())  # type: ignore[arg-type,return-value]
    try:
        with pytest.raises(CodecError, match="to_bytes of ext type 93") as info:
            encode([Bad()])
        assert isinstance(info.value.__cause__, ZeroDivisionError)
    finally:
        unregister_ext(93)


def test_ext_from_bytes_failure_and_unknown_code() -> None:
    with pytest.raises(CodecError, match="from_bytes of ext type 77"):
        decode(bytes([CODEC_VERSION]) + msgpack.packb(msgpack.ExtType(ATTEMPT_CODE, b"short")))
    with pytest.raises(CodecError, match="unknown ext type code 55"):
        decode(bytes([CODEC_VERSION]) + msgpack.packb([1, msgpack.ExtType(55, b"x")]))


# ---------------------------------------------------------------------------------- bad frames


GOOD = encode({"stream": "default", "ids": [U64, 1], "values": ["word", 3]})


def test_empty_frame() -> None:
    with pytest.raises(CodecError, match="empty frame"):
        decode(b"")


@pytest.mark.parametrize("version", [0, 2, 0x81, 0xFF])
def test_wrong_version_byte(version: int) -> None:
    with pytest.raises(CodecError, match=f"unsupported codec version {version}"):
        decode(bytes([version]) + GOOD[1:])


def test_every_truncation_is_detected() -> None:
    for n in range(1, len(GOOD)):
        with pytest.raises(CodecError, match="truncated") as info:
            decode(GOOD[:n])
        assert info.value.__cause__ is not None


def test_trailing_bytes_are_detected() -> None:
    with pytest.raises(CodecError, match="unexpected bytes after the message") as info:
        decode(GOOD + b"\x00\x01")
    assert isinstance(info.value.__cause__, msgpack.ExtraData)


@pytest.mark.parametrize(
    ("body", "what"),
    [
        (b"\xc1", "not valid msgpack"),  # the one byte msgpack never uses
        (b"\x92\x01\xc1", "not valid msgpack"),
        (b"\xa2\xff\xfe", "not valid UTF-8"),
        (b"\x81\x92\x01\x02\x03", "unusable map key"),  # an array as a map key
        (b"\xdd\xff\xff\xff\xff", "truncated|corrupted"),  # an array claiming 4 G elements
    ],
)
def test_corrupted_bodies(body: bytes, what: str) -> None:
    with pytest.raises(CodecError, match=what) as info:
        decode(bytes([CODEC_VERSION]) + body)
    assert info.value.__cause__ is not None


@given(st.binary(max_size=200))
@settings(max_examples=500)
def test_garbage_decodes_or_raises_codec_error_only(data: bytes) -> None:
    for frame in (data, bytes([CODEC_VERSION]) + data):
        try:
            decode(frame)
        except CodecError:
            pass
        try:
            decode_frame(frame)
        except CodecError:
            pass


@given(st.data())
@settings(max_examples=200)
def test_byte_flips_never_escape_as_other_errors(data: st.DataObject) -> None:
    frame = bytearray(encode_batch("w", [tuple_entry(3, "default", 7, ["w", 1], [U64, 5])] * 3))
    pos = data.draw(st.integers(min_value=1, max_value=len(frame) - 1))
    frame[pos] = data.draw(st.integers(min_value=0, max_value=255))
    try:
        decode_frame(bytes(frame))
    except CodecError:
        pass


# ---------------------------------------------------------------------------------- messages

entries_strategy = st.lists(
    st.one_of(
        st.builds(
            tuple_entry,
            st.integers(min_value=0, max_value=10_000),
            st.text(max_size=12),
            st.integers(min_value=-1, max_value=10_000),
            st.lists(scalars, max_size=4),
            st.none() | st.lists(st.integers(min_value=0, max_value=U64), max_size=3).map(lambda xs: xs + xs),
        ),
        st.builds(
            acker_entry,
            st.integers(min_value=0, max_value=10_000),
            st.lists(st.integers(min_value=-(1 << 63), max_value=U64), min_size=1, max_size=4),
        ),
    ),
    max_size=30,
)


@given(st.text(max_size=10) | st.integers(min_value=0, max_value=1000), entries_strategy)
def test_batch_round_trip(src: str | int, entries: list[list[Any]]) -> None:
    frame_type, src_worker, payload = decode_frame(encode_batch(src, entries))
    assert frame_type == FRAME_TUPLES
    assert src_worker == src
    assert payload == entries


def test_entry_layout() -> None:
    frame = decode_frame(
        encode_batch("w1", [tuple_entry(3, "s", 7, ["x", 1], [U64, 2]), acker_entry(4, [1, U64, 5, 0])])
    )
    t, a = frame.payload
    assert t[messages.ENTRY_TASK] == 3 and t[messages.ENTRY_KIND] == KIND_TUPLE
    assert t[messages.TUPLE_STREAM] == "s" and t[messages.TUPLE_SOURCE_TASK] == 7
    assert t[messages.TUPLE_VALUES] == ["x", 1] and t[messages.TUPLE_IDS] == [U64, 2]
    assert a[messages.ENTRY_KIND] == KIND_ACKER and a[messages.ACKER_ROW] == [1, U64, 5, 0]
