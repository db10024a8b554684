"""Forged and malformed frames of every kind against a worker's receive path (decoder + deliver + the worker
loop): nothing may raise out of it, reach a component, or stop the topology; every bad frame is counted.

Two real :class:`WorkerRuntime` s of an acked topology exchange real frames through their
:class:`SocketTransfer` s (the path of a worker process, bound on the in-memory transport); an attacker's frames
are handed to the same ``_on_frame`` the socket thread calls.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storm_py import BasicBolt, Fields, Spout, TopologyBuilder
from storm_py.clock import SimulatedClock
from storm_py.config import defaults
from storm_py.protocol.codec import encode
from storm_py.protocol.messages import (
    FRAME_TUPLES,
    KIND_ACKER,
    KIND_ACKER_ROWS,
    KIND_TUPLE,
    KIND_TUPLES,
)
from storm_py.runtime.system_topology import layout_tasks, system_topology
from storm_py.runtime.transfer import Entries
from storm_py.runtime.transfer.auth import FrameAuth
from storm_py.runtime.transfer.frames import encode_entries
from storm_py.runtime.transfer.socket_transfer import SocketTransfer
from storm_py.runtime.worker_runtime import WorkerRuntime
from storm_py.transport import open_transport

pytestmark = pytest.mark.slow

WORKERS = ("w0:1", "w1:2")


class NumberSpout(Spout):
    """Emits ``limit`` numbered tuples, each with a message id, and replays failed ones (at least once)."""

    def __init__(self, limit: int = 0) -> None:
        self.limit = limit
        self.acked: set[int] = set()
        self.failed: set[int] = set()
        self.replay: list[int] = []
        self.next = 0

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields(["n"]))

    def next_tuple(self) -> None:
        if self.replay:
            n = self.replay.pop()
            self.collector.emit([n], msg_id=n)
        elif self.next < self.limit:
            self.collector.emit([self.next], msg_id=self.next)
            self.next += 1

    def ack(self, msg_id: Any) -> None:
        self.acked.add(msg_id)

    def fail(self, msg_id: Any) -> None:
        self.failed.add(msg_id)
        self.replay.append(msg_id)


class Relay(BasicBolt):
    """Passes every number on (any value type is fine: it only counts)."""

    def execute(self, tup: Any, collector: Any) -> None:
        collector.emit([tup.values[0]])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields(["n"]))


class Sink(BasicBolt):
    def execute(self, tup: Any, collector: Any) -> None:
        pass

    def declare_output_fields(self, declarer: Any) -> None:
        pass


class Cluster:
    """Two runtimes (one executor of each component per worker) wired by their socket transfers."""

    def __init__(self, limit: int, auth: FrameAuth | None = None) -> None:
        self.auth = auth
        conf = defaults()
        conf.update({"topology.workers": 2, "topology.acker.executors": 2, "topology.message.timeout.secs": 5})
        b = TopologyBuilder()
        b.set_spout("numbers", NumberSpout(limit), 2)
        b.set_bolt("relay", Relay(), 2).shuffle_grouping("numbers")
        b.set_bolt("sink", Sink(), 2).fields_grouping("relay", ["n"])
        topology = system_topology(b.create_topology(), conf)
        layout = layout_tasks(topology)
        per: dict[str, list[tuple[str, tuple[int, int]]]] = {w: [] for w in WORKERS}
        seen: dict[str, int] = {}
        for cid, span in layout.all_executors():
            k = seen.get(cid, 0)
            seen[cid] = k + 1
            per[WORKERS[k % 2]].append((cid, span))
        task_to_worker = {t: w for w, ex in per.items() for _, (s, e) in ex for t in range(s, e + 1)}
        self.clock = SimulatedClock()
        self.errors: list[tuple[str, int, str]] = []
        self.frames: dict[str, list[bytes]] = {w: [] for w in WORKERS}
        self.runtimes: dict[str, WorkerRuntime] = {}
        self.transfers: dict[str, SocketTransfer] = {}
        self.tasks = sorted(task_to_worker)
        self.streams = sorted({s for c in topology.components().values() for s in c.streams})
        for i, w in enumerate(WORKERS):
            rt = WorkerRuntime(
                topology_id="fuzz", topology_name="fuzz", topology=topology, conf=conf, layout=layout,
                executors=per[w], task_to_worker=task_to_worker, worker_id=w, clock=self.clock,
                error_sink=lambda c, t, text: self.errors.append((c, t, text)), seed=i,
            )  # fmt: skip
            transfer = SocketTransfer(open_transport("memory"), f"fuzz-{id(self)}", resolve=lambda _n: None,
                                      auth=auth)  # fmt: skip
            transfer.bind(w, rt)
            rt.send_remote = self._sender(w)  # frames are carried by the test, through the peer's _on_frame
            rt.prepare()
            rt.set_active(True)
            self.runtimes[w], self.transfers[w] = rt, transfer

    def _sender(self, src: str) -> Any:
        def send(peer: str, entries: Entries) -> None:
            encoded = encode_entries(src, entries)
            assert encoded.frame is not None and not encoded.rejected
            frame = encoded.frame if self.auth is None else self.auth.seal(encoded.frame)
            self.frames[peer].append(frame)

        return send

    def spouts(self) -> list[NumberSpout]:
        return [s for rt in self.runtimes.values() for ex in rt.executors if ex.is_spout
                for s in ex.spouts.values()]  # type: ignore[attr-defined]  # fmt: skip

    def attack(self, worker: str, data: bytes) -> None:
        self.transfers[worker]._on_frame(data)

    def run(self, passes: int = 1) -> None:
        for _ in range(passes):
            for w, rt in self.runtimes.items():
                frames, self.frames[w] = self.frames[w], []
                for frame in frames:
                    self.transfers[w]._on_frame(frame)
                rt.run_once(self.clock.now())
            self.clock.advance(0.01)

    def rejected(self) -> int:
        return sum(t.counters.frames_rejected for t in self.transfers.values())

    def close(self) -> None:
        for t in self.transfers.values():
            t.close()


# ------------------------------------------------------------------------------------------- strategies
# Mostly well-formed frames aimed at real tasks, streams and codes (what gets past the layout check and would
# reach the worker loop), plus garbage of every kind.
u64 = st.integers(min_value=0, max_value=2**64 - 1)
small_ints = st.one_of(st.integers(-3, 12), u64, st.integers(min_value=-(2**63), max_value=-1))
atoms = st.one_of(st.none(), st.booleans(), small_ints, st.floats(allow_nan=True), st.text(max_size=8),
                  st.binary(max_size=8))  # fmt: skip
real_tasks = st.integers(0, 9)
tasks = st.one_of(real_tasks, real_tasks, real_tasks, atoms)
stream_names = st.one_of(st.sampled_from(["default", "__ack_init", "__ack_ack", "__ack_fail", "__tick", "__metrics",
                                          "__system"]), st.text(max_size=6), atoms)  # fmt: skip
values = st.one_of(st.lists(st.integers(0, 500), max_size=3), st.lists(atoms, max_size=4))
ids = st.one_of(st.none(), st.tuples(u64, u64).map(list), st.lists(small_ints, max_size=5),
                st.dictionaries(u64, u64, max_size=3), atoms)  # fmt: skip
# a run's anchors as the wire carries them: two items per tuple, ``root, edge`` / ``None, None`` / ``None, {map}``,
# well-formed or not
anchor_pair = st.one_of(st.tuples(u64, u64), st.tuples(st.none(), st.none()),
                        st.tuples(st.none(), st.dictionaries(u64, u64, max_size=3)), st.tuples(atoms, atoms),
                        st.tuples(u64, st.dictionaries(u64, u64, max_size=2)))  # fmt: skip
anchored_run = st.lists(st.tuples(values, anchor_pair), max_size=4)
row = st.one_of(st.builds(lambda code, rest: [code, *rest], st.integers(0, 8), st.lists(small_ints, max_size=4)),
                st.lists(small_ints, max_size=6))  # fmt: skip
rows = st.one_of(st.lists(row, max_size=4), st.lists(st.one_of(row, atoms), max_size=3))
entries = st.one_of(
    st.builds(lambda t, s, src, v, i: [t, KIND_TUPLE, s, src, v, i], tasks, stream_names, tasks, values, ids),
    st.builds(lambda t, s, src, vs, i: [t, KIND_TUPLES, s, src, vs, i], tasks, stream_names, tasks,
              st.lists(values, max_size=3), st.lists(ids, max_size=3)),
    st.builds(lambda t, s, src, run, extra: [t, KIND_TUPLES, s, src, [v for v, _ in run],
                                             [x for _, pair in run for x in pair][:len(run) * 2 + extra]],
              tasks, stream_names, tasks, anchored_run, st.integers(-2, 1)),
    st.builds(lambda t, r: [t, KIND_ACKER, r], tasks, st.one_of(row, atoms)),
    st.builds(lambda t, r: [t, KIND_ACKER_ROWS, r], tasks, rows),
    st.builds(lambda t, k, rest: [t, k, *rest], tasks, st.integers(-1, 6), st.lists(atoms, max_size=5)),
)
tuple_frames = st.builds(lambda src, e: encode([FRAME_TUPLES, src, e]), st.one_of(st.text(max_size=6), small_ints),
                         st.lists(entries, min_size=1, max_size=4))  # fmt: skip
frames = st.one_of(
    tuple_frames,
    tuple_frames,
    tuple_frames,
    st.builds(lambda t, src, p: encode([t, src, p]), st.integers(-1, 6), atoms, st.one_of(atoms, st.lists(atoms))),
    st.builds(lambda p: encode([1, "w", p]), st.dictionaries(atoms, atoms, max_size=3)),
    st.binary(max_size=64),
)

_CLUSTER: Cluster | None = None


def idle_cluster() -> Cluster:
    global _CLUSTER
    if _CLUSTER is None:
        _CLUSTER = Cluster(limit=0)
    return _CLUSTER


@pytest.fixture(autouse=True, scope="module")
def _close_idle_cluster() -> Iterator[None]:
    """The idle cluster the property test shares across examples is closed with the module (its receivers too)."""
    global _CLUSTER
    yield
    if _CLUSTER is not None:
        _CLUSTER.close()
        _CLUSTER = None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(frame=frames, worker=st.sampled_from(WORKERS))
def test_no_frame_raises_out_of_the_receive_path_or_reaches_a_component(frame: bytes, worker: str) -> None:
    cluster = idle_cluster()
    before = {w: (t.counters.frames_received, t.counters.frames_rejected) for w, t in cluster.transfers.items()}
    cluster.attack(worker, frame)  # must not raise
    cluster.run(2)  # the worker loop must not raise either
    received, rejected = cluster.transfers[worker].counters.frames_received, cluster.rejected()
    assert received + cluster.transfers[worker].counters.frames_rejected == sum(before[worker]) + 1  # counted
    assert cluster.errors == [], cluster.errors  # nothing malformed reached a component
    del rejected


def valid_frames(cluster: Cluster) -> list[tuple[str, bytes]]:
    """Frames the cluster really sends, captured by running it a little."""
    captured: list[tuple[str, bytes]] = []
    for _ in range(20):
        for w in WORKERS:
            captured += [(w, f) for f in cluster.frames[w]]
        cluster.run(1)
    return captured


def mutations(frame: bytes) -> list[bytes]:
    """Truncations and bit flips of a real frame."""
    out = [frame[:n] for n in range(0, len(frame), max(1, len(frame) // 16))]
    out += [frame[:i] + bytes([frame[i] ^ bit]) + frame[i + 1:] for i in range(len(frame))
            for bit in (1, 0x80)]  # fmt: skip
    return out


def test_forged_frames_amid_real_traffic_lose_no_tuple() -> None:
    cluster = Cluster(limit=300)
    try:
        samples = valid_frames(cluster)
        assert samples, "the cluster sends frames between its workers"
        attacks = [(w, m) for w, f in samples[:6] for m in mutations(f)]
        for i, (w, frame) in enumerate(attacks):
            cluster.attack(w, frame)
            if i % 50 == 0:
                cluster.run(1)
        for _ in range(5000):
            cluster.run(1)
            if all(len(s.acked) == 300 for s in cluster.spouts()):
                break
        per_spout = [s.acked for s in cluster.spouts()]  # two spout tasks, each emitting 0..299
        assert len(per_spout) == 2 and all(a == set(range(300)) for a in per_spout)
        assert cluster.rejected() > 0
        assert cluster.errors == []
    finally:
        cluster.close()


def test_with_frame_tags_no_forged_or_altered_frame_is_even_decoded() -> None:
    """The authenticated data plane: every attack is dropped before decoding, and no tuple tree even fails."""
    cluster = Cluster(limit=300, auth=FrameAuth(b"k" * 32))
    try:
        samples = valid_frames(cluster)
        attacks = [(w, m) for w, f in samples[:6] for m in mutations(f)]
        attacks += [(w, f) for w, f in samples[:6]]  # replays of whole sealed frames are not forgeries: see below
        replays = len(samples[:6])
        for w, frame in attacks[:-replays]:
            cluster.attack(w, frame)
        for _ in range(5000):
            cluster.run(1)
            if all(len(s.acked) == 300 for s in cluster.spouts()):
                break
        assert all(s.acked == set(range(300)) for s in cluster.spouts())
        assert all(s.failed == set() for s in cluster.spouts())  # nothing forged reached the acker either
        unauthenticated = sum(t.counters.frames_unauthenticated for t in cluster.transfers.values())
        assert unauthenticated == len(attacks) - replays and cluster.rejected() == 0
        assert cluster.errors == []
    finally:
        cluster.close()
