"""Stateful word count (storm-starter's StatefulTopology): sentences -> split -> a stateful count per word.

The counts live in managed state kept in Redis (``topology.state.provider: redis``), checkpointed every second:
run the topology, stop it, run it again, and the counts go on from where the last checkpoint left them.  The
guarantee is Storm's at-least-once: after a failure a sentence may be counted twice, never lost.

Run it against the development Redis (see docs/guide/managed-state.md):

    storm-py dev-redis --port 6379 &
    python examples/stateful_word_count.py --redis 127.0.0.1:6379 --rounds 20
    python examples/stateful_word_count.py --redis 127.0.0.1:6379 --rounds 20   # counts twice as high

or ``storm-py local examples.stateful_word_count:build --ttl 10 -c topology.state.provider.config='{"port": 6379}'``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parent.parent))  # run as a script: the examples package

from examples.word_count import SENTENCES, SplitSentence
from storm_py import BaseStatefulBolt, Config, KeyValueState, LocalCluster, Spout, TopologyBuilder
from storm_py.api.components import OutputCollector, OutputFieldsDeclarer, SpoutOutputCollector
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Tuple
from storm_py.clock import wait_until
from storm_py.errors import StormPyError

log = logging.getLogger(__name__)


class SentenceSpout(Spout):
    """Emits the sentences ``rounds`` times, each with a message id; a failed sentence is emitted again."""

    def __init__(self, rounds: int) -> None:
        self.rounds = rounds

    def open(self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector) -> None:
        self.collector = collector
        self.todo = list(range(self.rounds * len(SENTENCES)))[::-1]

    def next_tuple(self) -> None:
        if self.todo:
            i = self.todo.pop()
            self.collector.emit([SENTENCES[i % len(SENTENCES)]], msg_id=i)

    def fail(self, msg_id: Any) -> None:
        self.todo.append(msg_id)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["sentence"])


class WordCount(BaseStatefulBolt):
    """The count of each word in managed state; emits ``[word, count]`` anchored to the input."""

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector

    def init_state(self, state: KeyValueState) -> None:
        self.counts = state
        log.info("word count starts with %d words", len(state))

    def execute(self, tup: Tuple) -> None:
        word = tup[0]
        count = self.counts.get(word, 0) + 1
        self.counts.put(word, count)
        self.collector.emit([word, count], tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["word", "count"])


def build(conf: dict[str, Any] | None = None) -> Any:
    """The topology; ``stateful.rounds`` (default 20) is how often the spout emits the sentences."""
    rounds = int((conf or {}).get("stateful.rounds", 20))
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceSpout(rounds))
    builder.set_bolt("split", SplitSentence(), 2).shuffle_grouping("sentences")
    builder.set_bolt("count", WordCount(), 2).fields_grouping("split", ["word"])
    return builder.create_topology()


def topology_conf(host: str, port: int, key_prefix: str = "stateful-word-count:", rounds: int = 20) -> Config:
    """Redis state under ``key_prefix``, checkpoints every second."""
    conf = Config()
    conf.update({
        "topology.state.provider": "redis",
        "topology.state.provider.config": {"host": host, "port": port, "key_prefix": key_prefix},
        "topology.state.checkpoint.interval.ms": 1000,
        "stateful.rounds": rounds,
    })
    return conf


def committed_counts(conf: dict[str, Any]) -> Counter[str]:
    """The committed counts in Redis, over every task of the count bolt."""
    from storm_py.stateful.state.redis_state import RedisKeyValueState

    counts: Counter[str] = Counter()
    for state in RedisKeyValueState.committed_of("count", conf["topology.state.provider.config"]).values():
        counts.update(state)
    return counts


def main() -> None:
    """Run the example; an error it expects (no Redis, counts not committed in time) is one line on stderr and
    exit status 1."""
    try:
        run()
    except StormPyError as err:
        raise SystemExit(f"stateful_word_count: {err.message}") from None


def run() -> None:
    parser = argparse.ArgumentParser(description="Stateful word count with Redis state in a LocalCluster")
    parser.add_argument("--redis", default="127.0.0.1:6379", help="host:port of the Redis server")
    parser.add_argument("--rounds", type=int, default=20, help="how often the sentences are emitted")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the counts")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    host, port = args.redis.rsplit(":", 1)
    conf = topology_conf(host, int(port), rounds=args.rounds)
    before = committed_counts(conf)
    words = sum(len(s.split()) for s in SENTENCES) * args.rounds
    with LocalCluster() as cluster:
        cluster.submit_topology("stateful-word-count", conf, build(conf))
        try:
            wait_until(lambda: sum(committed_counts(conf).values()) >= sum(before.values()) + words, args.timeout,
                       interval=0.5, what=f"this run's {words} words committed in Redis (raise --timeout)")
        finally:
            cluster.kill_topology("stateful-word-count", wait_secs=0)
    for word, count in sorted(committed_counts(conf).items()):
        print(f"{word}\t{count}")


if __name__ == "__main__":
    main()
