"""Authentication on by default: generated secrets, private config files, nimbus refusing an open bind."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import yaml

from storm_py.dev.secret import main, with_secrets, write_private
from storm_py.errors import ConfigError
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


@pytest.mark.parametrize("bind", ["0.0.0.0", "10.1.2.3", "nimbus.example.com", "::"])
def test_nimbus_refuses_a_non_loopback_bind_without_a_token(bind: str, tmp_path: Path) -> None:
    storage = MemoryStorage()
    with pytest.raises(ConfigError, match=r"nimbus\.auth\.token"):
        NimbusDaemon({"nimbus.bind.host": bind, "nimbus.thrift.port": 0, "storm.local.dir": str(tmp_path)}, storage)


def test_loopback_names() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost") and is_loopback("127.1.2.3")
    assert not is_loopback("0.0.0.0") and not is_loopback("") and not is_loopback("example.com")
