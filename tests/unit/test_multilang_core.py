"""The pure parts of storm_py.multilang: the wire formats, the pending ledger, heartbeats and the handshake."""

from __future__ import annotations

import json
import json.encoder
import os
import threading
from pathlib import Path

import msgpack
import pytest

from storm_py import Fields, TopologyBuilder
from storm_py.api.context import TopologyContext
from storm_py.errors import ConfigError
from storm_py.multilang import ShellBolt, ShellSpout
from storm_py.multilang import process as process_module
from storm_py.multilang.handshake import context_json, resources_dir
from storm_py.multilang.json_wire import JsonSerializer, dump_values
from storm_py.multilang.ledger import Heartbeat, PendingLedger, write_room
from storm_py.multilang.msgpack_wire import MsgpackDecoder, MsgpackSerializer, pack_str, pack_values
from storm_py.multilang.process import GATHER_WAIT, ShellProcess
from storm_py.multilang.serializer import STORM_JSON_CLASS, serializer_for
from storm_py.multilang.wire import EncodeError, ProtocolError


def test_json_framing_round_trip_across_chunk_boundaries() -> None:
    ser = JsonSerializer()
    data = ser.encode({"command": "emit", "tuple": ["a", 1]}) + b"\n" + ser.encode({"command": "sync"})
    assert data.startswith(b'{"command":"emit","tuple":["a",1]}\nend\n')
    dec = ser.decoder()
    out = []
    for i in range(len(data)):  # one byte at a time
        out += dec.feed(data[i:i + 1])
    assert out == [{"command": "emit", "tuple": ["a", 1]}, {"command": "sync"}]
    assert ser.encode([3, 4]) == b"[3,4]\nend\n"  # task ids


def test_json_decoder_accepts_a_message_over_several_lines() -> None:
    assert JsonSerializer().decoder().feed(b'{"command":\n "ack", "id": "1"}\nend\n') == [{"command": "ack", "id": "1"}]


@pytest.mark.parametrize("data", [b"hello world\n", b"hello", b'{"command": "sync"}\nend\nDebug: x\n',
                                  b'\nhello\n{"command": "sync"}\nend\n'])
def test_json_decoder_rejects_text_that_is_not_the_protocol_quoting_it(data: bytes) -> None:
    with pytest.raises(ProtocolError, match=r"not the multilang protocol: '(hello|Debug)"):
        JsonSerializer().decoder().feed(data)


def test_json_decoder_waits_for_what_may_still_become_a_message() -> None:
    dec = JsonSerializer().decoder()
    assert dec.feed(b"\n\n") == [] and dec.feed(b'{"command": "sy') == [] and dec.feed(b'nc"}\ne') == []
    assert dec.feed(b"nd\n") == [{"command": "sync"}]


def test_json_decoder_rejects_bad_json_and_non_objects() -> None:
    with pytest.raises(ProtocolError, match="not a JSON message"):
        JsonSerializer().decoder().feed(b"{oops\nend\n")
    with pytest.raises(ProtocolError, match="not a JSON message"):
        JsonSerializer().decoder().feed(b'{"command": "sync"}\nprinted\nend\n')
    with pytest.raises(ProtocolError, match="'end' line with no message"):
        JsonSerializer().decoder().feed(b"end\n")


def test_json_decoder_reads_many_messages_at_once_and_still_refuses_each_bad_one() -> None:
    ser = JsonSerializer()
    msgs = [{"command": "emit", "anchors": [str(i)], "tuple": [f"w{i}"]} for i in range(50)] + [{"command": "sync"}]
    assert ser.decoder().feed(b"".join(ser.encode(m) for m in msgs)) == msgs
    good = ser.encode({"command": "ack", "id": "1"})
    for bad in (b'{"command": "ack", "id": "2"},{"command": "sync"}\nend\n',  # two objects as one message
                b'{"a": [{"b": 1}\nend\n{"c": 2}]}\nend\n',  # one object cut in two
                b'{"oops}\nend\n'):
        with pytest.raises(ProtocolError, match="not a JSON message"):
            ser.decoder().feed(good + bad + good)


