"""The layer contract (.importlinter, docs/DESIGN.md), one owner per external system, and the one clock."""

from __future__ import annotations

import ast
import configparser
import re
import subprocess
import sys
from pathlib import Path

from tests.unit.sources import parsed_sources

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "storm_py"

#: external top-level package -> the only module allowed to import it (a path, or a package folder whose
#: modules hold it; pyarrow has two such folders, the Parquet sink's and columnar streams', and the Kafka spouts'
#: columnar module)
OWNERS = {
    "kazoo": "storm_py/cluster_state/zk.py",
    "zmq": "storm_py/transport/zmq.py",
    "pyspark": "storm_py/spark/",
    "pyarrow": ("storm_py/spark/", "storm_py/vector/", "storm_py/kafka/columnar.py"),
    "confluent_kafka": "storm_py/kafka/",
    "kafka": "storm_py/kafka/",
    "redis": "storm_py/stateful/state/redis_client.py",
    "fsspec": "storm_py/stateful/state/checkpoint_dir.py",
    "psycopg": "storm_py/jdbc/driver.py",
    "streamparse": "storm_py/streamparse/translate.py",
    "pystorm": "storm_py/streamparse/inprocess.py",
    "opentelemetry": "storm_py/tracing/otlp.py",
}

#: where time.time / time.monotonic / time.sleep may appear: the clock (the worker launcher and the dev cluster and
#: ZooKeeper read time through it too)
CLOCK_EXEMPT = {
    "storm_py/clock.py",
    "storm_py/dev/kafka.py",
}
_TIME_CALLS = {"time", "time_ns", "monotonic", "monotonic_ns", "sleep"}


def _layers() -> list[list[str]]:
    cfg = configparser.ConfigParser()
    cfg.read(REPO / ".importlinter")
    lines = [ln.strip() for ln in cfg["importlinter:contract:layers"]["layers"].splitlines() if ln.strip()]
    return [[name.strip().strip("()") for name in ln.split(":")] for ln in lines]


def _sources() -> list[tuple[str, ast.Module]]:
    return [(path, tree) for path, _, tree in parsed_sources()]


def test_the_import_contract_holds():
    lint = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(lint), "--config", str(REPO / ".importlinter"), "--no-cache"], cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "KEPT" in proc.stdout


def test_every_package_has_a_layer_and_design_md_shows_the_same_layers():
    layers = _layers()
    named = {name for layer in layers for name in layer}
    present = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    present |= {p.stem for p in PACKAGE.glob("*.py") if p.stem not in ("__init__", "__main__")}
    assert present <= named, f"packages without a layer in .importlinter: {sorted(present - named)}"
    design = (REPO / "docs" / "DESIGN.md").read_text(encoding="utf-8")
    diagram = re.search(r"^## Layers\n.*?^```\n(.*?)^```", design, flags=re.MULTILINE | re.DOTALL)
    assert diagram, "docs/DESIGN.md must open with the layer diagram"
    shown = [[n.strip() for n in re.split(r"\s{2,}", ln)[0].split(":")] for ln in diagram.group(1).splitlines()]
    assert shown == layers, "docs/DESIGN.md's layer diagram and .importlinter disagree"
    table = set(re.findall(r"^\| `(\w+)` \|", design, flags=re.MULTILINE))
    assert named <= table, f"packages missing from docs/DESIGN.md's table: {sorted(named - table)}"


def test_each_external_system_has_one_owner_module():
    importers: dict[str, set[str]] = {name: set() for name in OWNERS}
    for path, tree in _sources():
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top in importers:
                    importers[top].add(path)
    for name, modules in importers.items():
        owners = OWNERS[name]
        owned = (owners,) if isinstance(owners, str) else owners
        assert len(modules) <= 1 or len(owned) > 1 or owned[0].endswith("/"), (
            f"{name} is imported by {sorted(modules)}; only one module may own it")
        assert all(any(m == o or (o.endswith("/") and m.startswith(o)) for o in owned) for m in modules), (
            f"{name} is imported by {sorted(modules)}, outside its owners {owned}"
        )
    assert importers["kazoo"] == {OWNERS["kazoo"]} and importers["zmq"] == {OWNERS["zmq"]}


def test_no_timer_outside_the_clock_and_the_process_launchers():
    found = []
    for path, tree in _sources():
        if path in CLOCK_EXEMPT:
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr in _TIME_CALLS
                    and isinstance(node.value, ast.Name) and node.value.id == "time"):
                found.append(f"{path}:{node.lineno}: time.{node.attr}")
            elif isinstance(node, ast.ImportFrom) and node.module == "time":
                found += [f"{path}:{node.lineno}: from time import {a.name}" for a in node.names
                          if a.name in _TIME_CALLS]
    assert not found, "read time through storm_py.clock (Clock, SYSTEM_CLOCK, Deadline, wait_until):\n" + \
        "\n".join(found)
