"""RedisMapState over a real redis-server: Storm's opaque/transactional semantics in Redis, and exactly-once
counts through replayed batches in LocalCluster."""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import pytest

from storm_py.errors import InvalidTopologyException
from storm_py.trident import Count, FixedBatchSpout, OpaqueValue, TransactionalValue, TridentTopology
from storm_py.trident.redis_state import RedisMapState, RedisMapStateFactory
from storm_py.trident.state import GLOBAL_KEY
from tests.trident.helpers import FailOnce, Seen, record, running, wait
from tests.trident.test_state import SENTENCES, Split


def factory(port: int, kind: str, **more: Any) -> RedisMapStateFactory:
    return RedisMapState.factory(kind, {"port": port, "key_prefix": f"t-{uuid.uuid4().hex[:8]}:", **more})


@pytest.mark.parametrize("kind", ["opaque", "transactional"])
def test_a_replayed_batch_applies_once_in_redis(redis_port: int, kind: str) -> None:
    f = factory(redis_port, kind, cache_size=0)
    state = f.make_state({}, None, 0, 1)
    for txid, n in [(1, 5), (2, 3), (2, 3), (3, 1)]:
        state.begin_commit(txid)
        state.update(lambda curr, n=n: (curr or 0) + n)
        state.commit(txid)
    assert f.values() == {GLOBAL_KEY: 9}
    stored = f.make_state({}, None, 0, 1).map.backing.multi_get([GLOBAL_KEY])[0]  # type: ignore[union-attr]
    assert stored == (OpaqueValue(3, 9, 8) if kind == "opaque" else TransactionalValue(3, 9))


def test_config_is_checked(redis_port: int) -> None:
    with pytest.raises(InvalidTopologyException, match="unknown config keys"):
        RedisMapState.factory("opaque", {"hots": "x"})
    with pytest.raises(InvalidTopologyException, match="kind"):
        RedisMapState.factory("once", {"port": redis_port})


@pytest.mark.parametrize(("kind", "cache_size"), [("opaque", 0), ("transactional", 0), ("opaque", 1000)])
def test_replayed_batches_count_exactly_once_in_redis(redis_port: int, kind: str, cache_size: int) -> None:
    """Batches failed before and after the state applied them are replayed; every count in Redis is exact
    (read back from Redis on every batch without a cache, from Storm's CachedMap with one)."""
    words_total = Counter(w for (s,) in SENTENCES for w in s.split())
    topology = TridentTopology()
    sentences = topology.new_stream(f"redis-{kind}", FixedBatchSpout(["sentence"], 1, *SENTENCES))
    words = sentences.each(["sentence"], FailOnce({SENTENCES[2][0]}, Seen()), []).each(
        ["sentence"], Split(), ["word"]
    )
    f = factory(redis_port, kind, cache_size=cache_size)
    state = words.group_by(["word"]).persistent_aggregate(f, Count(), ["count"]).parallelism_hint(2)
    state.new_values_stream().each(["word"], FailOnce({"moon", "person"}, Seen()), [])
    done = record(sentences)

    def counts() -> dict[str, int]:
        return {key[0]: value for key, value in f.values().items()}

    with running(topology):
        wait(lambda: done.has(len(SENTENCES) + 1) and counts() == dict(words_total), "every sentence counted")
    assert counts() == dict(words_total)
