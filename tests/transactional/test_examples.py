"""The storm-starter examples: exact results in SQLite, across workers, with wire-encodable tuples."""

from __future__ import annotations

import collections

from examples import transactional_global_count as global_count
from examples import transactional_words as words
from storm_py import LocalCluster
from storm_py.protocol.codec import decode, encode
from storm_py.testing import complete_topology
from storm_py.transactional import TransactionAttempt


def test_global_count_example_across_two_workers(tmp_path):
    db = global_count.GlobalCountDB(str(tmp_path / "g.db"))
    data = {p: list(rows) for p, rows in global_count.DATA.items()}
    with LocalCluster() as cluster:
        complete_topology(
            cluster, global_count.build_topology(db.path, data),
            storm_conf={"topology.workers": 2, "topology.max.spout.pending": 3},
        )
    total = sum(len(rows) for rows in data.values())
    assert db.read()[0] == total
    history = db.history()
    assert [t for t, _ in history] == list(range(1, len(history) + 1))


def test_words_example_tuples_are_wire_encodable(tmp_path):
    db = words.WordsDB(str(tmp_path / "w.db"))
    data = {p: list(rows) for p, rows in words.DATA.items()}
    with LocalCluster(simulated_time=True) as cluster:
        results = complete_topology(
            cluster, words.build_topology(db.path, data), storm_conf={"topology.max.spout.pending": 2}
        )
    expected = collections.Counter(row[0] for rows in data.values() for row in rows)
    assert db.word_counts() == dict(expected)
    assert db.bucket_counts() == words.expected_buckets(dict(expected))
    emitted = [values for rows in results.values() for _, values in rows]
    assert emitted
    for values in emitted:
        assert decode(encode(values)) == values
    assert any(isinstance(v[0], TransactionAttempt) for v in emitted)


def test_examples_build_from_conf(tmp_path):
    path = tmp_path / "conf.db"
    topology = global_count.build({"example.db.path": str(path)})
    assert "spout/coordinator" in topology.spouts and {"spout", "partial-count", "sum"} <= set(topology.bolts)
    assert path.exists()
    assert set(words.build({"example.db.path": str(tmp_path / "w.db")}).bolts) >= {"count", "bucketize", "buckets"}
