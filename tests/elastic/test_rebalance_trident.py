"""A Trident word count into Redis (opaque and transactional map states) rebalanced while batches flow: the state's
bolt goes from two executors to one and back; the spout's batches resume where they were and every count in Redis
is exact."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

from storm_py import LocalCluster
from storm_py.clock import wait_until
from storm_py.trident import Count, FixedBatchSpout, TridentTopology
from storm_py.trident.redis_state import RedisMapState
from tests.trident.test_state import Split

# each case runs a LocalCluster through checkpoints and a rebalance: tens of seconds (pure run only in CI)
pytestmark = pytest.mark.slow

LINES = [[" ".join(f"t{(i * 5 + j) % 41}" for j in range(4))] for i in range(1500)]


def bolt_executors(cluster: LocalCluster, name: str) -> dict[str, int]:
    summary = cluster.get_topology_summary(name)
    if summary["status"] != "ACTIVE":
        return {}
    return {b["boltId"]: int(b["executors"]) for b in summary["bolts"] if not b["boltId"].startswith("__")}


@pytest.mark.parametrize("kind", ["opaque", "transactional"])
def test_trident_counts_stay_exact_through_rebalances(redis_server, kind: str) -> None:
    want = Counter(w for (line,) in LINES for w in line.split())
    factory = RedisMapState.factory(kind, {"port": redis_server.port, "key_prefix": f"rbt-{uuid.uuid4().hex[:8]}:"})
    topology = TridentTopology()
    lines = topology.new_stream(f"rbt-{kind}", FixedBatchSpout(["line"], 10, *LINES))
    words = lines.each(["line"], Split(), ["word"])
    words.group_by(["word"]).persistent_aggregate(factory, Count(), ["count"]).parallelism_hint(2)

    def counted() -> int:
        return sum(factory.values().values())

    name = f"rbt-{kind}"
    with LocalCluster(supervisors=2, ports_per_supervisor=3) as cluster:
        cluster.submit_topology(name, {"topology.max.spout.pending": 3, "topology.workers": 2}, topology.build())
        wait_until(lambda: counted() >= 400, 60, interval=0.05, what="a few batches counted")
        wide = {c: n for c, n in bolt_executors(cluster, name).items() if n == 2}
        assert wide, bolt_executors(cluster, name)
        cluster.rebalance(name, wait_secs=1, executors={c: 1 for c in wide})
        wait_until(lambda: all(bolt_executors(cluster, name).get(c) == 1 for c in wide), 60, interval=0.05,
                   what="one executor each")
        middle = counted()
        assert middle < sum(want.values()), "every batch was counted before the rebalance: add lines"
        cluster.rebalance(name, wait_secs=1, executors=wide)
        wait_until(lambda: all(bolt_executors(cluster, name).get(c) == 2 for c in wide), 60, interval=0.05,
                   what="two executors each again")
        wait_until(lambda: counted() >= sum(want.values()), 120, interval=0.1, what="every line counted")
        assert {key[0]: value for key, value in factory.values().items()} == dict(want)
        cluster.kill_topology(name, wait_secs=0)
