"""A shell bolt's per-tuple traffic: its fast paths do what the general ones do."""

from __future__ import annotations

import json
import random
from collections import defaultdict, deque
from types import SimpleNamespace
from typing import Any

import msgpack
import pytest

from storm_py.api.tuple import Fields, Tuple
from storm_py.clock import Clock, SimulatedClock
from storm_py.multilang import ShellBolt
from storm_py.multilang.json_wire import JsonSerializer
from storm_py.multilang.ledger import PendingLedger
from storm_py.multilang.msgpack_wire import MsgpackDecoder, MsgpackSerializer
from storm_py.multilang.traffic import BoltTraffic
from storm_py.multilang.wire import EncodeError, ProtocolError, Serializer
from storm_py.runtime.acker import ACK
from storm_py.runtime.bolt_collectors import BoltCollector, SentAcks
from storm_py.runtime.executor import ExecutorStats
from storm_py.runtime.ids import IdSource


class _Collector:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def emit(self, values: Any, anchors: Any = None, stream: str = "default") -> list[int]:
        self.calls.append(("emit", values, anchors, stream))
        return [7]

    def emit_direct(self, task: int, values: Any, anchors: Any = None, stream: str = "default") -> None:
        self.calls.append(("emit_direct", task, values, anchors, stream))

    def ack(self, tup: Any) -> None:
        self.calls.append(("ack", tup))


def _tuple(*values: Any) -> Tuple:
    return Tuple(list(values), Fields([f"f{i}" for i in range(len(values))]), "spout", "default", 3, None)


@pytest.mark.parametrize("ser", [MsgpackSerializer(), JsonSerializer()], ids=["msgpack", "json"])
def test_execute_writes_while_the_process_has_room_and_hands_the_rest_to_the_bolt(ser: Serializer) -> None:
    general: list[Tuple] = []
    refused: list[tuple[Tuple, str]] = []
    ledger: PendingLedger[Tuple] = PendingLedger()
    traffic = BoltTraffic(ledger, ser, _Collector(), 2, general.append, lambda t, e: refused.append((t, e.message)))
    first, second, third = _tuple("a b"), _tuple("c", 1), _tuple("d")

    traffic.execute(first)  # no process: the bolt starts one or fails the tuple
    assert general == [first] and not traffic.outbuf and not len(ledger)

    traffic.unsent = bytearray()
    traffic.execute(first)
    traffic.execute(second)  # written as the general path writes them: under the next pending ids
    assert traffic.outbuf == [
        ser.encode({"id": "1", "comp": "spout", "stream": "default", "task": 3, "tuple": ["a b"]}),
        ser.encode({"id": "2", "comp": "spout", "stream": "default", "task": 3, "tuple": ["c", 1]}),
    ]
    assert ledger.anchor("1") is first and ledger.anchor("2") is second

    traffic.execute(third)  # max pending (2) messages wait to be written: the bolt waits for room
    assert general == [first, third] and len(traffic.outbuf) == 2

    traffic.outbuf.clear()
    traffic.unsent += b"held back by the pipe"
    traffic.execute(third)  # the pipe holds back bytes: nothing more is queued
    assert general == [first, third, third] and not traffic.outbuf

    traffic.unsent.clear()
    bad = _tuple(object())
    traffic.execute(bad)  # a value the format cannot carry: refused, not pending
    assert [t for t, _ in refused] == [bad] and "cannot encode" in refused[0][1]
    assert len(ledger) == 2 and not traffic.outbuf


class _OwnExecute(ShellBolt):
    def execute(self, tup: Tuple) -> None:
        raise AssertionError("not called here")


class _OwnRoom(ShellBolt):
    def room(self) -> int:
        return min(1, super().room())


@pytest.mark.parametrize("cls", [ShellBolt, _OwnExecute, _OwnRoom])
def test_a_prepared_shell_bolt_executes_through_its_traffic_unless_a_subclass_overrides_execute(
        cls: type[ShellBolt], monkeypatch: pytest.MonkeyPatch) -> None:
    bolt = cls("x")

    def setup(conf: dict[str, Any], context: Any) -> None:
        bolt.__dict__.update(_clock=Clock(), _timeout=30.0, _serializer=MsgpackSerializer(), _process=None,
                             component_id="split")

    monkeypatch.setattr(bolt, "_setup", setup)
    monkeypatch.setattr(bolt, "_restart", lambda now: False)
    bolt.prepare({}, None, _Collector())  # type: ignore[arg-type]
    if cls is ShellBolt:
        assert bolt.execute == bolt._traffic.execute
    else:  # its own execute, or ShellBolt's asking its own room
        assert bolt.execute == bolt.__class__.execute.__get__(bolt)
        assert "execute" not in bolt.__dict__



