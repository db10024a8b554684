"""The declared config table (storm_py/config/keys.py) against the code, defaults.yaml and conf/*.yaml."""

from __future__ import annotations

import ast
import logging
import re
from pathlib import Path

import pytest
import yaml

from storm_py.config import (
    COMPONENT_WHITELIST,
    defaults,
    merge_registrations,
    read_storm_config,
    validate,
    warn_unknown_topology_keys,
)
from storm_py.config.keys import KEYS, PASS_THROUGH_COMPONENT_KEYS, render_defaults_yaml
from storm_py.errors import ConfigError
from tests.unit.sources import parsed_sources

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "storm_py"

#: First segments of dotted string literals that name config keys (anything else is a module, file, logger...).
#: Not "spark": that is Spark's own namespace (session settings); storm_py's keys use "topology." / "storm.".
_KEY_PREFIXES = {
    "topology", "storm", "nimbus", "supervisor", "worker", "ui", "logviewer", "transactional", "drpc", "dev", "zmq",
    "kafka", "metrics", "pacemaker", "blobstore", "task",
}
_KEY_RE = re.compile(r"^[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)*\.[a-zA-Z0-9_-]+$")  # Storm has superACL
_FILE_SUFFIXES = (
    ".yaml", ".yml", ".log", ".out", ".err", ".zip", ".whl", ".json", ".py", ".txt", ".pid", ".lock", ".html", ".css",
    ".js", ".svg", ".png", ".ico", ".csv", ".parquet", ".tar", ".gz", ".db", ".sqlite",
)


def _key_literals(tree: ast.AST) -> list[ast.Constant]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            s = node.value
            if _KEY_RE.match(s) and s.split(".", 1)[0] in _KEY_PREFIXES and not s.endswith(_FILE_SUFFIXES):
                out.append(node)
    return out


def _trees() -> list[tuple[str, ast.Module]]:
    """Every module outside storm_py/config/ (the table and its loader name keys without reading them)."""
    return [(path, tree) for path, _, tree in parsed_sources() if not path.startswith("storm_py/config/")]


def _keys_in_code() -> dict[str, list[str]]:
    """Every config-key literal outside storm_py/config/, with where it appears."""
    found: dict[str, list[str]] = {}
    for path, tree in _trees():
        for node in _key_literals(tree):
            found.setdefault(node.value, []).append(f"{path}:{node.lineno}")
    return found


def test_every_key_the_code_reads_is_declared():
    undeclared = {k: where for k, where in _keys_in_code().items() if k not in KEYS}
    assert not undeclared, (
        "config keys used in the code but not declared in storm_py/config/keys.py (add one line each): "
        f"{undeclared}"
    )


def test_every_declared_key_is_read_somewhere():
    used = _keys_in_code()
    # the submit-time merge in storm_py.config reads these two itself
    read_by_config = {"topology.kryo.register", "topology.kryo.decorators"}
    unread = sorted(k for k in KEYS if k not in used and k not in read_by_config)
    assert not unread, f"declared config keys nothing reads (remove them or read them): {unread}"


def test_defaults_yaml_is_rendered_from_the_table():
    text = (PACKAGE / "config" / "defaults.yaml").read_text(encoding="utf-8")
    assert text == render_defaults_yaml(), (
        "storm_py/config/defaults.yaml is stale: run `python -m storm_py.config > storm_py/config/defaults.yaml`"
    )
    assert yaml.safe_load(text) == defaults() == {k: v.default for k, v in KEYS.items()}


def test_declared_defaults_pass_their_own_validation():
    validate(defaults())


def _fallbacks() -> list[tuple[str, object, str]]:
    """``conf.get("key", literal)`` fallbacks in the code: (key, literal, where)."""
    out = []
    for path, tree in _trees():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and len(node.args) == 2
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value in KEYS
            ):
                try:
                    literal = ast.literal_eval(node.args[1])
                except ValueError:
                    continue
                out.append((node.args[0].value, literal, f"{path}:{node.lineno}"))
    return out


def test_fallback_literals_agree_with_the_declared_defaults():
    fallbacks = _fallbacks()
    assert fallbacks, "the scan found no conf.get(key, default) call at all"
    wrong = [(k, lit, where, KEYS[k].default) for k, lit, where in fallbacks if lit != KEYS[k].default]
    assert not wrong, f"fallbacks disagreeing with keys.py (key, fallback, where, declared): {wrong}"


