"""Placing users' blobs into workers' directories: first placement, updates, and names that are refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.cluster_state.models import StormBase
from storm_py.nimbus.blobstore import LocalFsBlobStore
from storm_py.nimbus.userblobs import UserBlobs
from storm_py.supervisor.localizer import BlobLocalizer, local_names

TID = "words-1-1700000000"


def _setup(tmp_path: Path, blob_map: Any) -> tuple[UserBlobs, BlobLocalizer, dict[str, Any]]:
    state = ClusterState(MemoryStorage(MemoryStore()))
    store = LocalFsBlobStore(tmp_path / "nimbus")
    blobs = UserBlobs(store, state, "n1:1")
    state.set_storm_base(TID, StormBase(name="words", status="active", launch_time=0.0, num_workers=1,
                                        topology_conf={"topology.blobstore.map": blob_map}))
    conf = {"storm.log.dir": str(tmp_path / "logs")}

    def fetch(holder: str, key: str) -> bytes:
        data = store.get(key)
        assert holder == "n1:1" and data is not None
        return data

    return blobs, BlobLocalizer(conf, state, fetch, lambda: "n1:1"), conf


def test_blobs_are_placed_and_follow_updates(tmp_path: Path) -> None:
    blobs, localizer, _ = _setup(tmp_path, {"cfg": {"localname": "cfg.txt"}, "raw": {}})
    blobs.create("cfg", b"one", ["o::rwa"])
    blobs.create("raw", b"r", ["o::rwa"])
    target = tmp_path / "logs" / "workers-artifacts" / TID / "6700"
    assert localizer.sync({6700: TID}) == 2
    assert (target / "cfg.txt").read_bytes() == b"one" and (target / "raw").read_bytes() == b"r"
    assert localizer.sync({6700: TID}) == 0  # nothing newer
    blobs.update("cfg", b"two")
    assert localizer.sync({6700: TID}) == 1
    assert (target / "cfg.txt").read_bytes() == b"two"
    assert not [p for p in target.iterdir() if p.name.startswith(".blob-")]  # no temporary file left


def test_a_missing_blob_is_skipped_until_it_exists(tmp_path: Path) -> None:
    blobs, localizer, _ = _setup(tmp_path, {"later": {}})
    assert localizer.sync({6700: TID}) == 0
    blobs.create("later", b"now", ["o::rwa"])
    assert localizer.sync({6700: TID}) == 1


def test_names_that_would_leave_the_directory_or_hide_worker_files_are_refused() -> None:
    mapping = {"a": {"localname": "../escape"}, "b": {"localname": "worker.log"}, "c": {"localname": "ok.txt"},
               "d": "plain"}
    assert local_names(mapping) == {"c": "ok.txt", "d": "d"}
    assert local_names(None) == {}
