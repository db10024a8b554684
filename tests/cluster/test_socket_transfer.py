"""The worker-to-worker transfer over real ZeroMQ sockets: frames, corrupted input, backpressure, pruning."""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

import pytest

from storm_py.api.topology import ComponentSpec, Grouping, StormTopology
from storm_py.api.tuple import Fields, Tuple, tuple_anchors
from storm_py.clock import wait_until
from storm_py.runtime.acker import ACK, ACKED, INIT
from storm_py.runtime.transfer.frames import FrameDecoder, encode_entries
from storm_py.runtime.transfer.socket_transfer import SocketTransfer
from storm_py.transport.zmq import ZmqTransport
from tests.zk_fixture import free_port

pytestmark = pytest.mark.timeout(60)

WAIT = 20.0
COMPONENTS = {1: "spout", 2: "split", 3: "split", 4: "__acker"}
STREAMS = {"spout": {"default": Fields("sentence")}, "split": {"default": Fields("word")}, "__acker": {}}
#: The topology those tasks belong to (what the receiving side checks each entry's target against).
TOPOLOGY = StormTopology(
    {"spout": ComponentSpec("spout", None, 1, True, streams={"default": (Fields("sentence"), False)})},
    {"split": ComponentSpec("split", None, 2, False, inputs={("spout", "default"): Grouping("shuffle"),
                                                                   ("split", "default"): Grouping("shuffle")},
                            streams={"default": (Fields("word"), False)}),
     "__acker": ComponentSpec("__acker", None, 1, False)},
)  # fmt: skip


class FakeRuntime:
    """What a SocketTransfer reads of a WorkerRuntime; whether its "loop" takes batches in is up to the test."""

    def __init__(self, limit: int) -> None:
        self.conf: dict[str, Any] = {}
        self.send_remote: Any = None
        self.unsent: list[Any] = []
        self.backlog = 0
        self.backlog_limit = limit
        self.inbound: deque[Any] = deque()
        self.wake = threading.Event()
        self.task_to_component = COMPONENTS
        self.topology = TOPOLOGY
        self.worker_tasks = sorted(COMPONENTS)
        self.component_streams = STREAMS
        self.columnar_streams: frozenset[tuple[str, str]] = frozenset()
        self.batches: list[Any] = []
        self.errors: list[tuple[str, int, BaseException]] = []
        self.lock = threading.Lock()
        self.draining = True

    def deliver(self, entries: Any) -> None:
        self.inbound.append(entries)
        if self.draining:
            self._take_in()

    def _take_in(self) -> None:
        with self.lock:
            while self.inbound:
                self.batches.append(self.inbound.popleft())

    def stuck(self) -> None:
        """The executors' inboxes are full and nothing is taken in."""
        self.draining = False
        self.backlog = self.backlog_limit

    def drain(self) -> None:
        self.draining = True
        self.backlog = 0
        self._take_in()

    def items(self) -> list[Any]:
        with self.lock:
            return [item for e in self.batches for _, items in e for item in items]

    def report_error(self, component_id: str, task: int, exc: BaseException) -> None:
        self.errors.append((component_id, task, exc))

    def fail_unsent(self, items: list[Any]) -> None:
        self.unsent.extend(items)


class Pair:
    """Two transfers on loopback: ``a`` sends to ``b``."""

    def __init__(self, limit_a: int = 1000, limit_b: int = 1000, hwm: int = 100) -> None:
        self.rt_a, self.rt_b = FakeRuntime(limit_a), FakeRuntime(limit_b)
        self.port_a, self.port_b = free_port(), free_port()
        hosts = {"a": "127.0.0.1", "b": "127.0.0.1"}
        self.a = SocketTransfer(ZmqTransport(hwm=hwm), "127.0.0.1", hosts.get)
        self.b = SocketTransfer(ZmqTransport(hwm=hwm), "127.0.0.1", hosts.get)
        self.a.bind(f"a:{self.port_a}", self.rt_a)
        self.b.bind(f"b:{self.port_b}", self.rt_b)
        self.to_b = f"b:{self.port_b}"

    def close(self) -> None:
        self.a.close()
        self.b.close()


@pytest.fixture
def pair():
    made: list[Pair] = []

    def make(**kw: Any) -> Pair:
        p = Pair(**kw)
        made.append(p)
        return p

    yield make
    for p in made:
        p.close()


def word(w: str, task: int = 2, ids: list[int] | dict[int, int] | None = None) -> Tuple:
    return Tuple([w], Fields("word"), "split", "default", task, ids)


