"""storm-starter's ReachTopology: the reach of a URL (distinct people its tweeters' followers reach) over DRPC.

The function ``reach`` is a linear DRPC topology: the URL's tweeters, their followers, distinct followers counted
in parallel per request (a batch bolt per request id), the partial counts summed.  Each request is independent:
concurrent requests never see each other's tuples.

Run it in-process:  python -m examples.reach
On a cluster:       storm-py submit . examples.reach:build --name reach --config CLUSTER/storm.yaml
                    storm-py drpc-client reach foo.com/blog/1 --config CLUSTER/storm.yaml
"""

from __future__ import annotations

from typing import Any

from storm_py import BasicBolt
from storm_py.api.components import BasicOutputCollector, OutputFieldsDeclarer
from storm_py.api.context import TopologyContext
from storm_py.api.topology import StormTopology
from storm_py.api.tuple import Tuple
from storm_py.drpc import LinearDRPCTopologyBuilder, LocalDRPC
from storm_py.transactional import BaseBatchBolt
from storm_py.transactional.batch import BatchOutputCollector

TWEETERS_DB: dict[str, list[str]] = {
    "foo.com/blog/1": ["sally", "bob", "tim", "george", "nathan"],
    "engineering.twitter.com/blog/5": ["adam", "david", "sally", "nathan"],
    "tech.backtype.com/blog/123": ["tim", "mike", "john"],
}

FOLLOWERS_DB: dict[str, list[str]] = {
    "sally": ["bob", "tim", "alice", "adam", "jim", "chris", "jai"],
    "bob": ["sally", "nathan", "jim", "mary", "david", "vivian"],
    "tim": ["alex"],
    "nathan": ["sally", "bob", "adam", "harry", "chris", "vivian", "emily", "jordan"],
    "adam": ["david", "carissa"],
    "mike": ["john", "bob"],
    "john": ["alice", "nathan", "jim", "mike", "bob"],
}


class GetTweeters(BasicBolt):
    """``[id, url]`` -> ``[id, tweeter]`` for each person who tweeted the URL."""

    def execute(self, tup: Tuple, collector: BasicOutputCollector) -> None:
        request, url = tup.values[0], tup.values[1]
        for tweeter in TWEETERS_DB.get(url, []):
            collector.emit([request, tweeter])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["id", "tweeter"])


class GetFollowers(BasicBolt):
    """``[id, tweeter]`` -> ``[id, follower]`` for each of the tweeter's followers."""

    def execute(self, tup: Tuple, collector: BasicOutputCollector) -> None:
        request, tweeter = tup.values[0], tup.values[1]
        for follower in FOLLOWERS_DB.get(tweeter, []):
            collector.emit([request, follower])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["id", "follower"])


class PartialUniquer(BaseBatchBolt):
    """The distinct followers this task saw for one request, counted once the request's tuples are all in."""

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: BatchOutputCollector,
                id: Any) -> None:
        self.collector = collector
        self.id = id
        self.followers: set[str] = set()

    def execute(self, tup: Tuple) -> None:
        self.followers.add(tup.values[1])

    def finish_batch(self) -> None:
        self.collector.emit([self.id, len(self.followers)])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["id", "partial-count"])


class CountAggregator(BaseBatchBolt):
    """Sums the partial counts of one request: its reach."""

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: BatchOutputCollector,
                id: Any) -> None:
        self.collector = collector
        self.id = id
        self.count = 0

    def execute(self, tup: Tuple) -> None:
        self.count += int(tup.values[1])

    def finish_batch(self) -> None:
        self.collector.emit([self.id, self.count])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["id", "reach"])


def construct() -> LinearDRPCTopologyBuilder:
    """The reach function as storm-starter builds it."""
    builder = LinearDRPCTopologyBuilder("reach")
    builder.add_bolt(GetTweeters(), 4)
    builder.add_bolt(GetFollowers(), 12).shuffle_grouping()
    builder.add_bolt(PartialUniquer(), 6).fields_grouping(["id", "follower"])
    builder.add_bolt(CountAggregator(), 3).fields_grouping(["id"])
    return builder


def build(conf: dict[str, Any] | None = None) -> StormTopology:
    """The reach topology served through ``drpc.servers``."""
    return construct().create_remote_topology()


def main() -> None:
    """Run reach in-process and print the reach of each URL."""
    from storm_py import Config, LocalCluster

    conf = Config()
    conf.set_max_task_parallelism(3)
    with LocalDRPC() as drpc, LocalCluster() as cluster:
        cluster.submit_topology("reach-drpc", conf, construct().create_local_topology(drpc))
        for url in ("foo.com/blog/1", "engineering.twitter.com/blog/5", "notaurl.com"):
            print(f"Reach of {url}: {drpc.execute('reach', url)}")


if __name__ == "__main__":
    main()