def test_encoders_refuse_values_they_cannot_carry() -> None:
    with pytest.raises(EncodeError, match="JSON"):
        JsonSerializer().encode({"tuple": [{1, 2}]})
    with pytest.raises(EncodeError, match="JSON"):
        JsonSerializer().encode({"tuple": [float("nan")]})
    with pytest.raises(EncodeError, match="msgpack"):
        MsgpackSerializer().encode({"tuple": [{1, 2}]})
    assert b"{1, 2}" in JsonSerializer().encode_lenient({"conf": {1, 2}})


@pytest.mark.parametrize("ser", [JsonSerializer(), MsgpackSerializer()], ids=["json", "msgpack"])
def test_tuple_messages_are_the_bytes_of_the_whole_map_and_refuse_the_same_values(ser) -> None:  # type: ignore[no-untyped-def]
    for values in (["storm"], ['a"b\n', 1, 2.5, None, True, {"k": [1, "x"]}, "\u00e9"], []):
        for comp, stream, task in (("split", "default", 3), ('s"p', "__tick", -1)):
            whole = {"id": "17", "comp": comp, "stream": stream, "task": task, "tuple": values}
            assert ser.encode_tuple("17", comp, stream, task, values) == ser.encode(whole)
    circular: list[object] = [1]
    circular.append(circular)
    bads: list[list[object]] = [[{1, 2}], [object()], circular] + ([[float("nan")]] if ser.name == "json" else [])
    for bad in bads:
        with pytest.raises(EncodeError, match=ser.name if ser.name == "msgpack" else "JSON"):
            ser.encode_tuple("1", "c", "s", 1, bad)
        assert ser.encode_tuple("2", "c", "s", 1, ["ok"]) == ser.encode(  # an error leaves nothing behind
            {"id": "2", "comp": "c", "stream": "s", "task": 1, "tuple": ["ok"]})


def test_msgpack_framing_back_to_back_and_garbage() -> None:
    ser = MsgpackSerializer()
    data = ser.encode({"command": "emit", "tuple": ["x", b"raw"]}) + msgpack.packb({"command": "sync"})
    dec = ser.decoder()
    assert dec.feed(data[:5]) == []
    assert dec.feed(data[5:]) == [{"command": "emit", "tuple": ["x", b"raw"]}, {"command": "sync"}]
    with pytest.raises(ProtocolError, match=r"not the multilang protocol.*hello"):
        ser.decoder().feed(b"hello\n")


def test_serializer_names() -> None:
    assert serializer_for("json", "c").name == "json"
    assert serializer_for(STORM_JSON_CLASS, "c").name == "json"
    assert serializer_for("msgpack", "c").name == "msgpack"
    with pytest.raises(ConfigError, match=r"'split'.*'yaml'"):
        serializer_for("yaml", "split")


def test_ledger_ids_answers_anchors_and_drain() -> None:
    ledger: PendingLedger[str] = PendingLedger()
    a = ledger.add("A")
    b = ledger.add("B")
    assert a != b and len(ledger) == 2
    assert ledger.anchors([a, int(b)]) == ["A", "B"]  # an id echoed as a number is the same id
    assert ledger.answer(a, "ack") == "A"
    assert len(ledger) == 1
    with pytest.raises(ProtocolError, match=r"ack of an id that is not pending.*'1'"):
        ledger.answer(a, "ack")
    with pytest.raises(ProtocolError, match="anchored to"):
        ledger.anchors([a])
    with pytest.raises(ProtocolError, match="not pending"):
        ledger.answer([1], "fail")
    c = ledger.add("C")
    assert c not in (a, b)  # ids are never reused
    assert ledger.drain() == ["B", "C"] and len(ledger) == 0


def test_max_pending_bounds_what_waits_to_be_written_not_what_the_process_holds() -> None:
    """Storm's ShellBolt: max pending is the capacity of the queue of messages not written to the process yet."""
    assert write_room(100, queued=0, held_back=False) == 100
    assert write_room(100, queued=60, held_back=False) == 40
    assert write_room(100, queued=100, held_back=False) == 0
    assert write_room(100, queued=130, held_back=False) == 0  # task ids and heartbeats queued beside inputs
    assert write_room(100, queued=0, held_back=True) == 0  # the pipe is full: nothing more until it drains
    assert write_room(1, queued=0, held_back=False) == 1


