"""Blob store, replication between nimbuses and the supervisor's downloads (in-memory state, fake transfers)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from storm_py.clock import SYSTEM_CLOCK
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.errors import StormPyError, TopologyLoadError
from storm_py.metrics.windows import pretty_duration
from storm_py.nimbus import blobstore
from storm_py.nimbus.blobstore import BlobReplicator, LocalFsBlobStore, NimbusCodeStore, jar_key
from storm_py.packaging.code_store import DistCodeStore
from storm_py.packaging.package import TopologyPackage, read_package
from storm_py.supervisor.stormdist import StormDist
from tests.cluster.harness import APPS


@pytest.fixture
def state() -> ClusterState:
    return ClusterState(MemoryStorage(MemoryStore()))


def ackcheck() -> TopologyPackage:
    data, name = read_package(APPS / "ackcheck")
    return TopologyPackage(data, "ackcheck.topology:build", name)


def test_blobs_are_files_with_any_key(tmp_path: Path) -> None:
    store = LocalFsBlobStore(tmp_path / "blobs")
    store.put("a/b: c", b"one")
    store.put("a/b: c", b"two")
    assert store.get("a/b: c") == b"two" and store.has("a/b: c") and store.list_keys() == ["a/b: c"]
    store.delete("a/b: c")
    assert store.get("a/b: c") is None and store.list_keys() == []


def test_a_standby_copies_registered_blobs_and_drops_removed_ones(tmp_path: Path, state, monkeypatch) -> None:
    leader = NimbusCodeStore(LocalFsBlobStore(tmp_path / "leader"), state, "leader:1")
    leader.put("t-1-1", ackcheck())
    standby_blobs = LocalFsBlobStore(tmp_path / "standby")
    fetched: list[tuple[str, str]] = []

    def fetch(holder: str, key: str) -> bytes:
        fetched.append((holder, key))
        data = leader.blobs.get(key)
        assert data is not None
        return data

    replicator = BlobReplicator(standby_blobs, state, "standby:2", fetch)
    assert replicator.sync() == 2
    assert replicator.sync() == 0  # nothing new
    assert {h for h, _ in fetched} == {"leader:1"}
    assert leader.replication_count("t-1-1") == 2
    leader.delete("t-1-1")
    assert replicator.sync() == 0 and standby_blobs.list_keys()  # a fresh copy is kept for a grace period
    monkeypatch.setattr(blobstore, "ORPHAN_GRACE_SECS", 0.0)
    past = SYSTEM_CLOCK.wall() - 10
    for key in standby_blobs.list_keys():
        os.utime(standby_blobs.root / key.replace(":", "%3A"), (past, past))
    replicator.sync()
    assert standby_blobs.list_keys() == []


def test_a_supervisor_downloads_checks_and_unpacks_code(tmp_path: Path, state) -> None:
    nimbus = NimbusCodeStore(LocalFsBlobStore(tmp_path / "nimbus"), state, "n:1")
    nimbus.put("t-1-1", ackcheck())
    calls: list[str] = []

    def fetch(holder: str, key: str) -> bytes:
        calls.append(holder)
        if holder == "dead:9":
            raise StormPyError("connection refused")
        data = nimbus.blobs.get(key)
        assert data is not None
        return data

    state.register_blob_holder(jar_key("t-1-1"), "dead:9", 1)
    dist = StormDist(tmp_path / "stormdist", state, fetch, leader=lambda: "dead:9")
    path = dist.ensure("t-1-1")
    # the code description from its only holder; the package from the leader first, then the other holders
    assert calls == ["n:1", "dead:9", "n:1"]
    assert (path / "code" / "ackcheck" / "topology.py").is_file()
    topology = DistCodeStore(path).load("t-1-1", {})
    assert set(topology.spouts) == {"ledger"}
    calls.clear()
    dist.ensure("t-1-1")
    assert calls == []  # already here
    dist.cleanup(["other"])
    assert not path.exists()


def test_a_corrupted_download_is_refused(tmp_path: Path, state) -> None:
    nimbus = NimbusCodeStore(LocalFsBlobStore(tmp_path / "nimbus"), state, "n:1")
    nimbus.put("t-1-1", ackcheck())
    nimbus.blobs.put(jar_key("t-1-1"), b"PK truncated")
    dist = StormDist(tmp_path / "stormdist", state, lambda h, k: nimbus.blobs.get(k) or b"", leader=lambda: None)
    with pytest.raises(TopologyLoadError, match="does not match its digest"):
        dist.ensure("t-1-1")
    assert not dist.ready("t-1-1")


@pytest.mark.parametrize(
    ("secs", "text"), [(0, "0s"), (59, "59s"), (61, "1m 1s"), (3600, "1h 0m 0s"), (90061, "1d 1h 1m 1s")]
)
def test_uptimes_read_like_storm_ui(secs: int, text: str) -> None:
    assert pretty_duration(secs) == text


def test_a_failed_copy_is_retried_with_backoff_not_every_round(tmp_path: Path, state, monkeypatch) -> None:
    leader = NimbusCodeStore(LocalFsBlobStore(tmp_path / "leader"), state, "leader:1")
    leader.put("t-1-1", ackcheck())
    attempts: list[str] = []

    def unreachable(holder: str, key: str) -> bytes:
        attempts.append(key)
        raise StormPyError("connection refused")

    replicator = BlobReplicator(LocalFsBlobStore(tmp_path / "standby"), state, "standby:2", unreachable)
    replicator.sync()
    replicator.sync()
    assert len(attempts) == 2  # one try per blob, the second round waited
    monkeypatch.setattr(blobstore, "COPY_RETRY_MAX_SECS", 0.0)
    replicator.sync()
    assert len(attempts) == 2  # still within the first delay
    replicator._retry = {k: (0.0, 0.0) for k in replicator._retry}
    replicator.sync()
    assert len(attempts) == 4
