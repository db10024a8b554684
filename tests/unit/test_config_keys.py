"""The declared config table (storm_py/config/keys.py) against the code, defaults.yaml and conf/*.yaml."""

from __future__ import annotations

import ast
import functools
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


def _looks_like_key(s: str) -> bool:
    return bool(_KEY_RE.match(s)) and s.split(".", 1)[0] in _KEY_PREFIXES and not s.endswith(_FILE_SUFFIXES)


def _key_literals(tree: ast.AST) -> list[ast.Constant]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _looks_like_key(node.value):
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


def test_every_key_named_in_the_code_is_declared():
    """Wider than reading: any key-shaped string outside storm_py/config/ (a key written, listed or documented)."""
    undeclared = {k: where for k, where in _keys_in_code().items() if k not in KEYS}
    assert not undeclared, (
        "config keys used in the code but not declared in storm_py/config/keys.py (add one line each): "
        f"{undeclared}"
    )


#: Calls whose first argument (``setting``: second) is a key being read.
_READ_CALLS = {"get", "pop", "setdefault", "setting", "defaults_of"}


def _strings(node: ast.AST, names: dict[str, set[str]]) -> set[str]:
    """The strings ``node`` stands for: a literal, a tuple of them, a name bound to them, an item of such a name."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return set().union(*(_strings(e, names) for e in node.elts)) if node.elts else set()
    if isinstance(node, ast.Name):
        return names.get(node.id, set())
    if isinstance(node, ast.Subscript):
        return _strings(node.value, names)
    return set()


@functools.cache
def _module_constants() -> dict[str, dict[str, set[str]]]:
    """Each module's top-level names bound to strings (``MAX_PENDING_KEY = "topology..."``), by dotted module name."""
    out: dict[str, dict[str, set[str]]] = {}
    for path, _, tree in parsed_sources():
        module = path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        names: dict[str, set[str]] = {}
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if isinstance(target, ast.Name) and (found := _strings(node.value, names)):
                        names[target.id] = found
        out[module] = names
    return out


def _names_in(tree: ast.Module, constants: dict[str, dict[str, set[str]]]) -> dict[str, set[str]]:
    """Names of one module bound to strings: imported constants, assignments (unpacking too), loop variables."""
    names: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in constants:
            for alias in node.names:
                if alias.name in constants[node.module]:
                    names[alias.asname or alias.name] = constants[node.module][alias.name]
    for _ in range(2):  # a name bound from another name bound later in the text
        for node in ast.walk(tree):
            pairs: list[tuple[ast.AST, ast.AST]] = []
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                        pairs += zip(target.elts, node.value.elts, strict=False)
                    else:
                        pairs.append((target, node.value))
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                pairs.append((node.target, node.value))
            elif isinstance(node, (ast.For, ast.comprehension)):
                pairs.append((node.target, node.iter))
            for target, value in pairs:
                if isinstance(target, ast.Name) and (found := _strings(value, names)):
                    names.setdefault(target.id, set()).update(found)
    return names