def test_ids_read_as_numbers_are_the_ids_written_and_refused_alike() -> None:
    ledger: PendingLedger[str] = PendingLedger()
    a, b, c = ledger.add("A"), ledger.add("B"), ledger.add("C")
    assert (a, b, c) == ("1", "2", "3")
    assert ledger.anchor_number(1) == ledger.anchor(a) == ledger.anchor(1) == "A"
    assert ledger.answer_number(1, "ack") == "A"
    for refused in (lambda: ledger.answer(a, "ack"), lambda: ledger.answer_number(1, "ack")):
        with pytest.raises(ProtocolError, match=r"ack of an id that is not pending .*: '1'$"):
            refused()
    for refused in (lambda: ledger.anchor(a), lambda: ledger.anchor_number(1)):
        with pytest.raises(ProtocolError, match=r"^anchored to '1', which is not pending"):
            refused()
    for other in ("02", "+2", " 2", "2 ", "2.0", "\u0662", "", 2.0, True, None, [2], -2):
        with pytest.raises(ProtocolError, match="not pending"):
            ledger.answer(other, "fail")
        with pytest.raises(ProtocolError, match=r"anchored to"):
            ledger.anchors([other])
    assert len(ledger) == 2
    assert ledger.answer(2, "fail") == "B"  # an id echoed as a number is the same id
    assert ledger.discard(c) == "C" and not len(ledger)


def _pystorm_answers(ser: Serializer, anchor: str) -> bytes:
    """What pystorm writes for a sentence: its words' emits anchored to it, then its ack."""
    msgs: list[dict[str, Any]] = [{"command": "emit", "tuple": [w], "anchors": [anchor], "need_task_ids": False}
                                  for w in ("the", "quick", "fox")]
    msgs.append({"command": "ack", "id": anchor})
    if isinstance(ser, MsgpackSerializer):
        return b"".join(msgpack.packb(m) for m in msgs)
    return b"".join((json.dumps(m) + "\nend\n").encode() for m in msgs)


@pytest.mark.parametrize("ser", [MsgpackSerializer(), JsonSerializer()], ids=["msgpack", "json"])
def test_short_emits_and_acks_are_carried_out_as_their_maps(ser: Serializer) -> None:
    """The same bytes read with the shorthand (ids as numbers, no maps) and without: the same emits and acks."""
    calls = []
    sentence = _tuple("the quick fox")
    for shorthand in (True, False):
        collector = _Collector()
        ledger: PendingLedger[Tuple] = PendingLedger()
        traffic = BoltTraffic(ledger, ser, collector, 100, _unused, _unused)
        tid = ledger.add(sentence)
        inbox = deque(ser.decoder(shorthand).feed(_pystorm_answers(ser, tid)))
        assert all(type(m) is not dict for m in inbox) is shorthand
        assert traffic.carry_out(inbox) is None and not inbox and not len(ledger)
        calls.append(collector.calls)
        assert collector.calls[-1] == ("ack", sentence) and collector.calls[0][2] is sentence
    assert calls[0] == calls[1]
    assert not traffic.outbuf  # no task ids asked for

    collector = _Collector()
    traffic = BoltTraffic(PendingLedger(), ser, collector, 100, _unused, _unused)
    for unknown in ([(["w"], 5)], [5], [(["w"], "05")], ["05"]):
        with pytest.raises(ProtocolError, match=r"'5'|'05'"):
            traffic.carry_out(deque(unknown))
    assert not collector.calls


def _unused(*args: Any) -> None:
    raise AssertionError("not called here")


def test_the_ledger_answers_as_a_map_of_its_ids_would_whatever_the_order() -> None:
    """Random adds, answers (in order, out of order, some ids kept for long), anchors and drains against a dict."""
    rng = random.Random(7)
    ledger: PendingLedger[int] = PendingLedger()
    model: dict[str, int] = {}
    written = 0
    kept = set()
    for step in range(30000):
        r = rng.random()
        if r < 0.5 or not model:
            written += 1
            tid = ledger.add(written)
            assert tid == str(written) and tid not in model
            model[tid] = written
            if rng.random() < 0.002:
                kept.add(tid)  # answered only at the end: the window moves past it
        else:
            choices = [t for t in list(model)[:8] if t not in kept] or list(model)
            tid = rng.choice(choices) if rng.random() < 0.7 else rng.choice(list(model))
            if tid in kept and step < 29000:
                assert ledger.anchor(tid) == model[tid]
                continue
            read_as = int(tid) if rng.random() < 0.5 else tid
            if rng.random() < 0.2:
                assert ledger.anchor(read_as) == model[tid] == ledger.anchor_number(int(tid))
            assert (ledger.answer_number(int(tid), "ack") if type(read_as) is int
                    else ledger.answer(read_as, "ack")) == model.pop(tid)
            kept.discard(tid)
            for gone in (tid, str(written + 1), "0"):
                with pytest.raises(ProtocolError, match="not pending"):
                    ledger.answer(gone, "ack")
                with pytest.raises(ProtocolError, match="not pending"):
                    ledger.anchor_number(int(gone))
        assert len(ledger) == len(model)
        if step % 9000 == 8999:
            assert ledger.drain() == list(model.values())
            model.clear()
            kept.clear()
            assert not len(ledger)
    assert ledger.drain() == list(model.values())


