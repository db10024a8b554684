"""Authentication on by default: generated secrets, private config files, a token generated when none is configured."""

from __future__ import annotations

import os
import stat
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from storm_py.client import NimbusClient
from storm_py.cluster_state.memory import MemoryStorage
from storm_py.dev.secret import main, with_secrets, write_private
from storm_py.nimbus.daemon import NimbusDaemon
from storm_py.node.session import is_loopback
from storm_py.supervisor.daemon import write_worker_conf


def test_secrets_are_generated_fresh_and_kept_when_set() -> None:
    first, second = with_secrets({}), with_secrets({})
    assert first["nimbus.auth.token"] != second["nimbus.auth.token"]
    assert first["storm.zookeeper.auth.payload"] != second["storm.zookeeper.auth.payload"]
    assert len(first["nimbus.auth.token"]) >= 40 and first["storm.zookeeper.auth.payload"].startswith("storm:")
    kept = with_secrets({"nimbus.auth.token": "mine", "storm.zookeeper.auth.payload": "u:p"})
    assert kept["nimbus.auth.token"] == "mine" and kept["storm.zookeeper.auth.payload"] == "u:p"


def test_config_files_with_secrets_are_private(tmp_path: Path) -> None:
    path = tmp_path / "storm.yaml"
    path.write_text("old: 1\n", encoding="utf-8")
    path.chmod(0o644)  # an existing wide file is narrowed, not reused as it is
    write_private(path, with_secrets({"a": 1}))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert yaml.safe_load(path.read_text(encoding="utf-8"))["a"] == 1


def test_the_container_generator_keeps_existing_secrets(tmp_path: Path) -> None:
    src, dst = tmp_path / "storm.yaml", tmp_path / "generated" / "storm.yaml"
    src.write_text("nimbus.host: nimbus\n", encoding="utf-8")
    assert main([str(src), str(dst)]) == 0
    first = yaml.safe_load(dst.read_text(encoding="utf-8"))
    assert main([str(src), str(dst)]) == 0
    again = yaml.safe_load(dst.read_text(encoding="utf-8"))
    assert first["nimbus.auth.token"] == again["nimbus.auth.token"] and again["nimbus.host"] == "nimbus"
    assert stat.S_IMODE(dst.stat().st_mode) == 0o600


def test_nimbus_without_a_token_generates_one_and_serves_nothing_without_it(tmp_path: Path) -> None:
    daemon = NimbusDaemon({"nimbus.thrift.port": 0, "storm.local.dir": str(tmp_path)}, MemoryStorage())
    try:
        token_file = tmp_path / "storm-py.token"
        token = token_file.read_text(encoding="utf-8").strip()
        assert len(token) >= 40 and stat.S_IMODE(token_file.stat().st_mode) == 0o600
        daemon.api.start()
        url = f"http://127.0.0.1:{daemon.port}/api/v1/cluster/summary"
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url, timeout=10)
        assert refused.value.code == 401
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, timeout=10) as reply:
            assert reply.status == 200
        # a client with the same storm.local.dir and no token in its config finds the file
        assert NimbusClient({"storm.local.dir": str(tmp_path)}).token == token
    finally:
        daemon.api.stop()
        daemon.state.close()


def test_loopback_names() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost") and is_loopback("127.1.2.3")
    assert not is_loopback("0.0.0.0") and not is_loopback("") and not is_loopback("example.com")


#: Whether the audit hook below looks at the files (a process keeps its audit hooks; this switches it off).
_WATCH: dict[str, Any] = {"dir": None, "busy": False, "seen": []}


def _watch_files(event: str, args: tuple[Any, ...]) -> None:
    """At every audited step (an open, a chmod, a rename...), every file of the watched directory holding the
    token must be readable by its owner alone."""
    folder = _WATCH["dir"]
    if folder is None or _WATCH["busy"]:
        return
    _WATCH["busy"] = True
    try:
        for path in folder.iterdir():
            try:
                mode = stat.S_IMODE(path.stat().st_mode)
                holds = b"worker-conf-token" in path.read_bytes()
            except OSError:
                continue
            _WATCH["seen"].append((event, path.name, mode, holds))
    finally:
        _WATCH["busy"] = False


def test_the_worker_conf_holds_the_token_readable_by_its_owner_only_from_its_first_byte(tmp_path: Path) -> None:
    """The file was written 0644 (the umask's) and chmod-ed to 0600 after: between the two, another local user
    could read the token.  Every step of the write is watched; a copy left 0644 by an earlier version is replaced."""
    folder = tmp_path / "supervisor"
    folder.mkdir()
    path = folder / "worker-conf.yaml"
    path.write_text("old: 1\n", encoding="utf-8")
    path.chmod(0o644)
    sys.addaudithook(_watch_files)
    previous = os.umask(0o022)
    _WATCH.update({"dir": folder, "seen": []})
    try:
        write_worker_conf(path, {"nimbus.auth.token": "worker-conf-token", "storm.zookeeper.auth.payload": "u:p"})
    finally:
        _WATCH["dir"] = None
        os.umask(previous)
    seen = _WATCH["seen"]
    assert any(holds for *_, holds in seen), "the watch saw no step of the write"
    exposed = [(event, name, oct(mode)) for event, name, mode, holds in seen if holds and mode & 0o077]
    assert exposed == []
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and [p.name for p in folder.iterdir()] == [path.name]
    conf = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert conf == {"nimbus.auth.token": "worker-conf-token"}  # and never the cluster's ZooKeeper payload
