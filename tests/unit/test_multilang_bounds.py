"""What a hostile multilang process cannot do to its worker: the decoders' bounds on one message, linear decoding
of a long JSON message, every decoder error a protocol error or a fault, bytes arriving as a sign of life, and
component logs shown by a local run."""

from __future__ import annotations

import io
import json
import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from storm_py.multilang.json_wire import JsonDecoder, JsonSerializer
from storm_py.multilang.ledger import Heartbeat
from storm_py.multilang.msgpack_wire import MsgpackDecoder, MsgpackSerializer
from storm_py.multilang.process import (
    CHUNK,
    COMPONENTS_LOGGER,
    STDERR_TAIL_CHARS,
    Fault,
    ShellProcess,
    show_component_logs,
)
from storm_py.multilang.wire import DEFAULT_MAX_MESSAGE, MAX_MESSAGE_KEY, ProtocolError

MIB = 1 << 20


def chunks(data: bytes, size: int = CHUNK) -> Iterator[bytes]:
    """``data`` as a process's pipe hands it over, a read at a time."""
    for i in range(0, len(data), size):
        yield data[i:i + size]


def pystorm_emit(value: str) -> bytes:
    """pystorm's auto-anchored emit of one value, as it writes it in JSON."""
    return json.dumps({"command": "emit", "tuple": [value], "anchors": ["7"], "need_task_ids": False}).encode() \
        + b"\nend\n"


@pytest.mark.parametrize("shorthand", [False, True])
def test_a_40_mb_json_emit_read_a_pipe_read_at_a_time_decodes_in_under_a_second(shorthand: bool) -> None:
    big = "w" * (40 * 1000 * 1000)
    data = pystorm_emit(big) + pystorm_emit("after")
    dec = JsonSerializer().decoder(shorthand)
    start = time.process_time()  # the decoder's own work, whatever else the machine runs
    out: list[Any] = []
    for piece in chunks(data):
        out += dec.feed(piece)
    took = time.process_time() - start
    assert took < 1.0, f"40 MB took {took:.2f} s of CPU"
    if shorthand:
        assert out == [([big], 7), (["after"], 7)]
    else:
        assert [m["tuple"] for m in out] == [[big], ["after"]]


def test_a_long_json_messages_end_line_is_found_wherever_the_reads_cut_it() -> None:
    msg = {"command": "log", "msg": "x" * (3 * CHUNK)}
    data = json.dumps(msg).encode() + b"\nend\n"
    marker = len(data) - 5
    for cut in range(marker - 2, len(data) + 1):  # each cut inside and around the end line
        dec = JsonDecoder()
        assert dec.feed(data[:CHUNK]) + dec.feed(data[CHUNK:cut]) + dec.feed(data[cut:]) == [msg], cut
        assert dec.feed(b'{"command": "sync"}\nend\n') == [{"command": "sync"}]


@pytest.mark.parametrize("shorthand", [False, True])
def test_a_json_message_without_its_end_line_is_refused_once_past_the_bound(shorthand: bool) -> None:
    dec = JsonSerializer().decoder(shorthand, max_bytes=MIB)
    fed = 0
    with pytest.raises(ProtocolError) as err:
        for piece in [b"{"] + [b"a" * CHUNK] * 64:  # 4 MiB, no end line
            dec.feed(piece)
            fed += len(piece)
    assert fed <= MIB + CHUNK  # the worker held no more than the bound and one read
    assert MAX_MESSAGE_KEY in err.value.message and f"longer than {MIB} bytes" in err.value.message
    assert "'{aaaa" in err.value.message
    # a message just under the bound still arrives
    ok = {"command": "log", "msg": "b" * (MIB - 100)}
    dec = JsonSerializer().decoder(shorthand, max_bytes=MIB)
    out: list[Any] = []
    for piece in chunks(json.dumps(ok).encode() + b"\nend\n"):
        out += dec.feed(piece)
    assert out == [ok]


def test_a_json_message_over_the_bound_in_one_read_is_refused_too() -> None:
    with pytest.raises(ProtocolError, match="longer than"):
        JsonDecoder(max_bytes=MIB).feed(json.dumps({"msg": "c" * (2 * MIB)}).encode() + b"\nend\n")


@pytest.mark.parametrize("shorthand", [False, True])
def test_a_msgpack_bin_declared_2_gib_long_is_refused_past_the_bound(shorthand: bool) -> None:
    dec = MsgpackSerializer().decoder(shorthand, max_bytes=MIB)
    fed = 0
    with pytest.raises(ProtocolError) as err:
        for piece in [b"\xc6\x80\x00\x00\x00"] + [b"y" * CHUNK] * 64:  # a bin 32 header of 2 GiB, then 4 MiB
            dec.feed(piece)
            fed += len(piece)
    assert fed <= MIB + CHUNK
    assert MAX_MESSAGE_KEY in err.value.message