def _as_map(msg: Any) -> Any:
    """A message as the unpacker reads it (the shorthand's forms written out; an id read as a number was its
    string)."""
    if type(msg) is tuple:
        tid = msg[1]
        return {"command": "emit", "tuple": msg[0], "anchors": [str(tid)], "need_task_ids": False}
    if type(msg) in (int, str):
        return {"command": "ack", "id": str(msg)}
    return msg


def test_the_msgpack_shorthand_reads_any_mix_in_any_pieces_as_the_unpacker_does() -> None:
    rng = random.Random(11)
    others: list[dict[str, Any]] = [
        {"command": "log", "msg": "hello", "level": 2}, {"command": "sync"},
        {"command": "emit", "tuple": ["w"], "stream": "words", "anchors": ["3"], "need_task_ids": False},
        {"command": "ack", "id": 12}, {"command": "fail", "id": "4"},
        {"command": "emit", "tuple": ["w", 1.5], "anchors": ["07"], "need_task_ids": False},
    ]
    for _ in range(200):
        msgs: list[dict[str, Any]] = []
        for _ in range(rng.randrange(1, 40)):
            r = rng.random()
            tid = str(rng.randrange(1, 10**6)) if rng.random() < 0.9 else rng.choice(["0", "01", "x"])
            if r < 0.45:
                msgs.append({"command": "emit", "tuple": [rng.choice(["a", "bb", "\u00e9"])], "anchors": [tid],
                             "need_task_ids": False})
            elif r < 0.9:
                msgs.append({"command": "ack", "id": tid})
            else:
                msgs.append(rng.choice(others))
        data = b"".join(msgpack.packb(m) for m in msgs)
        dec = MsgpackDecoder(shorthand=True)
        out: list[Any] = []
        p = 0
        while p < len(data):
            n = rng.choice([1, 7, 40, len(data)])
            out += dec.feed(data[p:p + n])
            p += n
        assert [_as_map(m) for m in out] == msgs


@pytest.mark.parametrize("tid", ["1", "123456", "x" * 31, "x" * 32, "\u00e9", "\ud800", ""])
def test_a_msgpack_tuple_message_is_the_packers_map_whatever_its_id(tid: str) -> None:
    ser = MsgpackSerializer()
    packer = msgpack.Packer(use_bin_type=True, unicode_errors="surrogatepass")
    for values in (["w"], ["a", 1, None], [1.5]):
        whole = {"id": tid, "comp": "split", "stream": "default", "task": 3, "tuple": values}
        try:
            expected = ser.encode(whole)
        except EncodeError:
            with pytest.raises(EncodeError):
                ser.encode_tuple(tid, "split", "default", 3, values)
            continue
        assert ser.encode_tuple(tid, "split", "default", 3, values) == expected == packer.pack(whole)


def test_a_later_ack_ends_the_process_latency_of_a_sampled_input_and_only_of_it() -> None:
    """A shell bolt acks in a later pass than the one that executed the input: the collector's ack takes the
    sample of a sampled input out (its process latency from the batch's start), and leaves the others."""
    stats = ExecutorStats()
    rt = SimpleNamespace(routes_for=lambda task: {}, num_ackers=1, ids=IdSource(1), acker_for=lambda root: 0,
                         clock=SimulatedClock(10.0))
    outbuf: defaultdict[int, list[Any]] = defaultdict(list)
    host = SimpleNamespace(rt=rt, outbuf=outbuf, stats=stats, process_samples={}, component_id="split",
                           acks=SentAcks(outbuf, (0,)), report_error=None)
    collector = BoltCollector(host, 3)  # type: ignore[arg-type]
    sampled, other = (Tuple(["s"], Fields(["f"]), "spout", "default", 1, None, 7, 5) for _ in range(2))
    host.process_samples[id(sampled)] = 4.0  # its batch started at 4.0
    collector.ack(other)
    assert host.process_samples == {id(sampled): 4.0} and stats.process_count == 0
    collector.ack(sampled)
    assert host.process_samples == {} and stats.process_count == 1 and stats.process_secs == pytest.approx(6.0)
    host.acks.close()
    assert stats.acked == 2 and outbuf[0] == [(ACK, 7, 0)]  # the two acks of tree 7 merged into one row
