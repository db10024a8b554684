"""Trident DRPC streams over a stand-in DRPC (a rich spout of requests and an answering bolt): each request
is a batch, answered with the compact JSON list of the tuples its stream ends with."""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any

from examples.trident_word_count import SENTENCES, Split, word_counts
from storm_py.api.components import Bolt, Spout
from storm_py.errors import FailedException
from storm_py.local import LocalCluster
from storm_py.testing.registry import Shared
from storm_py.trident import BaseFunction, FilterNull, MapGet, MemoryMapState, Sum, TridentTopology
from storm_py.trident.drpc import drpc_stream
from tests.trident.helpers import wait


class Requests(Shared):
    """The stand-in DRPC server: pending requests, answers and failures by request id."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pending: list[tuple[str, int]] = []
        self.answers: dict[int, str] = {}
        self.failed: list[int] = []

    def submit(self, request_id: int, args: str) -> None:
        with self.lock:
            self.pending.append((args, request_id))


class RequestSpout(Spout):
    def __init__(self, requests: Requests) -> None:
        self.requests = requests

    def next_tuple(self) -> None:
        with self.requests.lock:
            if not self.requests.pending:
                return
            args, request_id = self.requests.pending.pop(0)
        self.collector.emit([args, json.dumps({"id": request_id})], request_id)

    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def fail(self, msg_id: Any) -> None:
        with self.requests.lock:
            self.requests.failed.append(msg_id)

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["args", "return-info"])


class Answer(Bolt):
    requests: Requests

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        with self.requests.lock:
            self.requests.answers[json.loads(tup["return-info"])["id"]] = tup["result"]
        self.collector.ack(tup)


def answering(requests: Requests) -> Any:
    def make() -> Answer:
        bolt = Answer()
        bolt.requests = requests
        return bolt

    return make


class Explode(BaseFunction):
    def execute(self, tuple: Any, collector: Any) -> None:
        if tuple[0] == "boom":
            raise FailedException("no")
        collector.emit([len(tuple[0])])


def test_the_tutorial_query_sums_the_counts_of_the_words_asked_for() -> None:
    requests, length_requests = Requests(), Requests()
    topology = TridentTopology()
    factory = MemoryMapState.factory("opaque")
    counts = word_counts(topology, factory, cycle=False)
    (
        drpc_stream(topology, "words", RequestSpout(requests), answering(requests))
        .each(["args"], Split(), ["word"])
        .group_by(["word"])
        .state_query(counts, ["word"], MapGet(), ["count"])
        .each(["count"], FilterNull())
        .aggregate(["count"], Sum(), ["sum"])
    )
    lengths = drpc_stream(topology, "length", RequestSpout(length_requests), answering(length_requests))
    lengths.each(["args"], Explode(), ["n"]).project(["n"])
    expected = Counter(w for (s,) in SENTENCES for w in s.split(" "))
    with LocalCluster() as cluster:
        cluster.submit_topology("trident-drpc", {"topology.max.spout.pending": 3}, topology.build())
        wait(lambda: len(factory.values()) == len(expected), "every sentence counted")
        requests.submit(1, "cat the dog jumped")
        requests.submit(2, "nothing here")
        wait(lambda: {1, 2} <= set(requests.answers), "two answers")
        length_requests.submit(3, "boom")  # its batch fails: replayed, the request is failed (Storm's rule)
        wait(lambda: 3 in length_requests.failed, "the failed request")
        length_requests.submit(4, "abc")
        wait(lambda: 4 in length_requests.answers, "the next answer")
    assert requests.answers[1] == f"[[{expected['the'] + expected['jumped']}]]"
    assert requests.answers[2] == "[[0]]"
    assert 3 not in length_requests.answers
    assert length_requests.answers[4] == "[[3]]"
