"""The storm-starter examples: exact results in SQLite, across workers, with wire-encodable tuples."""

from __future__ import annotations

import collections
import re
import subprocess
from pathlib import Path

from examples import transactional_global_count as global_count
from examples import transactional_words as words
from storm_py import LocalCluster
from storm_py.protocol.codec import decode, encode
from storm_py.testing import complete_topology
from storm_py.transactional import TransactionAttempt
from tests.cluster.harness import storm_py_command

REPO = Path(__file__).resolve().parents[2]


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


def test_words_example_through_storm_py_local_shows_progress_and_refuses_an_old_database(tmp_path):
    """`storm-py local examples.transactional_words:build` says what it commits and when its finite input is all
    counted; run again on the same file, it refuses it (naming it) unless told to reuse it."""
    db = tmp_path / "words.db"
    command = [*storm_py_command(), "local", "examples.transactional_words:build", "--ttl", "30",
               "-c", f"example.db.path={db}"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith("buckets: "):
                break
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    total = sum(len(rows) for rows in words.DATA.values())
    assert any(re.fullmatch(rf"txid 1 committed: \d+ of {total} words counted", x) for x in lines), lines
    assert f"all {total} words counted (the input is finite: nothing more comes)" in lines
    counts = collections.Counter(row[0] for rows in words.DATA.values() for row in rows)
    assert f"words: {dict(sorted(counts.items()))}" in lines
    rerun = command[:-4]  # without --ttl and the db path
    again = subprocess.run([*rerun, "--ttl", "1", "-c", f"example.db.path={db}"], capture_output=True, text=True,
                           timeout=60, cwd=REPO, check=False)
    assert again.returncode == 1 and f"example.db.path {db} already holds" in again.stderr
    assert "example.db.reuse=true" in again.stderr and "running" not in again.stdout
    reused = subprocess.run([*rerun, "--ttl", "0", "-c", f"example.db.path={db}", "-c", "example.db.reuse=true"],
                            capture_output=True, text=True, timeout=60, cwd=REPO, check=False)
    assert reused.returncode == 0 and f"reusing the word counts in {db}" in reused.stderr
