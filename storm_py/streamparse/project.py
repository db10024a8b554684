"""This module owns reading a streamparse project folder: ``config.json``, which topology file to run, its
options (config.json's ``options`` < the ``Topology``'s ``config`` < ``-o``), ``src/`` and ``virtualenvs/NAME.txt``.

Every problem is a :class:`TopologyLoadError` naming the file or folder that is missing or wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from storm_py.errors import TopologyLoadError

CONFIG_FILE: Final = "config.json"
SRC_DIR: Final = "src"
#: config.json keys storm_py reads; the rest of it (``envs``, fabric settings) is only for streamparse's own
#: remote deployment and is ignored with a notice
IGNORED_KEYS: Final = ("envs",)
FABFILE: Final = "fabfile.py"


@dataclass
class Project:
    """One topology of a streamparse project."""

    root: Path
    name: str
    config: dict[str, Any]
    topology_file: Path
    src: Path
    requirements: Path | None
    notices: list[str] = field(default_factory=list)

    @property
    def serializer(self) -> str:
        """config.json's ``serializer`` (pystorm's ``-s``), ``json`` when absent."""
        value = self.config.get("serializer", "json")
        if value not in ("json", "msgpack"):
            raise TopologyLoadError(
                f"{self.root / CONFIG_FILE}: serializer {value!r} is neither 'json' nor 'msgpack'", path=str(self.root)
            )
        return str(value)

    def options(self) -> dict[str, Any]:
        """config.json's top-level ``options`` (storm options applying to every environment)."""
        opts = self.config.get("options", {})
        if not isinstance(opts, dict):
            raise TopologyLoadError(f"{self.root / CONFIG_FILE}: 'options' must be an object", path=str(self.root))
        return dict(opts)


def _read_config(root: Path) -> dict[str, Any]:
    path = root / CONFIG_FILE
    if not root.is_dir():
        raise TopologyLoadError(f"{root} is not a folder (a streamparse project folder holds {CONFIG_FILE})",
                                path=str(root))
    if not path.is_file():
        raise TopologyLoadError(f"{root} is not a streamparse project: no {CONFIG_FILE} in it", path=str(root))
    try:
        config = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise TopologyLoadError(f"{path}: cannot read it as JSON ({err})", path=str(path)) from err
    if not isinstance(config, dict):
        raise TopologyLoadError(f"{path}: must hold a JSON object", path=str(path))
    return config


def find_project(root: str | Path, name: str | None = None) -> Project:
    """The project at ``root`` and its topology ``name`` (the only one in ``topology_specs`` when None)."""
    root = Path(root).resolve()
    config = _read_config(root)
    specs = root / str(config.get("topology_specs", "topologies/"))
    if not specs.is_dir():
        raise TopologyLoadError(f"{root}: no topology folder {specs.name}/ (config.json's topology_specs)",
                                path=str(specs))
    if name is None:
        files = sorted(p for p in specs.glob("*.py") if p.name != "__init__.py")
        if not files:
            raise TopologyLoadError(f"{specs}: no topology definition (NAME.py) in it", path=str(specs))
        if len(files) > 1:
            raise TopologyLoadError(
                f"{specs} holds more than one topology ({', '.join(p.stem for p in files)}): name one", path=str(specs)
            )
        topology_file = files[0]
        name = topology_file.stem
    else:
        topology_file = specs / f"{name}.py"
        if not topology_file.is_file():
            raise TopologyLoadError(f"{specs}: no topology definition {name}.py", path=str(topology_file))
    src = root / SRC_DIR
    if not src.is_dir():
        raise TopologyLoadError(f"{root}: no {SRC_DIR}/ folder (the project's Python components)", path=str(src))
    venvs = root / str(config.get("virtualenv_specs", "virtualenvs/"))
    requirements = venvs / f"{name}.txt"
    notices = [f"config.json's {key!r} is ignored (storm_py deploys through nimbus, not over SSH)"
               for key in IGNORED_KEYS if key in config]
    if (root / FABFILE).is_file():
        notices.append(f"{FABFILE} is ignored (streamparse's fabric hooks do not run)")
    return Project(root, name, config, topology_file, src, requirements if requirements.is_file() else None,
                   notices)