def test_frames_round_trip_tuples_and_ack_rows() -> None:
    root = (1 << 64) - 5
    entries = [
        (3, [word("cow", ids={root: 17, 5: 9}), word("moon")]),
        (4, [(INIT, root, 12345, 1), (ACK, root, 7)]),
        (1, [(ACKED, root, 12)]),
    ]
    encoded = encode_entries("w1", entries)  # type: ignore[arg-type]
    assert encoded.count == 5 and not encoded.rejected and encoded.frame is not None
    src, out, n = FrameDecoder(COMPONENTS, STREAMS).decode(encoded.frame)
    assert (src, n) == ("w1", 5)
    assert [t for t, _ in out] == [3, 4, 1]
    cow, moon = out[0][1]
    assert cow.values == ["cow"] and cow.fields == Fields("word") and cow.source_component == "split"
    assert cow.source_task == 2 and cow.source_stream == "default" and cow._ids == {root: 17, 5: 9}
    assert moon._ids is None
    assert out[1][1] == [(INIT, root, 12345, 1), (ACK, root, 7)]
    assert out[2][1] == [(ACKED, root, 12)]


def test_batches_reach_the_peer_in_order(pair) -> None:
    p = pair()
    for i in range(50):
        p.a.send(p.to_b, [(2, [word(f"w{i}")]), (4, [(ACK, i, i)])])
    wait_until(lambda: len(p.rt_b.items()) == 100, WAIT, what="100 items at b")
    words = [t.values[0] for t in p.rt_b.items() if isinstance(t, Tuple)]
    assert words == [f"w{i}" for i in range(50)]
    m = p.a.metrics()
    assert m["frames_sent"] == 50 and m["tuples_sent"] == 100
    assert p.b.metrics()["frames_received"] == 50


def test_a_corrupted_frame_is_rejected_and_counted_and_receiving_goes_on(pair) -> None:
    p = pair()
    raw = ZmqTransport()
    try:
        sender = raw.connect(f"tcp://127.0.0.1:{p.port_b}")
        sender.send(b"\x01garbage that is not msgpack \xc1\xc1")
        sender.send(b"")
        sender.send(b"\x07wrong version")
        p.a.send(p.to_b, [(2, [word("after")])])
        wait_until(lambda: len(p.rt_b.items()) == 1, WAIT, what="the good frame")
        wait_until(lambda: p.b.metrics()["frames_rejected"] == 3, WAIT, what="3 rejected frames")
    finally:
        raw.close()
    assert p.rt_b.items()[0].values == ["after"]


def test_a_tuple_from_an_unknown_task_rejects_its_frame(pair) -> None:
    p = pair()
    p.a.send(p.to_b, [(2, [Tuple(["x"], Fields("word"), "split", "default", 99, None)])])
    p.a.send(p.to_b, [(2, [word("ok")])])
    wait_until(lambda: len(p.rt_b.items()) == 1, WAIT, what="the good frame")
    assert p.b.metrics()["frames_rejected"] == 1


def test_unencodable_values_are_dropped_counted_reported_and_failed(pair) -> None:
    p = pair()
    bad = Tuple([{1, 2}], Fields("word"), "split", "default", 2, [77, 5])
    p.a.send(p.to_b, [(2, [word("fine"), bad])])
    wait_until(lambda: len(p.rt_b.items()) == 1, WAIT, what="the encodable tuple")
    assert p.a.metrics()["dropped_unencodable"] == 1
    assert p.rt_a.errors and p.rt_a.errors[0][0] == "split"
    assert "set" in str(p.rt_a.errors[0][2])
    assert p.rt_a.unsent == [bad]  # its tree is failed at once, not at the message timeout


def test_a_peer_with_unknown_host_is_counted_as_dropped(pair) -> None:
    p = pair()
    p.a.send("nowhere:1234", [(2, [word("lost"), word("lost")])])
    assert p.a.metrics()["dropped_no_peer"] == 2


def test_an_overloaded_receiver_makes_the_sender_wait_and_pause_its_spouts(pair) -> None:
    frames, per_frame = 200, 100
    total = frames * per_frame
    p = pair(limit_a=5000, limit_b=50, hwm=2)
    p.rt_b.stuck()  # b's executors are stuck: its receive budget (50 tuples) is used up
    pad = "x" * 1000  # big enough frames to fill the kernel's socket buffers as well
    for f in range(frames):
        p.a.send(p.to_b, [(2, [word(f"{f}:{i}:{pad}") for i in range(per_frame)])])
    wait_until(lambda: p.b.metrics()["receive_waits"] >= 1, WAIT, what="b to hold back")
    wait_until(lambda: p.a.metrics()["overflow_tuples"] > 0, WAIT, what="frames waiting at a")
    m = p.a.metrics()
    assert m["send_blocked"] >= 1
    # a's work budget shrank by what waits in overflow: its spouts pause once it reaches zero
    assert p.rt_a.backlog_limit == 0
    assert len(p.rt_b.items()) < total
    # b's executors catch up: everything arrives, in order, and a's budget is restored
    p.rt_b.drain()
    def all_in() -> bool:
        return len(p.rt_b.items()) == total

    wait_until(all_in, WAIT, what=f"all {total} tuples at b")
    wait_until(lambda: p.rt_a.backlog_limit == 5000, WAIT, what="a's budget back")
    m = p.a.metrics()
    assert m["overflow_tuples"] == 0 and m["overflow_max"] > 5000 and m["tuples_sent"] == total
    words = [t.values[0].rsplit(":", 1)[0] for t in p.rt_b.items()]
    assert words == [f"{f}:{i}" for f in range(frames) for i in range(per_frame)]


