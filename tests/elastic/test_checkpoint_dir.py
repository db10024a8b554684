"""The durable checkpoint provider's own promises: a writer killed at any write leaves the last commit (or the new
one) and never a mix, also under ``kill -9`` of a real process; a torn manifest is passed over; a checkpoint writes
only the changed keys and compaction bounds the files; bad settings are refused naming the key."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import pytest

from storm_py.clock import wait_until
from storm_py.errors import ConfigError, InvalidTopologyException, StateBackendError
from storm_py.stateful.state.checkpoint_dir import (
    CheckpointDirState,
    FsspecBlobs,
    LocalBlobs,
    Settings,
    decode,
    encode,
    open_root,
    settings_of,
)
from storm_py.stateful.state.providers import check_provider


class Crash(Exception):
    """The writer died here."""


class DyingBlobs:
    """Blobs that die at the ``dies_at``-th write, optionally after writing half of that file in place."""

    def __init__(self, inner: Any, dies_at: int, torn: bool) -> None:
        self.inner, self.dies_at, self.torn = inner, dies_at, torn
        self.where = inner.where
        self.writes = 0

    def make(self) -> None:
        self.inner.make()

    def names(self) -> list[str]:
        return self.inner.names()

    def read(self, name: str) -> bytes | None:
        return self.inner.read(name)

    def remove(self, name: str) -> None:
        self.inner.remove(name)

    def child(self, name: str) -> Any:
        raise NotImplementedError

    def write(self, name: str, data: bytes) -> None:
        self.writes += 1
        if self.writes == self.dies_at:
            if self.torn:
                self.inner.write(name, data[: len(data) // 2])
            raise Crash(name)
        self.inner.write(name, data)


def run_checkpoints(state: CheckpointDirState, txids: range) -> None:
    """Each txid sets every key ``k0..k49`` to the txid, deletes ``gone<txid-1>``, then prepares and commits."""
    for txid in txids:
        for i in range(50):
            state.put(f"k{i}", txid)
        state.put(f"gone{txid}", txid)
        state.delete(f"gone{txid - 1}")
        state.prepare_commit(txid)
        state.commit(txid)


def consistent(state: CheckpointDirState) -> int:
    """The txid every committed key agrees on (prepared changes rolled back first, as a recovery may)."""
    if state.prepared_txid() is not None:
        state.rollback()
    txid = state.committed_txid()
    values = dict(state)
    assert {v for k, v in values.items() if k.startswith("k")} == {txid}, values
    assert {k for k in values if k.startswith("gone")} == {f"gone{txid}"}, values
    return txid


@pytest.mark.parametrize("torn", [False, True], ids=["clean-death", "torn-file"])
@pytest.mark.parametrize("kind", ["local", "fsspec-memory"])
def test_a_writer_dying_at_any_write_leaves_a_whole_commit(tmp_path: Path, kind: str, torn: bool) -> None:
    import fsspec

    for dies_at in range(1, 40):
        if kind == "local":
            inner: Any = LocalBlobs(tmp_path / f"d{dies_at}", fsync=False)
        else:
            root = f"/dying-{uuid.uuid4().hex}"
            inner = FsspecBlobs(fsspec.filesystem("memory"), root, f"memory://{root}")
        setup = CheckpointDirState(inner, compact_files=3)
        run_checkpoints(setup, range(0, 2))
        dying = CheckpointDirState(DyingBlobs(inner, dies_at, torn), compact_files=3)  # type: ignore[arg-type]
        with pytest.raises(Crash):
            run_checkpoints(dying, range(2, 30))
        reborn = CheckpointDirState(inner, compact_files=3)
        txid = consistent(reborn)
        assert txid >= 1
        run_checkpoints(reborn, range(txid + 1, txid + 3))  # and it goes on from there
        assert consistent(CheckpointDirState(inner, compact_files=3)) == txid + 2


CHILD = textwrap.dedent("""
    import sys
    from storm_py.stateful.state.checkpoint_dir import CheckpointDirState, LocalBlobs
    from pathlib import Path
    from tests.elastic.test_checkpoint_dir import run_checkpoints
    state = CheckpointDirState(LocalBlobs(Path(sys.argv[1])), compact_files=4)
    start = state.committed_txid() + 1
    print("started", flush=True)
    run_checkpoints(state, range(start, start + 1_000_000))
