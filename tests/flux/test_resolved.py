"""The resolved definition a remote submission carries: written back as Storm's model it reads into the same
definition, and a worker builds the same topology from the unpacked package folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from storm_py.flux import load
from storm_py.flux.model import read_definition
from storm_py.flux.resolved import RESOLVED_FILE, stage, to_model, topology_from_folder
from storm_py.flux.wrappers import FluxShellBolt


def _comparable(td):  # the source files differ: compare the model only
    return to_model(td)


def test_every_part_of_the_model_survives_the_round_trip(configs: Path) -> None:
    for name in ("tck.yaml", "shell_test.yaml", "worker_hook.yaml", "component-config-test.yaml"):
        td = load(configs / name)
        again = read_definition(json.loads(json.dumps(to_model(td))), "resolved")
        assert _comparable(again) == _comparable(td)
        assert [(b.id, b.config, b.num_tasks, b.cpu_load) for b in again.bolts] == \
            [(b.id, b.config, b.num_tasks, b.cpu_load) for b in td.bolts]
        assert [(s.id, s.constructor_args, s.config_methods) for s in again.spouts] == \
            [(s.id, s.constructor_args, s.config_methods) for s in td.spouts]


def test_a_worker_builds_the_topology_from_the_staged_folder(configs: Path, tmp_path: Path) -> None:
    td = load(configs / "substitution-test.yaml", configs / "test.properties")
    folder = tmp_path / "pkg"
    (folder / "resources").mkdir(parents=True)
    assert stage(td, folder) == "storm_py_flux_entry:topology"
    shutil.copy(configs / "resources" / "splitsentence.py", folder / "resources")
    assert json.loads((folder / RESOLVED_FILE).read_text())["name"] == "substitution-topology"
    topology = topology_from_folder(folder)
    bolt = topology.bolts["splitsentence"].obj
    assert isinstance(bolt, FluxShellBolt) and bolt.working_dir == str(folder / "resources")
    assert topology.bolts["count"].inputs[("splitsentence", "default")].kind == "fields"