def test_a_shell_bolt_takes_inputs_while_its_pipe_does_whatever_is_unanswered() -> None:
    bolt = ShellBolt("x")
    bolt._max_pending = 4
    bolt._ledger = PendingLedger()
    bolt._outbuf = []

    class Pipe:
        unsent = b""

    bolt._process = Pipe()  # type: ignore[assignment]
    for i in range(50):
        bolt._ledger.add(str(i))  # written, not answered yet
    assert bolt.room() == 4
    bolt._outbuf.extend([b"m"] * 3)
    assert bolt.room() == 1
    bolt._outbuf.clear()
    Pipe.unsent = b"rest of a message"
    assert bolt.room() == 0


def test_heartbeat_due_every_interval_and_expiry_from_last_heard() -> None:
    beat = Heartbeat(timeout=3.0, now=100.0)
    assert not beat.due(100.5) and not beat.outstanding
    assert beat.due(101.0) and not beat.due(101.5) and beat.due(102.0)
    assert beat.outstanding
    assert not beat.expired(103.0)
    assert beat.expired(103.1)
    beat.heard(103.1)
    assert not beat.outstanding
    assert not beat.expired(106.0) and beat.expired(106.2)
    assert beat.silence(106.2) == pytest.approx(3.1)


def test_a_gap_in_watching_counts_as_one_interval_of_silence_unless_time_is_simulated() -> None:
    beat = Heartbeat(timeout=3.0, now=0.0, interval=1.0)
    for t in (0.5, 1.0, 1.5):  # watched often: every second of silence counts
        beat.watched(t)
    assert beat.silence(1.5) == pytest.approx(1.5)
    beat.watched(4.5)  # the loop was elsewhere for 3 s: one interval of it counts
    assert beat.silence(4.5) == pytest.approx(1.5 + 1.0) and not beat.expired(4.5)
    beat.watched(4.6)
    assert not beat.expired(4.6) and beat.expired(5.1)  # silent while watched: it expires as before
    stalls = Heartbeat(timeout=3.0, now=0.0, interval=1.0)
    t = 0.0
    while not stalls.expired(t):  # a silent process behind a loop held 2 s at a time still expires
        t += 2.0
        stalls.watched(t)
        assert t < 10
    simulated = Heartbeat(timeout=2.0, now=0.0, interval=1.0, forgive_unwatched=False)
    simulated.watched(3.0)
    assert simulated.expired(3.0)


class _Split(ShellBolt):
    def __init__(self) -> None:
        super().__init__("python3", "split.py")

    def declare_output_fields(self, declarer):  # type: ignore[no-untyped-def]
        declarer.declare(["word"])


class _Words(ShellSpout):
    def __init__(self) -> None:
        super().__init__("python3", "words.py")

    def declare_output_fields(self, declarer):  # type: ignore[no-untyped-def]
        declarer.declare(["word"])


def test_handshake_context_has_storms_keys() -> None:
    builder = TopologyBuilder()
    builder.set_spout("s", _Words())
    builder.set_bolt("split", _Split(), 2).global_grouping("s")
    builder.set_bolt("sink", _Split()).shuffle_grouping("split")
    topology = builder.create_topology()
    context = TopologyContext(
        topology_id="t-1", topology_name="t", task_id=2, component_id="split",
        task_to_component={1: "s", 2: "split", 3: "split", 4: "sink", 5: "__acker"},
        component_tasks={"s": [1], "split": [2, 3], "sink": [4], "__acker": [5]},
        component_streams={c: {"default": Fields(["word"]), "__ack_ack": Fields(["id", "ack-val"])}
                           for c in ("s", "split", "sink")},
        worker_tasks=[1, 2, 3, 4, 5], topology=topology,
    )
    ctx = context_json(context)
    assert ctx["taskid"] == 2 and ctx["componentid"] == "split"
    assert ctx["task->component"] == {"1": "s", "2": "split", "3": "split", "4": "sink", "5": "__acker"}
    assert ctx["streams"] == ["default"]
    assert ctx["stream->outputfields"] == {"default": ["word"]}
    assert ctx["stream->target->grouping"] == {"default": {"sink": {"type": "shuffle"}}}
    assert ctx["source->stream->grouping"] == {"s": {"default": {"type": "fields", "fields": []}}}
    assert ctx["source->stream->fields"] == {"s": {"default": ["word"]}}