def test_pruning_a_gone_peer_drops_its_overflow_and_restores_the_budget(pair) -> None:
    p = pair(limit_a=100, hwm=1)
    dead = f"b:{free_port()}"  # nobody listens there: frames pile up
    for _ in range(20):
        p.a.send(dead, [(2, [word("x") for _ in range(5)])])
    wait_until(lambda: p.a.metrics()["overflow_tuples"] > 0, WAIT, what="overflow")
    p.a.prune([p.to_b])
    m = p.a.metrics()
    assert m["overflow_tuples"] == 0 and m["dropped_pruned"] > 0
    assert p.rt_a.backlog_limit == 100


def test_batches_not_taken_in_by_a_busy_loop_hold_the_receiver_back(pair) -> None:
    from storm_py.runtime.transfer.socket_transfer import INBOUND_BATCHES_MAX

    p = pair()
    p.rt_b.draining = False  # the loop is busy: handed batches pile up, executors' inboxes are not full
    for i in range(INBOUND_BATCHES_MAX + 10):
        p.a.send(p.to_b, [(2, [word(f"w{i}")])])
    wait_until(lambda: p.b.metrics()["receive_waits"] >= 1, WAIT, what="b to hold back")
    assert len(p.rt_b.inbound) == INBOUND_BATCHES_MAX
    p.rt_b.drain()
    wait_until(lambda: len(p.rt_b.items()) == INBOUND_BATCHES_MAX + 10, WAIT, what="the rest")


def test_runs_of_tuples_travel_as_one_entry_each() -> None:
    """Tuples of one (task, stream, source task) go as one entry; a mixed batch splits into runs."""
    from storm_py.protocol.messages import KIND_ACKER_ROWS, KIND_TUPLES, decode_frame

    root = (1 << 64) - 5
    items = [
        word("a", ids=[root, 1]), word("b"), word("c", task=3), word("d", task=3, ids={root: 2, 7: 9}),
        word("f", task=3), word("e", task=3, ids={5: 6}),
    ]
    encoded = encode_entries("w1", [(5, items), (6, [word("g"), word("h")]), (4, [(ACK, root, 7), (ACK, 3, 1)])])
    assert encoded.frame is not None and encoded.count == 10
    kinds = [e[1] for e in decode_frame(encoded.frame).payload]
    assert kinds == [KIND_TUPLES, KIND_TUPLES, KIND_TUPLES, KIND_ACKER_ROWS]
    assert decode_frame(encoded.frame).payload[2][5] == []  # no tuple of the run is anchored
    _, out, n = FrameDecoder(COMPONENTS, STREAMS).decode(encoded.frame)
    assert n == 10
    got = out[0][1]
    assert [t.values[0] for t in got] == ["a", "b", "c", "d", "f", "e"]
    assert [t.source_task for t in got] == [2, 2, 3, 3, 3, 3]
    assert [tuple_anchors(t) for t in got] == [[root, 1], None, None, {root: 2, 7: 9}, None, [5, 6]]
    assert [t._ids for t in got] == [None, None, None, {root: 2, 7: 9}, None, None]  # one anchor: two slots
    assert [t.message_id.anchors_to_ids for t in got] == [{root: 1}, {}, {}, {root: 2, 7: 9}, {}, {5: 6}]
    assert [(t.values, tuple_anchors(t)) for t in out[1][1]] == [(["g"], None), (["h"], None)]
    assert out[2] == (4, [(ACK, root, 7), (ACK, 3, 1)])


def test_malformed_runs_are_rejected_with_the_entry_named() -> None:
    from storm_py.errors import CodecError
    from storm_py.protocol.codec import encode
    from storm_py.protocol.messages import FRAME_TUPLES, KIND_TUPLES, decode_frame

    bad = [
        [1, KIND_TUPLES, "default", 2, [["a"]], [None]],  # anchors neither none (unanchored) nor two per tuple
        [1, KIND_TUPLES, "default", 2, [["a"], ["b"]], [5, 6]],
        [1, KIND_TUPLES, "default", 2, [["a"]], [None, {-1: 3}]],  # negative root
        [1, KIND_TUPLES, "default", 2, [["a"]], [-1, 3]],
        [1, KIND_TUPLES, "default", 2, ["a"], [None, None]],  # values not a list
        [1, KIND_TUPLES, "default", 2, [["a"]], [5, None]],  # a root without its edge
        [1, KIND_TUPLES, "default", 2, [["a"]], [5, "x"]],  # an edge that is not an int
        [1, KIND_TUPLES, "default", 2, [["a"]], [None, [5, 6]]],  # several anchors not as a map
    ]
    for entry in bad:
        with pytest.raises(CodecError, match=r"entries\[0\]"):
            decode_frame(encode([FRAME_TUPLES, "w", [entry]]))
