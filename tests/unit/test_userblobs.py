"""The users' blob store: keys, ACLs, versions, and replication of updates to other nimbuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.errors import InvalidTopologyException, StormPyError
from storm_py.nimbus.blobstore import BlobReplicator, LocalFsBlobStore
from storm_py.nimbus.userblobs import BlobExistsError, UserBlobs, check_key, decode, parse_acl, store_key
from storm_py.node.http_api import NotFoundError


@pytest.fixture
def state() -> ClusterState:
    return ClusterState(MemoryStorage(MemoryStore()))


def test_create_update_acl_delete(tmp_path: Path, state: ClusterState) -> None:
    blobs = UserBlobs(LocalFsBlobStore(tmp_path / "n1"), state, "n1:1")
    assert blobs.create("mytopo:data.txt", b"one", parse_acl("u:alice:rwa,o::r")).version == 1
    with pytest.raises(BlobExistsError, match=r"mytopo:data\.txt"):
        blobs.create("mytopo:data.txt", b"again", ["o::rwa"])
    assert blobs.update("mytopo:data.txt", b"two").version == 2
    blob, data = blobs.read("mytopo:data.txt")
    assert (blob.version, blob.acl, data) == (2, ["u:alice:rwa", "o::r"], b"two")
    assert blobs.set_acl("mytopo:data.txt", ["o::r"]).acl == ["o::r"]
    assert [b.key for b in blobs.list()] == ["mytopo:data.txt"]
    blobs.delete("mytopo:data.txt")
    assert blobs.list() == []
    with pytest.raises(NotFoundError, match=r"mytopo:data\.txt"):
        blobs.read("mytopo:data.txt")


@pytest.mark.parametrize("key", ["", "a/b", "..", "x" * 201, "new\nline"])
def test_bad_keys_are_refused_by_name(key: str) -> None:
    with pytest.raises(StormPyError, match="blob key"):
        check_key(key)


@pytest.mark.parametrize("acl", ["x:alice:r", "u:alice:rwx", "u:a:b:c"])
def test_bad_acls_are_refused_by_entry(acl: str) -> None:
    with pytest.raises(StormPyError, match="ACL entry"):
        parse_acl(acl)


def test_a_standby_copies_each_new_version(tmp_path: Path, state: ClusterState) -> None:
    leader_store = LocalFsBlobStore(tmp_path / "leader")
    blobs = UserBlobs(leader_store, state, "leader:1")
    standby_store = LocalFsBlobStore(tmp_path / "standby")

    def fetch(holder: str, key: str) -> bytes:
        assert holder == "leader:1"
        data = leader_store.get(key)
        assert data is not None
        return data

    standby = BlobReplicator(standby_store, state, "standby:2", fetch)
    blobs.create("cfg", b"v1", ["o::rwa"])
    assert standby.sync() == 1
    blobs.update("cfg", b"v2")
    assert standby.sync() == 1
    stored = standby_store.get(store_key("cfg"))
    assert stored is not None and decode(stored, "cfg")[1] == b"v2"
    assert state.blob_holders(store_key("cfg")) == {"leader:1": 2, "standby:2": 2}
    assert standby.sync() == 0


def test_a_blob_map_must_name_existing_blobs(tmp_path: Path, state: ClusterState) -> None:
    blobs = UserBlobs(LocalFsBlobStore(tmp_path / "n1"), state, "n1:1")
    blobs.create("cfg", b"x", ["o::rwa"])
    blobs.check_map(None)
    blobs.check_map({"cfg": {"localname": "cfg.txt"}})
    with pytest.raises(InvalidTopologyException, match="ghost"):
        blobs.check_map({"cfg": {}, "ghost": {}})
    with pytest.raises(InvalidTopologyException, match="localname"):
        blobs.check_map({"cfg": "cfg.txt"})


def test_a_delete_during_a_sync_stays_deleted(tmp_path: Path, state: ClusterState) -> None:
    """A nimbus syncing while a blob is deleted (it listed the key before the delete, or its copy arrives after it)
    must not register itself as a holder again: that would bring the deleted blob back."""
    store = LocalFsBlobStore(tmp_path / "n1")
    blobs = UserBlobs(store, state, "n1:1")
    blobs.create("other", b"x", ["o::rwa"])
    keys = state.blob_keys

    def listed_before_the_delete() -> list[str]:
        listed = keys()
        state.remove_blob(store_key("other"))  # the delete lands between the listing and the holders' read
        return listed

    state.blob_keys = listed_before_the_delete  # type: ignore[method-assign]
    state.remove_blob_holder(store_key("other"), "n1:1")  # not yet registered here: the sync would register it
    BlobReplicator(store, state, "n1:1", lambda holder, key: b"").sync()
    state.blob_keys = keys  # type: ignore[method-assign]
    with pytest.raises(NotFoundError, match="'other'"):
        blobs.delete("other")

    blobs.create("again", b"y", ["o::rwa"])
    other = LocalFsBlobStore(tmp_path / "n2")

    def fetch_then_deleted(holder: str, key: str) -> bytes:
        data = store.get(key)
        blobs.delete("again")  # deleted while the copy travels
        assert data is not None
        return data

    BlobReplicator(other, state, "n2:2", fetch_then_deleted).sync()
    assert blobs.list() == [] and state.blob_keys() == []