""")


def test_kill_9_during_checkpoints_leaves_a_whole_commit(tmp_path: Path) -> None:
    """A real process checkpointing in a loop, killed with SIGKILL several times at unplanned points."""
    path = tmp_path / "task"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path.cwd()), os.environ.get("PYTHONPATH", "")])}
    last = -1
    for round_ in range(4):
        proc = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, env=env)
        try:
            assert proc.stdout is not None and proc.stdout.readline() == b"started\n"
            target = last + 3 + round_

            def progressed(target: int = target) -> bool:
                return CheckpointDirState(LocalBlobs(path)).committed_txid() >= target

            wait_until(progressed, 60, interval=0.01, what=f"checkpoint {target}")
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.kill()
            proc.wait(30)
            if proc.stdout is not None:
                proc.stdout.close()
        assert proc.returncode == -signal.SIGKILL
        txid = consistent(CheckpointDirState(LocalBlobs(path)))
        assert txid >= last
        last = txid


def test_a_torn_newest_manifest_is_passed_over(tmp_path: Path) -> None:
    blobs = LocalBlobs(tmp_path / "t", fsync=False)
    state = CheckpointDirState(blobs)
    run_checkpoints(state, range(0, 3))
    newest = max(n for n in blobs.names() if n.startswith("manifest-"))
    seq = int(newest.split("-")[1])
    blobs.write(f"manifest-{seq + 1:016d}", encode({"seq": seq + 1})[:-3])  # torn
    reborn = CheckpointDirState(blobs)
    assert consistent(reborn) == 2
    run_checkpoints(reborn, range(3, 4))  # the torn manifest's number is written over
    assert consistent(CheckpointDirState(blobs)) == 3
    with pytest.raises(ValueError, match="checksum"):
        decode(encode({"a": 1})[:-1] + b"x")


def test_a_damaged_changes_file_is_a_clear_error(tmp_path: Path) -> None:
    blobs = LocalBlobs(tmp_path / "t", fsync=False)
    run_checkpoints(CheckpointDirState(blobs), range(0, 2))
    changes = max(n for n in blobs.names() if n.startswith(("changes-", "base-")))
    blobs.write(changes, b"SPCK\x01garbage!")
    with pytest.raises(StateBackendError, match=f"{changes} is damaged"):
        CheckpointDirState(blobs)


def test_a_checkpoint_writes_only_the_changed_keys_and_compaction_bounds_the_files(tmp_path: Path) -> None:
    blobs = LocalBlobs(tmp_path / "t", fsync=False)
    state = CheckpointDirState(blobs, compact_files=4)
    for i in range(5000):
        state.put(f"key-{i}", "x" * 20)
    state.prepare_commit(0)
    state.commit(0)
    full = sum(len(blobs.read(n) or b"") for n in blobs.names() if n.startswith(("changes-", "base-")))
    sizes = []
    for txid in range(1, 20):
        before = set(blobs.names())
        state.put(f"key-{txid}", txid)
        state.prepare_commit(txid)
        sizes += [len(blobs.read(n) or b"") for n in set(blobs.names()) - before if n.startswith("changes-")]
        state.commit(txid)
        data = [n for n in blobs.names() if n.startswith(("changes-", "base-"))]
        assert len(data) <= 4 + 1 + 4, data  # the newest manifest's files and its predecessor's
        assert len([n for n in blobs.names() if n.startswith("manifest-")]) <= 2
    assert sizes and max(sizes) < full / 100, (sizes, full)
    again = CheckpointDirState(blobs)
    assert len(again) == 5000 and again.get("key-19") == 19 and again.get("key-20") == "x" * 20


def test_bad_settings_name_the_key(tmp_path: Path) -> None:
    def check(config: Any, **extra: Any) -> None:
        check_provider({"topology.state.provider": "checkpoint_dir", "topology.state.provider.config": config,
                        **extra})

    with pytest.raises(ConfigError, match=r"needs topology\.state\.provider\.config \{\"url\": \.\.\.\}") as info:
        check({})
    assert info.value.fields["key"] == "topology.state.provider.config"
    check({}, **{"topology.state.checkpoint.dir": str(tmp_path / "default")})  # the cluster's default url
    assert not (tmp_path / "default").exists()  # a submit creates nothing
    with pytest.raises(ConfigError, match=r"unknown keys \['path'\]"):
        check({"path": "/x"})
    with pytest.raises(ConfigError, match=r"fsspec cannot open protocol 'nosuchproto'") as info:
        check({"url": "nosuchproto://bucket/state"})
    assert info.value.fields["key"] == "topology.state.provider.config"
    (tmp_path / "a-file").write_text("")
    with pytest.raises(ConfigError, match=r"url '.*a-file/state' is not reachable") as info:
        check({"url": str(tmp_path / "a-file" / "state")})
    assert info.value.fields["key"] == "topology.state.provider.config"
    (tmp_path / "locked").mkdir(mode=0o500)
    if os.geteuid() != 0:  # root writes anywhere
        with pytest.raises(ConfigError, match=r"locked is not writable"):
            check({"url": str(tmp_path / "locked" / "deeper" / "state")})
    with pytest.raises(ConfigError, match="compact_files must be an integer >= 1"):
        check({"url": str(tmp_path), "compact_files": 0})
    with pytest.raises(ConfigError, match="url must be a non-empty string"):
        settings_of({"url": 7})
    check({"url": f"file://{tmp_path / 'f'}"})
    check({"url": "memory://storm-py-check"})
    assert isinstance(open_root(Settings(f"file://{tmp_path}")), LocalBlobs)


def test_a_submit_with_a_bad_url_is_refused_naming_the_key(tmp_path: Path) -> None:
    from storm_py import LocalCluster
    from tests.stateful.components import new_run, word_count_topology

    new_run("bad-url")
    conf = {"topology.state.provider": "checkpoint_dir",
            "topology.state.provider.config": {"url": "nosuchproto://x"}}
    with LocalCluster(supervisors=1) as cluster:
        with pytest.raises(InvalidTopologyException, match=r"topology\.state\.provider\.config url"):
            cluster.submit_topology("bad-url", conf, word_count_topology("bad-url", ["a"]))
        assert cluster.get_topology_id("bad-url") is None


def test_a_reader_beside_a_running_writer_reads_a_whole_commit(tmp_path: Path) -> None:
    """A tool reading a task's committed state while the task checkpoints (and removes old files) meanwhile."""
    blobs = LocalBlobs(tmp_path / "t", fsync=False)
    writer = CheckpointDirState(blobs, compact_files=2)
    run_checkpoints(writer, range(0, 2))

    class Racing:
        """Lets the writer run two checkpoints right after the reader listed the directory."""

        where = blobs.where
        raced = 0

        def names(self) -> list[str]:
            names = blobs.names()
            if Racing.raced < 2:
                Racing.raced += 1
                start = writer.committed_txid() + 1
                run_checkpoints(writer, range(start, start + 2))
            return names

        def read(self, name: str) -> bytes | None:
            return blobs.read(name)

    reader = CheckpointDirState(Racing(), compact_files=2)  # type: ignore[arg-type]
    assert consistent(reader) == writer.committed_txid()