def test_the_msgpack_decoders_default_bound_refuses_a_long_message_as_the_protocol() -> None:
    """msgpack's own buffer bound (100 MiB) raised ``BufferFull``, which no caller turned into a fault."""
    dec = MsgpackDecoder(shorthand=True)
    piece = b"z" * MIB
    fed = 0
    with pytest.raises(ProtocolError, match="longer than"):
        dec.feed(b"\xc6\x80\x00\x00\x00")
        for _ in range(128):
            dec.feed(piece)
            fed += len(piece)
    assert fed <= DEFAULT_MAX_MESSAGE


@pytest.mark.parametrize("shorthand", [False, True])
def test_every_decoder_error_is_a_protocol_error(shorthand: bool) -> None:
    nested = b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\nend\n"  # json.loads: RecursionError
    with pytest.raises(ProtocolError, match="not a JSON message"):
        JsonSerializer().decoder(shorthand).feed(nested)
    with pytest.raises(ProtocolError, match="unhashable"):  # a map whose key is an array: TypeError
        MsgpackSerializer().decoder(shorthand).feed(b"\x81\x91\x01\x02")
    with pytest.raises(ProtocolError):
        MsgpackSerializer().decoder(shorthand).feed(b"\x91" * 100_000)  # nested deeper than the unpacker goes


class _Raising:
    """A decoder that fails in a way no decoder should."""

    def feed(self, data: bytes) -> list[Any]:
        raise RuntimeError("decoder bug")


class _RaisingSerializer:
    """Just what a process's reading asks of a serializer: its decoder (the compiled serializers are final)."""

    name = "raising"

    def decoder(self, shorthand: bool = False, max_bytes: int = DEFAULT_MAX_MESSAGE) -> Any:
        return _Raising()


def test_whatever_decoding_raises_is_a_fault_not_the_workers_death(tmp_path: Path) -> None:
    proc = ShellProcess(["true"], tmp_path, cast(Any, _RaisingSerializer()), "hostile")
    reads = iter([b"\x81", None])
    proc._read_stdout = lambda size: next(reads)
    try:
        assert proc.read()
        fault = proc.inbox.popleft()
        assert isinstance(fault, Fault)
        assert "RuntimeError: decoder bug" in fault.reason
        assert not proc.read()  # nothing more is read from it
    finally:
        proc.kill()


def test_stderr_lines_are_read_up_to_their_bound_and_an_error_quotes_a_little_of_each(tmp_path: Path) -> None:
    proc = ShellProcess(["true"], tmp_path, MsgpackSerializer(), "noisy", max_stderr_line=4096)
    try:
        proc._read_stderr(io.BytesIO(b"short\n" + b"l" * 4000 + b"\n" + b"x" * 10_000 + b"\nnever read\n"))
        assert [len(line) for line in proc._stderr_tail] == [5, STDERR_TAIL_CHARS + 3]
        fault = proc.inbox.popleft()
        assert isinstance(fault, Fault) and not proc.inbox
        assert fault.reason.startswith("wrote a stderr line longer than 4096 bytes "
                                       "(topology.multilang.max.stderr.line.bytes): 'xxxx")
        assert len(fault.reason) < 400
    finally:
        proc.kill()


def test_bytes_arriving_keep_a_process_alive_without_answering_its_heartbeat() -> None:
    beat = Heartbeat(5.0, 0.0, interval=1.0)
    assert beat.due(1.0)
    beat.stirred(4.0)  # part of a long message
    assert not beat.expired(8.0) and beat.expired(9.5)
    assert beat.outstanding  # the heartbeat itself is still unanswered


def test_a_local_runs_logging_shows_component_logs_at_info() -> None:
    logger = logging.getLogger(COMPONENTS_LOGGER)
    root = logging.getLogger()
    saved = (logger.level, root.level)
    try:
        logger.setLevel(logging.NOTSET)
        root.setLevel(logging.WARNING)  # `storm-py`'s default --log-level
        show_component_logs()
        assert logging.getLogger(f"{COMPONENTS_LOGGER}.count_bolt").isEnabledFor(logging.INFO)
        logger.setLevel(logging.NOTSET)
        root.setLevel(logging.DEBUG)  # a lower level asked for is kept
        show_component_logs()
        assert logger.level == logging.NOTSET
        logger.setLevel(logging.ERROR)  # and so is a level set on the components' logger
        show_component_logs()
        assert logger.level == logging.ERROR
    finally:
        logger.setLevel(saved[0])
        root.setLevel(saved[1])
