"""LocalDRPC with LocalCluster: linear DRPC topologies (storm-starter's exclamation and reach), Storm's request-id
and finish_batch semantics, failures and timeouts as DRPCExecutionException."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from examples.reach import FOLLOWERS_DB, TWEETERS_DB, construct
from storm_py import BasicBolt, Bolt, Config, LocalCluster
from storm_py.api.components import OutputFieldsDeclarer
from storm_py.drpc import DRPCExecutionException, DRPCSpout, LinearDRPCTopologyBuilder, LocalDRPC, ReturnResults
from storm_py.drpc.errors import FAILED_REQUEST, SERVER_SHUTDOWN, SERVER_TIMEOUT
from storm_py.errors import FailedException, InvalidTopologyException
from storm_py.transactional import BaseBatchBolt


class ExclamationBolt(BasicBolt):
    """storm-starter's ExclamationBolt of the BasicDRPCTopology: ``[id, arg]`` -> ``[id, arg + "!"]``."""

    def execute(self, tup: Any, collector: Any) -> None:
        collector.emit([tup.values[0], tup.values[1] + "!"])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["id", "result"])


class Explode(BasicBolt):
    """``[id, "a b c"]`` -> one ``[id, word]`` per word; a word ``fail`` fails the request."""

    def execute(self, tup: Any, collector: Any) -> None:
        for word in tup.values[1].split():
            if word == "fail":
                raise FailedException("asked to fail")
            collector.emit([tup.values[0], word])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["id", "word"])


#: request ids and tuples seen by every batch bolt instance (one per request per task)
SEEN: list[tuple[Any, list[Any]]] = []
SEEN_LOCK = threading.Lock()


class CollectWords(BaseBatchBolt):
    """Sees every word of one request, then emits them sorted: the request id is its batch id."""

    def prepare(self, conf: Any, context: Any, collector: Any, id: Any) -> None:
        self.collector, self.id, self.words = collector, id, []

    def execute(self, tup: Any) -> None:
        assert tup.values[0] == self.id
        self.words.append(tup.values[1])

    def finish_batch(self) -> None:
        with SEEN_LOCK:
            SEEN.append((self.id, list(self.words)))
        self.collector.emit([self.id, " ".join(sorted(self.words))])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["id", "sorted"])


def _conf(**extra: Any) -> Config:
    conf = Config()
    conf.update(extra)
    return conf


def test_exclamation_answers_each_request_with_the_last_bolts_value():
    builder = LinearDRPCTopologyBuilder("exclamation")
    builder.add_bolt(ExclamationBolt(), 3)
    with LocalDRPC() as drpc, LocalCluster() as cluster:
        cluster.submit_topology("exclamation-drpc", _conf(), builder.create_local_topology(drpc))
        assert drpc.execute("exclamation", "aaa") == "aaa!"
        assert drpc.execute("exclamation", "bbb") == "bbb!"
        assert drpc.execute("exclamation", "") == "!"


def test_reach_counts_distinct_followers_per_request_even_when_requests_run_concurrently():
    def reach(url: str) -> int:
        return len({f for t in TWEETERS_DB.get(url, []) for f in FOLLOWERS_DB.get(t, [])})

    urls = ["foo.com/blog/1", "engineering.twitter.com/blog/5", "tech.backtype.com/blog/123", "nobody.com"] * 5
    with LocalDRPC() as drpc, LocalCluster() as cluster:
        cluster.submit_topology("reach", _conf(), construct().create_local_topology(drpc))
        assert drpc.execute("reach", "foo.com/blog/1") == "16"
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda u: drpc.execute("reach", u), urls))
    assert answers == [str(reach(u)) for u in urls]


def test_a_batch_bolt_step_sees_every_tuple_of_one_request_with_the_request_id_as_its_id():
    SEEN.clear()
    builder = LinearDRPCTopologyBuilder("sort-words")
    builder.add_bolt(Explode(), 2)
    builder.add_bolt(CollectWords(), 3).fields_grouping(["id"])
    with LocalDRPC() as drpc, LocalCluster() as cluster:
        cluster.submit_topology("sort-words", _conf(), builder.create_local_topology(drpc))
        with ThreadPoolExecutor(4) as pool:
            got = list(pool.map(lambda s: drpc.execute("sort-words", s), ["c b a", "z y", "q", "m n o p"]))
    assert got == ["a b c", "y z", "q", "m n o p"]
    ids = [rid for rid, _ in SEEN]
    assert len(ids) == 4 and len(set(ids)) == 4 and all(isinstance(i, int) for i in ids)
    assert sorted(sorted(words) for _, words in SEEN) == [["a", "b", "c"], ["m", "n", "o", "p"], ["q"], ["y", "z"]]


def test_a_failed_tuple_fails_the_request_and_the_function_keeps_serving():
    builder = LinearDRPCTopologyBuilder("sort-words")
    builder.add_bolt(Explode(), 2)
    builder.add_bolt(CollectWords(), 2).fields_grouping(["id"])
    with LocalDRPC() as drpc, LocalCluster() as cluster:
        cluster.submit_topology("sort-words", _conf(), builder.create_local_topology(drpc))
        with pytest.raises(DRPCExecutionException, match="'sort-words' failed: its tuple tree failed") as err:
            drpc.execute("sort-words", "a fail b")
        assert err.value.type == FAILED_REQUEST
        assert drpc.execute("sort-words", "b a") == "a b"