def test_working_directory_is_the_resources_folder_beside_or_above(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    pkg = tmp_path / "code" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    module = pkg / "topology.py"
    module.write_text("")
    monkeypatch.chdir(tmp_path)
    assert resources_dir(str(module)) == tmp_path  # none: the current directory
    (tmp_path / "code" / "resources").mkdir()
    assert resources_dir(str(module)) == tmp_path / "code" / "resources"
    (pkg / "resources").mkdir()
    assert resources_dir(str(module)) == pkg / "resources"
    assert resources_dir(None) == tmp_path


def test_shell_component_remembers_the_module_that_built_it() -> None:
    assert _Split()._origin == __file__


def _pystorm_emit(word: object, anchor: str, **extra: object) -> dict[str, object]:
    """An emit as pystorm builds it (key order included): auto-anchored, no task ids asked for."""
    return {"command": "emit", "tuple": [word], "anchors": [anchor], **extra, "need_task_ids": False}


#: ids a process may echo: the strings of numbers as pending ids are written, and others, which are read as strings
_IDS = ["1", "0", "017", "123456789012345678", "1234567890123456789", "\u0663", "x", "", "12a"]


def _short_id(tid: str) -> int | str:
    """An id as the shorthand reads it: the string of a number 1 .. 10**18 - 1 as that number, others as they are."""
    return int(tid) if tid.isascii() and tid.isdigit() and tid[0] != "0" and len(tid) <= 18 else tid


def test_msgpack_shorthand_reads_pystorm_emits_and_acks_as_the_unpacker_would() -> None:
    values = [["storm"], ["\u00e9t\u00e9", 7, -3, None, True, False], [], ["x" * 40], ["y" * 300]]
    msgs: list[dict[str, object]] = []
    for i, tid in enumerate(_IDS):
        msgs.append({"command": "emit", "tuple": values[i % len(values)], "anchors": [tid], "need_task_ids": False})
        msgs.append({"command": "ack", "id": tid})
    data = b"".join(msgpack.packb(m) for m in msgs)
    out = MsgpackDecoder(shorthand=True).feed(data)
    assert out == [(m["tuple"], _short_id(m["anchors"][0])) if m["command"] == "emit" else _short_id(m["id"])  # type: ignore[index, arg-type]
                   for m in msgs]
    assert [type(m) for m in out[1::2]] == [type(_short_id(tid)) for tid in _IDS]
    assert MsgpackDecoder().feed(data) == msgs  # without shorthand: maps, as ever


@pytest.mark.parametrize("other", [
    _pystorm_emit("w", "1", stream="words"),  # another stream
    {"command": "emit", "tuple": ["w"], "anchors": ["1", "2"], "need_task_ids": False},  # two anchors
    {"command": "emit", "tuple": ["w"], "anchors": ["1"]},  # task ids asked for
    {"command": "emit", "tuple": ["w"], "anchors": ["1"], "need_task_ids": True},
    {"command": "emit", "tuple": ["w"], "anchors": [1], "need_task_ids": False},  # an id as a number
    {"command": "emit", "tuple": [b"raw", 1.5, 300, {"k": 1}], "anchors": ["1"], "need_task_ids": False},
    {"command": "emit", "anchors": ["1"], "tuple": ["w"], "need_task_ids": False},  # another key order
    {"command": "ack", "id": 5}, {"command": "fail", "id": "1"}, {"command": "sync"}, {"pid": 4},
])
def test_msgpack_shorthand_leaves_every_other_message_a_map_in_order(other: dict[str, object]) -> None:
    data = msgpack.packb(_pystorm_emit("a", "1")) + msgpack.packb(other) + msgpack.packb({"command": "ack", "id": "1"})
    assert MsgpackDecoder(shorthand=True).feed(data) == [(["a"], 1), other, 1]  # pystorm's again after it
    dec = MsgpackDecoder(shorthand=True)
    out = []
    for i in range(0, len(data), 7):  # cut anywhere, messages included
        out += dec.feed(data[i:i + 7])
    out += dec.feed(msgpack.packb({"command": "ack", "id": "2"}))  # shorthand again once the unpacker is done
    assert MsgpackDecoder(shorthand=True).feed(data + msgpack.packb(other) + data) == [
        (["a"], 1), other, 1, other, (["a"], 1), other, 1]  # after two others in a row: the unpacker reads the rest
    assert out[1] == other and len(out) == 4 and out[3] == 2
    assert out[0] in (_pystorm_emit("a", "1"), (["a"], 1)) and out[2] in ({"command": "ack", "id": "1"}, 1)


def test_msgpack_shorthand_hands_garbage_and_bad_utf8_to_the_unpacker_errors() -> None:
    emit = msgpack.packb(_pystorm_emit("a", "1"))
    bad_utf8 = emit.replace(b"\xa1a", b"\xa1\xff")
    for data in (emit + b"\xc1", emit + msgpack.packb(3), bad_utf8):
        with pytest.raises(ProtocolError, match=r"not (msgpack|the multilang protocol)"):
            MsgpackDecoder(shorthand=True).feed(data)


def test_pack_values_writes_the_packers_bytes_or_declines() -> None:
    packer = msgpack.Packer(use_bin_type=True)
    for values in (["storm"], [], ["\u00e9", 0, 127, None, True, False], ["x" * 31, "y" * 32, "z" * 255],
                   ["w"] * 15):
        assert pack_values(values) == packer.pack(values)
    for values in (["w"] * 16, ["z" * 256], [128], [-1], [1.5], [b"raw"], [["nested"]], ["\ud800"]):
        assert pack_values(values) is None
    assert pack_str("17") == packer.pack("17") and pack_str("x" * 200) == packer.pack("x" * 200)
    assert pack_str("x" * 256) is None
    ser, comp, stream = MsgpackSerializer(), "split", "default"
    for task in (1, 2, 1, 3):  # the same source names (one object each) from other tasks
        assert ser.encode_tuple("5", comp, stream, task, ["w"]) == ser.encode(
            {"id": "5", "comp": comp, "stream": stream, "task": task, "tuple": ["w"]})


def _pystorm_json(msg: dict[str, object]) -> bytes:
    """A message as pystorm's JSON serializer writes it (``json.dumps`` defaults: ASCII, ``", "`` and ``": "``)."""
    return (json.dumps(msg) + "\nend\n").encode()


def test_json_shorthand_reads_pystorm_emits_and_acks_as_json_would() -> None:
    values = [["storm"], [], ["a b", "", "x,y", "]", "don't", "~"], ["w"] * 20]
    msgs: list[dict[str, object]] = []
    for i, tid in enumerate(t for t in _IDS if t.isascii()):  # others are escaped: read by json.loads
        vals = values[i % len(values)]
        msgs.append(_pystorm_emit(vals, tid) | {"tuple": vals})
        msgs.append({"command": "ack", "id": tid})
    data = b"".join(_pystorm_json(m) for m in msgs)
    out = JsonSerializer().decoder(shorthand=True).feed(data)
    assert out == [(m["tuple"], _short_id(m["anchors"][0])) if m["command"] == "emit" else _short_id(m["id"])  # type: ignore[index, arg-type]
                   for m in msgs]
    assert JsonSerializer().decoder().feed(data) == msgs  # without shorthand: maps, as ever


@pytest.mark.parametrize("other", [
    _pystorm_emit("w", "1", stream="words"),
    {"command": "emit", "tuple": ["w"], "anchors": ["1", "2"], "need_task_ids": False},
    {"command": "emit", "tuple": ["w"], "anchors": ["1"]},
    {"command": "emit", "tuple": ["w"], "anchors": ["1"], "need_task_ids": True},
    {"command": "emit", "tuple": ["w"], "anchors": [1], "need_task_ids": False},
    {"command": "emit", "tuple": [1, 2.5, None, True, ["n"]], "anchors": ["1"], "need_task_ids": False},
    *({"command": "emit", "tuple": ["w", odd], "anchors": ["1"], "need_task_ids": False}
      for odd in ('q"uote', "back\\slash", "\u00e9", "tab\t")),
    {"command": "emit", "tuple": ['"], "anchors": ["9'], "anchors": ["1"], "need_task_ids": False},
    {"command": "emit", "anchors": ["1"], "tuple": ["w"], "need_task_ids": False},
    {"command": "ack", "id": 5}, {"command": "ack", "id": 'a"b'}, {"command": "fail", "id": "1"}, {"command": "sync"},
])
def test_json_shorthand_leaves_every_other_message_a_map(other: dict[str, object]) -> None:
    first, last = _pystorm_json(_pystorm_emit("a", "1")), _pystorm_json({"command": "ack", "id": "1"})
    assert JsonSerializer().decoder(shorthand=True).feed(first + _pystorm_json(other) + last) == [
        (["a"], 1), other, {"command": "ack", "id": "1"}]
    assert JsonSerializer().decoder(shorthand=True).feed(_pystorm_json(other)) == [other]


def test_json_shorthand_still_refuses_what_is_not_the_protocol() -> None:
    good = _pystorm_json({"command": "ack", "id": "1"})
    for bad in (b'{"command": "ack", "id": "2"} x\nend\n', b'{"command": "emit", "tuple": ["a"], "anchors": ["1"], '
                b'"need_task_ids": false\nend\n', b'{"command": "ack", "id": "1\x01"}\nend\n'):
        with pytest.raises(ProtocolError, match="not a JSON message"):
            JsonSerializer().decoder(shorthand=True).feed(good + bad + good)


def test_json_dump_values_writes_the_encoders_text_or_declines() -> None:
    ser, quote = JsonSerializer(), json.encoder.encode_basestring_ascii
    for values in (["storm"], [], ["a b", 7, -3, 10**30, "~"]):
        assert dump_values(values, quote) == json.dumps(values, separators=(",", ":"))
        assert ser.encode_tuple("4", "c", "s", 1, values) == ser.encode(
            {"id": "4", "comp": "c", "stream": "s", "task": 1, "tuple": values})
    for values in (['q"', "b\\"], ["\u00e9", "tab\t", "\x7f", "\ud800"]):  # escaped as the encoder does
        assert dump_values(values, quote) == json.dumps(values, separators=(",", ":"))
    for values in ([True], [None], [1.5], [["n"]], ["w", {"k": 1}]):
        assert dump_values(values, quote) is None
        assert ser.encode_tuple("4", "c", "s", 1, values) == ser.encode(
            {"id": "4", "comp": "c", "stream": "s", "task": 1, "tuple": values})
    assert ser.encode_tuple('i"d', "c", "s", 1, ["w"]) == ser.encode(
        {"id": 'i"d', "comp": "c", "stream": "s", "task": 1, "tuple": ["w"]})


def test_watcher_lets_a_busy_process_output_gather_before_waking(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    events: list[object] = []
    monkeypatch.setattr(process_module, "_gather", lambda secs: events.append(("gather", secs)))
    for busy in (True, False):
        events.clear()
        woken = threading.Event()
        proc = ShellProcess(["true"], tmp_path, MsgpackSerializer(), "c",
                            wake=lambda: (events.append("wake"), woken.set()), busy=lambda b=busy: b)
        read_fd, write_fd = os.pipe()
        with os.fdopen(read_fd, "rb") as stdout:
            watcher = threading.Thread(target=proc._watch, args=(stdout,), daemon=True)
            proc._gate.acquire()  # as launch leaves it: the executor holds the gate until it read
            watcher.start()
            os.write(write_fd, b"\x80")
            assert woken.wait(10)
            proc.kill()  # lets the watcher see it is closing, and removes the pid directory
            watcher.join(10)
        os.close(write_fd)
        assert events == ([("gather", GATHER_WAIT), "wake"] if busy else ["wake"])


def test_a_shell_bolt_is_busy_with_more_than_one_input_out_and_a_spout_never() -> None:
    bolt = ShellBolt("x")
    bolt._ledger = PendingLedger()
    assert not bolt._busy()
    bolt._ledger.add("a")
    assert not bolt._busy()  # its one answer is what the process writes now
    bolt._ledger.add("b")
    assert bolt._busy()
    assert not ShellSpout("x")._busy()
