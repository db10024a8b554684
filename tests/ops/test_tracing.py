"""Tracing sampled tuple trees: sampling by root id, span ids derived from the tree's ids, the tracer's wrappers,
and the spans of a LocalCluster topology as an OTLP/HTTP receiver gets them."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from storm_py import Bolt, LocalCluster, Spout, TopologyBuilder
from storm_py.api.tuple import Fields, Tuple
from storm_py.clock import Clock, wait_until
from storm_py.tracing import spans as spans_module
from storm_py.tracing.spans import (
    Sampler,
    SpanRecord,
    bolt_spans,
    execute_span_id,
    root_span_id,
    send_span_id,
    spout_spans,
    trace_id,
)
from storm_py.tracing.tracer import Tracer, open_tracer
from tests.ops.otlp_receiver import OtlpReceiver, tree

F = Fields("word")
COMPONENTS = {1: "spout", 2: "split", 3: "count", 4: "count"}


def tup(source: str, task: int, root: int | None, edge: int | None, ids: Any = None) -> Tuple:
    return Tuple(["w"], F, source, "default", task, ids, root, edge)


def test_sampling_is_by_root_and_near_the_share() -> None:
    assert not any(Sampler(0).sampled(r) for r in range(1, 5000))
    assert all(Sampler(100).sampled(r) for r in range(1, 5000))
    share = sum(Sampler(10).sampled(r * 7919) for r in range(1, 20001)) / 20000
    assert 0.08 < share < 0.12
    s = Sampler(50)
    assert [s.sampled(r) for r in range(100)] == [Sampler(50).sampled(r) for r in range(100)]  # every worker agrees
    with pytest.raises(ValueError, match="percentage"):
        Sampler(101)


def test_the_sampled_share_holds_for_the_roots_a_worker_draws_and_needs_no_span_id_mixing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # every tuple a traced task sees is asked about: the decision must cost less than deriving span ids
    def no_mixing(value: int, salt: int) -> int:
        raise AssertionError("sampling a root ran the span ids' mixer")

    monkeypatch.setattr(spans_module, "mix64", no_mixing)
    draw = random.Random(7)
    for ackers, acker in ((1, 0), (4, 3)):  # a worker's roots fall in its ackers' residues (storm_py.runtime.ids)
        roots = [draw.getrandbits(60) * ackers + acker for _ in range(100_000)]
        share = sum(Sampler(1).sampled(r) for r in roots) / len(roots)
        assert 0.008 < share < 0.012, (ackers, share)


def test_a_traced_tuple_is_in_each_of_its_sampled_trees_and_an_unanchored_one_in_none() -> None:
    everything = Sampler(100)
    assert everything.traced(tup("split", 2, 11, 22)) == [(11, 22)]
    assert everything.traced(tup("split", 2, None, None)) == []
    assert sorted(everything.traced(tup("split", 2, None, None, {11: 22, 33: 44}))) == [(11, 22), (33, 44)]
    assert Sampler(0).traced(tup("split", 2, 11, 22)) == []


def test_the_spans_of_a_tree_link_spout_emit_send_execute_send_execute() -> None:
    everything = Sampler(100)
    root, e1, e2, e3 = 101, 202, 303, 404
    first = tup("spout", 1, root, e1)
    spout = spout_spans("spout", 1, [(2, first)], everything, COMPONENTS, 10.0, 10.5)
    assert [(s.name, s.kind) for s in spout] == [("emit spout", "internal"), ("send default -> split", "producer")]
    emit, send = spout
    assert (emit.trace_id, emit.span_id, emit.parent_id) == (trace_id(root), root_span_id(root), None)
    assert (send.span_id, send.parent_id, send.start) == (send_span_id(e1), emit.span_id, 10.5)
    words = [(3, tup("split", 2, root, e2)), (4, tup("split", 2, root, e3))]
    split = bolt_spans("split", 2, first, words, everything, COMPONENTS, 11.0, 11.2)
    execute = split[0]
    assert (execute.name, execute.kind, execute.span_id, execute.parent_id) == (
        "execute split", "consumer", execute_span_id(e1), send_span_id(e1))
    assert execute.attributes["storm_py.source.component"] == "spout" and (execute.start, execute.end) == (11.0, 11.2)
    assert [(s.name, s.span_id, s.parent_id) for s in split[1:]] == [
        ("send default -> count", send_span_id(e2), execute.span_id),
        ("send default -> count", send_span_id(e3), execute.span_id)]
    counted = bolt_spans("count", 3, words[0][1], [], everything, COMPONENTS, 12.0, 12.1)
    assert [(s.name, s.parent_id) for s in counted] == [("execute count", send_span_id(e2))]
    assert len({trace_id(root)} | {s.trace_id for s in spout + split + counted}) == 1
    assert bolt_spans("count", 3, words[0][1], [], Sampler(0), COMPONENTS, 0, 1) == []
    assert len({root_span_id(root), send_span_id(e1), execute_span_id(e1)}) == 3


class ListSink:
    def __init__(self) -> None:
        self.spans: list[SpanRecord] = []
        self.closed = False

    def export(self, spans: list[SpanRecord]) -> None:
        self.spans.extend(spans)

    def close(self) -> None:
        self.closed = True


def test_the_bolt_runner_traces_sampled_inputs_with_the_children_they_left() -> None:
    out: dict[int, list[Any]] = {}
    ran: list[list[Tuple]] = []

    def run(batch: list[Tuple]) -> None:
        ran.append(batch)
        for t in batch:
            if t._root is not None:
                out.setdefault(3, []).append(tup("split", 2, t._root, t._edge + 1))
                out.setdefault(0, []).append((1, t._root, 5))  # an acker row: not a tuple

    sink = ListSink()
    sampler = Sampler(0)
    runner = Tracer(sampler, sink, Clock(), COMPONENTS).bolt_runner(run, "split", 2, out)
    batch = [tup("spout", 1, 7, 70), tup("spout", 1, 8, 80)]
    runner(batch)
    assert ran == [batch] and sink.spans == []  # nothing sampled: the batch runs as it was
    sampler.set_percent(100)
    runner([tup("spout", 1, None, None), *batch])
    assert [len(b) for b in ran[1:]] == [1, 1, 1]  # a sampled input runs alone
    names = [(s.name, s.parent_id) for s in sink.spans]
    assert names == [("execute split", send_span_id(70)), ("send default -> count", execute_span_id(70)),
                     ("execute split", send_span_id(80)), ("send default -> count", execute_span_id(80))]
    # the untraced inputs around a traced one run together, in order
    del ran[:]
    loose = [tup("spout", 1, None, None) for _ in range(4)]
    traced_one = tup("spout", 1, 7, 70)
    runner([loose[0], loose[1], traced_one, loose[2], loose[3]])
    assert ran == [loose[:2], [traced_one], loose[2:]]
    # a tuple anchored to several trees is looked at through all of them
    del ran[:]
    runner([tup("spout", 1, None, None, {9: 90, 11: 110})])
    assert [len(b) for b in ran] == [1]
    assert ("execute split", send_span_id(90)) in [(s.name, s.parent_id) for s in sink.spans]


def test_the_traced_spout_times_next_tuple_and_passes_the_rest_through() -> None:
    out: dict[int, list[Any]] = {2: [tup("spout", 1, 5, 50)]}  # left from before: not this call's

    class Inner:
        def next_tuple(self) -> None:
            out[2].append(tup("spout", 1, 9, 90))

        def ack(self, msg_id: Any) -> str:
            return f"acked {msg_id}"

    sink = ListSink()
    inner = Inner()
    spout = Tracer(Sampler(100), sink, Clock(), COMPONENTS).spout(inner, "spout", 1, out)
    spout.next_tuple()
    assert [(s.name, s.trace_id) for s in sink.spans] == [("emit spout", trace_id(9)), ("send default -> split",
                                                                                        trace_id(9))]
    assert spout.ack(3) == "acked 3" and spout.wrapped_component is inner


def test_tracing_is_off_without_an_endpoint_and_follows_debug_sampling_without_a_share() -> None:
    assert open_tracer({}, "t", "w", Clock(), COMPONENTS) is None
    tracer = Tracer(Sampler(0), ListSink(), Clock(), COMPONENTS, follows_debug=True)
    tracer.debug_sampling(100)
    assert tracer.sampler.sampled(12345)
    fixed = Tracer(Sampler(0), ListSink(), Clock(), COMPONENTS, follows_debug=False)
    fixed.debug_sampling(100)
    assert not fixed.sampler.sampled(12345)


class SentenceSpout(Spout):
    def __init__(self, count: int) -> None:
        self.count = count

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.sent = 0

    def next_tuple(self) -> None:
        if self.sent < self.count:
            self.collector.emit([f"a{self.sent} b{self.sent}"], self.sent)
            self.sent += 1

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["sentence"])


class Split(Bolt):
    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, t: Any) -> None:
        for word in t.values[0].split():
            self.collector.emit([word], t)
        self.collector.ack(t)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])


SPLIT_DONE: list[str] = []  # sentences split, across the LocalCluster's tasks (one process)


class RecordingSplit(Split):
    def execute(self, t: Any) -> None:
        super().execute(t)
        SPLIT_DONE.append(t.values[0])


class Count(Bolt):
    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, t: Any) -> None:
        self.collector.ack(t)


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    r = OtlpReceiver()
    yield r
    r.close()


CHAIN = ("emit spout", "send default -> split", "execute split", "send default -> count", "execute count")


def test_a_local_cluster_sends_every_sampled_tree_as_one_trace(receiver: OtlpReceiver) -> None:
    builder = TopologyBuilder()
    builder.set_spout("spout", SentenceSpout(5), 1)
    builder.set_bolt("split", Split(), 2).shuffle_grouping("spout")
    builder.set_bolt("count", Count(), 2).fields_grouping("split", ["word"])
    conf = {"topology.workers": 2, "topology.acker.executors": 1, "topology.tracing.otlp.endpoint": receiver.endpoint,
            "topology.tracing.sample.percent": 100}
    with LocalCluster(supervisors=2) as cluster:
        cluster.submit_topology("traced", conf, builder.create_topology())

        def complete() -> bool:
            traces = receiver.traces()
            return len(traces) == 5 and all(len(spans) == 7 for spans in traces.values())

        wait_until(complete, 90, interval=0.1, what="7 spans of each of the 5 trees")
        cluster.kill_topology("traced")
    for spans in receiver.traces().values():
        assert tree(spans) == [CHAIN, CHAIN]  # one spout emit, one sentence, two words
        assert {s.service for s in spans} == {"traced"}
        [execute] = [s for s in spans if s.name == "execute split"]
        assert execute.kind == "consumer" and execute.end_ns >= execute.start_ns > 1_600_000_000 * 10**9


def test_an_unsampled_topology_sends_nothing(receiver: OtlpReceiver) -> None:
    builder = TopologyBuilder()
    builder.set_spout("spout", SentenceSpout(20), 1)
    builder.set_bolt("split", RecordingSplit(), 1).shuffle_grouping("spout")
    conf = {"topology.acker.executors": 1, "topology.tracing.otlp.endpoint": receiver.endpoint}
    SPLIT_DONE.clear()
    with LocalCluster() as cluster:  # no share of its own and debug sampling off: 0 %
        cluster.submit_topology("untraced", conf, builder.create_topology())
        wait_until(lambda: len(SPLIT_DONE) == 20, 60, interval=0.05, what="the 20 sentences split")
        cluster.kill_topology("untraced")
    assert receiver.spans == [] and receiver.posts == 0


class EndlessSpout(SentenceSpout):
    def next_tuple(self) -> None:
        self.collector.emit([f"a{self.sent} b{self.sent}"], self.sent)
        self.sent += 1


def test_without_a_share_of_its_own_tracing_follows_debug_sampling(receiver: OtlpReceiver) -> None:
    builder = TopologyBuilder()
    builder.set_spout("spout", EndlessSpout(0), 1)
    builder.set_bolt("split", Split(), 1).shuffle_grouping("spout")
    conf = {"topology.acker.executors": 1, "topology.tracing.otlp.endpoint": receiver.endpoint,
            "topology.max.spout.pending": 50}
    with LocalCluster() as cluster:
        cluster.submit_topology("debugged", conf, builder.create_topology())
        cluster.debug("debugged", None, True, 100)  # the whole topology, every emit
        wait_until(lambda: len(receiver.traces()) >= 3, 60, interval=0.1, what="traces once debugging is on")
        cluster.kill_topology("debugged")
    chains = [tree(spans) for spans in receiver.traces().values()]
    assert any(c == [("emit spout", "send default -> split", "execute split")] for c in chains)
