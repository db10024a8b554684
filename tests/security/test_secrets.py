"""Authentication on by default: generated secrets, private config files, a token generated when none is configured."""

from __future__ import annotations

import stat
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from storm_py.client import NimbusClient
from storm_py.dev.secret import main, with_secrets, write_private
from storm_py.nimbus.daemon import NimbusDaemon
from storm_py.node.session import is_loopback
from storm_py.state.memory import MemoryStorage


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
