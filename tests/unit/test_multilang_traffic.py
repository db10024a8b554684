"""A shell bolt's per-tuple traffic: its fast paths do what the general ones do."""

from __future__ import annotations

from typing import Any

import pytest

from storm_py.api.tuple import Fields, Tuple
from storm_py.clock import Clock
from storm_py.multilang import ShellBolt
from storm_py.multilang.ledger import PendingLedger
from storm_py.multilang.serializer import JsonSerializer, MsgpackSerializer, Serializer
from storm_py.multilang.traffic import BoltTraffic


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


@pytest.mark.parametrize("cls", [ShellBolt, _OwnExecute])
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
    else:
        assert bolt.execute == bolt.__class__.execute.__get__(bolt)
        assert "execute" not in bolt.__dict__