class Never(Bolt):
    """Holds every tuple forever: the request is never answered."""

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        pass

    def execute(self, tup: Any) -> None:
        pass

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["id", "result"])


def test_a_request_nobody_answers_times_out_with_a_clear_error():
    builder = LinearDRPCTopologyBuilder("never")
    builder.add_bolt(Never())
    with LocalDRPC({"drpc.request.timeout.secs": 1}) as drpc, LocalCluster() as cluster:
        with pytest.raises(DRPCExecutionException, match="no topology fetched it") as err:
            drpc.execute("never", "x")
        assert err.value.type == SERVER_TIMEOUT
        cluster.submit_topology("never", _conf(**{"topology.message.timeout.secs": 30}),
                                builder.create_local_topology(drpc))
        with pytest.raises(DRPCExecutionException, match="fetched it but never returned"):
            drpc.execute("never", "x")


def test_shutting_down_a_local_drpc_answers_its_waiting_clients():
    drpc = LocalDRPC()
    errors: list[DRPCExecutionException] = []

    def call() -> None:
        try:
            drpc.execute("nothing-serves-this", "x")
        except DRPCExecutionException as err:
            errors.append(err)

    t = threading.Thread(target=call)
    t.start()
    from storm_py.clock import wait_until

    wait_until(lambda: drpc.service.pending() == 1, 10)
    drpc.shutdown()
    t.join(10)
    assert [e.type for e in errors] == [SERVER_SHUTDOWN]
    with pytest.raises(DRPCExecutionException, match="shutting down"):
        drpc.execute("f", "x")


def test_a_hand_built_topology_of_drpc_spout_and_return_results():
    class Upper(BasicBolt):
        def execute(self, tup: Any, collector: Any) -> None:
            collector.emit([tup.values[0].upper(), tup.values[1]])

        def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
            declarer.declare(["result", "return-info"])

    from storm_py import TopologyBuilder

    with LocalDRPC() as drpc, LocalCluster() as cluster:
        builder = TopologyBuilder()
        builder.set_spout("drpc", DRPCSpout("upper", drpc))
        builder.set_bolt("upper", Upper(), 2).shuffle_grouping("drpc")
        builder.set_bolt("return", ReturnResults()).shuffle_grouping("upper")
        cluster.submit_topology("upper", _conf(), builder.create_topology())
        assert drpc.execute("upper", "shout") == "SHOUT"


def test_the_last_step_must_emit_one_stream_of_request_id_and_result():
    class Three(BasicBolt):
        def execute(self, tup: Any, collector: Any) -> None:
            pass

        def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
            declarer.declare(["id", "a", "b"])

    builder = LinearDRPCTopologyBuilder("bad")
    with pytest.raises(InvalidTopologyException, match="has no bolt"):
        builder.create_remote_topology()
    builder.add_bolt(Three())
    with pytest.raises(InvalidTopologyException, match=r"must emit two fields, \[request id, result\]"):
        builder.create_remote_topology()


class Pass(BasicBolt):
    """Passes ``[id, value]`` on."""

    def execute(self, tup: Any, collector: Any) -> None:
        collector.emit([tup.values[0], tup.values[1]])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["id", "value"])


class CountAll(BaseBatchBolt):
    """Counts one request's tuples."""

    def prepare(self, conf: Any, context: Any, collector: Any, id: Any) -> None:
        self.collector, self.id, self.count = collector, id, 0

    def execute(self, tup: Any) -> None:
        self.count += 1

    def finish_batch(self) -> None:
        self.collector.emit([self.id, self.count])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["id", "count"])


def test_linear_groupings_all_global_and_none_follow_storms_semantics():
    builder = LinearDRPCTopologyBuilder("count")
    builder.add_bolt(Explode(), 2)
    builder.add_bolt(Pass(), 3).all_grouping()  # every task gets every word: three copies each
    builder.add_bolt(Pass(), 2).global_grouping()
    builder.add_bolt(Pass(), 2).none_grouping()
    # a batch bolt last is grouped on the request id: its id tuple goes to the task of that id (as Storm's)
    builder.add_bolt(CountAll(), 2).fields_grouping(["id"])
    with LocalDRPC() as drpc, LocalCluster() as cluster:
        cluster.submit_topology("count", _conf(), builder.create_local_topology(drpc))
        assert drpc.execute("count", "a b c") == "9"
        assert drpc.execute("count", "") == "0"


def test_a_last_batch_bolt_on_several_tasks_must_be_grouped_on_the_request_id():
    builder = LinearDRPCTopologyBuilder("count")
    builder.add_bolt(Explode(), 2)
    builder.add_bolt(CountAll(), 2).global_grouping()
    with pytest.raises(InvalidTopologyException, match="group it on the request id alone"):
        builder.create_remote_topology()
    single = LinearDRPCTopologyBuilder("count")
    single.add_bolt(Explode(), 2)
    single.add_bolt(CountAll(), 1).global_grouping()
    single.create_remote_topology()