def test_operator_config_files_name_only_declared_keys():
    for path in [REPO / "conf" / "docker" / "storm.yaml"]:
        conf = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert set(conf) <= set(KEYS), f"{path}: unknown keys {set(conf) - set(KEYS)}"
        validate(conf)
    commented = re.findall(r"^# ([a-z][a-z0-9._-]+):", (REPO / "conf" / "storm.yaml").read_text(), re.M)
    assert commented and set(commented) <= set(KEYS), set(commented) - set(KEYS)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("topology.workers", 0, r"'topology.workers' must be an integer >= 1, got 0"),
        ("topology.workers", "2", r"'topology.workers' must be an integer"),
        ("topology.workers", 1.5, r"'topology.workers' must be an integer"),
        ("topology.workers", None, r"'topology.workers' must not be null"),
        ("topology.message.timeout.secs", True, r"'topology.message.timeout.secs' must be a number"),
        ("topology.debug", "yes", r"'topology.debug' must be true or false"),
        ("supervisor.slots.ports", [6700, 70000], r"'supervisor.slots.ports' must be a list of ports"),
        ("nimbus.seeds", "host", r"'nimbus.seeds' must be a list of strings"),
        ("ui.port", 65536, r"'ui.port' must be an integer <= 65535"),
    ],
)
def test_bad_values_are_refused_naming_the_key(key, value, message):
    with pytest.raises(ConfigError, match=message):
        validate({**defaults(), key: value})


def test_nullable_keys_take_null_and_user_keys_pass_untouched():
    validate({"topology.max.spout.pending": None, "topology.acker.executors": None, "my.own.key": object()})


def test_bad_value_in_a_file_or_override_names_the_key(tmp_path):
    f = tmp_path / "storm.yaml"
    f.write_text("supervisor.slots.ports: 6700\n")
    with pytest.raises(ConfigError, match=r"supervisor\.slots\.ports"):
        read_storm_config(f)
    with pytest.raises(ConfigError, match=r"topology\.enable\.message\.timeouts"):
        read_storm_config(overrides=["topology.enable.message.timeouts=maybe"], search_dirs=[])


def test_unknown_topology_key_on_the_command_line_warns_with_the_closest_key(caplog):
    with caplog.at_level(logging.WARNING, logger="storm_py.config"):
        conf = read_storm_config(overrides=["topology.worker=3", "example.db.path=x.db"], search_dirs=[])
    assert conf["topology.worker"] == 3  # kept: it may be the user's own key
    assert [r.getMessage() for r in caplog.records] == [
        "unknown config key 'topology.worker' given with -c; did you mean 'topology.workers'?"
    ]
    assert warn_unknown_topology_keys(["topology.workers", "topology.bolts.window.length.count", "x.y"]) == []


def test_component_whitelist_comes_from_the_table():
    assert {"topology.max.spout.pending", "topology.tick.tuple.freq.secs", "topology.debug"} <= COMPONENT_WHITELIST
    assert PASS_THROUGH_COMPONENT_KEYS <= COMPONENT_WHITELIST
    assert "topology.message.timeout.secs" not in COMPONENT_WHITELIST
    assert "topology.workers" not in COMPONENT_WHITELIST


def test_registrations_merge_like_storm_topology_wins():
    topo = {"topology.kryo.register": [{"a.Point": "topo.PointSer"}, "b.Line"], "topology.kryo.decorators": ["d1"]}
    comps = [
        {"topology.kryo.register": [{"a.Point": "comp.PointSer"}, {"c.Shape": "comp.ShapeSer"}],
         "topology.kryo.decorators": ["d2", "d1"]},
        None,
        {"topology.kryo.register": ["e.Thing"]},
    ]
    merged = merge_registrations(topo, comps)
    assert merged["topology.kryo.register"] == [
        {"a.Point": "topo.PointSer"}, {"c.Shape": "comp.ShapeSer"}, "e.Thing", "b.Line",
    ]
    assert sorted(merged["topology.kryo.decorators"]) == ["d1", "d2"]
    assert merge_registrations({"x": 1}, [{"y": 2}]) == {"x": 1}
    with pytest.raises(ConfigError, match=r"topology\.kryo\.register"):
        merge_registrations({"topology.kryo.register": "a.B"}, [])
