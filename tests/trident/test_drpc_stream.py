"""Trident DRPC streams over the real LocalDRPC: each request is a batch, answered with the compact JSON list of
the tuples its stream ends with; the Trident tutorial's word count query answers Storm's ``[[6]]``."""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from examples import trident_word_count as example
from storm_py.drpc import DRPCExecutionException, LocalDRPC
from storm_py.errors import FailedException
from storm_py.local import LocalCluster
from storm_py.trident import BaseFunction, MemoryMapState, TridentTopology
from tests.trident.helpers import wait


class Explode(BaseFunction):
    def execute(self, tuple: Any, collector: Any) -> None:
        if tuple[0] == "boom":
            raise FailedException("no")
        collector.emit([len(tuple[0])])


def test_the_tutorial_query_answers_the_exact_count_through_local_drpc() -> None:
    factory = MemoryMapState.factory("opaque")
    expected = Counter(w for (s,) in example.SENTENCES for w in s.split(" "))
    with LocalDRPC({"drpc.request.timeout.secs": 30}) as drpc, LocalCluster() as cluster:
        topology = example.build_topology(factory, drpc, cycle=False)
        cluster.submit_topology("trident-drpc", {"topology.max.spout.pending": 3}, topology)
        wait(lambda: len(factory.values()) == len(expected), "every sentence counted")
        assert drpc.execute("words", "cat the dog jumped") == "[[6]]"  # the tutorial's answer, Storm's format
        assert expected["the"] + expected["jumped"] == 6
        assert drpc.execute("words", "nothing here") == "[[0]]"  # an empty batch still yields Sum's zero
        with ThreadPoolExecutor(4) as pool:  # concurrent requests: each is its own batch, answered to its caller
            answers = list(pool.map(lambda s: drpc.execute("words", s), ["the", "to be", "moon", "the the"]))
        assert answers == [f"[[{expected['the']}]]", f"[[{expected['to'] + expected['be']}]]", "[[1]]",
                           f"[[{2 * expected['the']}]]"]


def test_a_failing_drpc_batch_fails_its_request_and_the_stream_keeps_answering() -> None:
    topology = TridentTopology()
    with LocalDRPC({"drpc.request.timeout.secs": 30}) as drpc, LocalCluster() as cluster:
        topology.new_drpc_stream("length", drpc).each(["args"], Explode(), ["n"]).project(["n"])
        cluster.submit_topology("trident-drpc-fail", {"topology.max.spout.pending": 3}, topology.build())
        assert drpc.execute("length", "abc") == "[[3]]"
        with pytest.raises(DRPCExecutionException):  # its batch fails: the request is failed (Storm's rule)
            drpc.execute("length", "boom")
        assert drpc.execute("length", "abcd") == "[[4]]"