def _is_conf(node: ast.AST) -> bool:
    """``conf``, ``self.conf``, ``topo_conf``...: an expression that names a configuration."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name == "conf" or name.endswith("_conf")


@functools.cache
def _reads_in_code() -> dict[str, list[str]]:
    """Every string in a reading position, with where: ``x.get(k)``, ``setting(conf, k)``, ``x[k]`` (not a store),
    ``k in x``, and a call handed a conf and ``k`` together (``_payload(conf, k, ...)``)."""
    constants = _module_constants()
    found: dict[str, list[str]] = {}
    for path, _, tree in parsed_sources():
        names = _names_in(tree, constants)
        for node in ast.walk(tree):
            keys: set[str] = set()
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
                if called in _READ_CALLS and node.args:
                    keys = _strings(node.args[1 if called == "setting" and len(node.args) > 1 else 0], names)
                if any(_is_conf(a) for a in node.args):
                    keys |= set().union(*(_strings(a, names) for a in node.args))
            elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
                keys = _strings(node.slice, names)
            elif isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.In, ast.NotIn)):
                keys = _strings(node.left, names)
            for key in keys:
                found.setdefault(key, []).append(f"{path}:{node.lineno}")
    return found


def test_every_key_the_code_reads_is_declared_and_every_declared_key_is_read():
    """Both ways: a key read in storm_py is in the table, and a key in the table is read by storm_py, unless the
    table says why not (``not_read``: passed through to the topology's code, or accepted for compatibility)."""
    reads = _reads_in_code()
    undeclared = {k: where for k, where in reads.items() if _looks_like_key(k) and k not in KEYS}
    assert not undeclared, f"config keys read but not declared in storm_py/config/keys.py: {undeclared}"
    unread = sorted(name for name, key in KEYS.items() if name not in reads and not key.not_read)
    assert not unread, (
        f"declared config keys nothing in storm_py reads (read them, remove them, or say why in not_read): {unread}"
    )
    marked_but_read = {name: reads[name] for name, key in KEYS.items() if key.not_read and name in reads}
    assert not marked_but_read, f"keys marked not_read that the code reads (drop the mark): {marked_but_read}"


def test_defaults_yaml_is_rendered_from_the_table():
    text = (PACKAGE / "config" / "defaults.yaml").read_text(encoding="utf-8")
    assert text == render_defaults_yaml(), (
        "storm_py/config/defaults.yaml is stale: run `python -m storm_py.config > storm_py/config/defaults.yaml`"
    )
    assert yaml.safe_load(text) == defaults() == {k: v.default for k, v in KEYS.items()}


def test_declared_defaults_pass_their_own_validation():
    validate(defaults())


def _literal_defaults_in(path: str, tree: ast.Module) -> list[str]:
    """``x.get(key, literal)`` and ``x.get(key) or literal`` for a declared key in one module: where, key and
    literal.  A key constant (of the module or imported) counts as the key, a constant of the module as a literal."""
    names = _names_in(tree, _module_constants())
    own: set[str] = set()

    def literal(node: ast.AST) -> bool:
        if isinstance(node, ast.Name):
            return node.id in own
        try:
            return ast.literal_eval(node) is not None
        except (ValueError, TypeError, SyntaxError):
            return False

    own |= {  # the module's constants: top-level names bound to literals (``DEFAULT_TIMEOUT_SECS = 60.0``)
        target.id
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and literal(node.value)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Name) and target.id.isupper()
    }

    def key_of(node: ast.AST) -> str | None:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
            declared = [k for k in _strings(node.args[0], names) if k in KEYS] if node.args else []
            return declared[0] if len(declared) == 1 else None
        return None

    out = []
    for node in ast.walk(tree):
        if (key := key_of(node)) is not None and isinstance(node, ast.Call) and len(node.args) == 2:
            fallback = node.args[1]
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and (key := key_of(node.values[0])):
            fallback = node.values[1]
        else:
            continue
        if literal(fallback) and not (KEYS[key].default is None and _is_empty_container(fallback)):
            out.append(f"{path}:{node.lineno}: {key} falls back to {ast.unparse(fallback)}")
    return out


def _is_empty_container(node: ast.AST) -> bool:
    """``[]``, ``{}``, ``()``: a null key read as "none", not a second default (``or []`` of a null-default key)."""
    if isinstance(node, ast.Dict):
        return not node.keys
    return isinstance(node, (ast.List, ast.Tuple, ast.Set)) and not node.elts


def test_no_literal_default_for_a_declared_key():
    """Each default is stated once, in keys.py: code reads it with setting(conf, key), never restates it."""
    found = [line for path, _, tree in parsed_sources() for line in _literal_defaults_in(path, tree)]
    assert not found, "literal defaults of declared keys (read them with storm_py.config.keys.setting):\n" + "\n".join(
        found
    )


def test_the_literal_default_scan_sees_each_form():
    source = """
PORT_KEY = "nimbus.thrift.port"
FALLBACK = 6627
a = conf.get("topology.workers", 1)
b = int(self.conf.get(PORT_KEY) or FALLBACK)
c = setting(conf, "topology.workers")
d = conf.get("topology.acker.executors") or []
e = conf.get("my.own.key", 3)
"""
    found = _literal_defaults_in("storm_py/example.py", ast.parse(source))
    assert found == [
        "storm_py/example.py:4: topology.workers falls back to 1",
        "storm_py/example.py:5: nimbus.thrift.port falls back to FALLBACK",
    ]


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
