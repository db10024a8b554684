"""This module owns the code-store seam: where each topology's code is kept and how a worker builds it again.

The in-memory store holds topology objects (LocalCluster: components live in the calling process); the
distributed cluster keeps packages in nimbus's blob store, and a worker loads ``MODULE:FUNCTION`` from the copy
its supervisor unpacked (:class:`DistCodeStore`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from storm_py.api.topology import StormTopology
from storm_py.errors import TopologyLoadError
from storm_py.node.local_state import read_json
from storm_py.packaging.code_loader import load_topology

#: In a topology's unpacked directory: the code description (entry point, digest) and the unpacked package.
META = "stormcode.json"
CODE = "code"


class CodeStore(Protocol):
    """Topology code by topology id."""

    def put(self, topology_id: str, code: Any) -> None: ...

    def load(self, topology_id: str, conf: dict[str, Any]) -> StormTopology: ...

    def delete(self, topology_id: str) -> None: ...

    def has(self, topology_id: str) -> bool: ...


class MemoryCodeStore:
    """Keeps :class:`StormTopology` objects in memory (each worker deep-copies what it runs)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._code: dict[str, StormTopology] = {}

    def put(self, topology_id: str, code: Any) -> None:
        if not isinstance(code, StormTopology):
            raise TopologyLoadError(f"expected a StormTopology for {topology_id}, got {type(code).__name__}")
        with self._lock:
            self._code[topology_id] = code

    def load(self, topology_id: str, conf: dict[str, Any]) -> StormTopology:
        with self._lock:
            try:
                return self._code[topology_id]
            except KeyError:
                raise TopologyLoadError(f"no code stored for topology {topology_id}", topology=topology_id) from None

    def delete(self, topology_id: str) -> None:
        with self._lock:
            self._code.pop(topology_id, None)

    def has(self, topology_id: str) -> bool:
        with self._lock:
            return topology_id in self._code


class DistCodeStore:
    """A worker's code store: the topology is built from the unpacked package by ``MODULE:FUNCTION``."""

    def __init__(self, topology_dir: Path) -> None:
        self.dir = topology_dir

    def put(self, topology_id: str, code: Any) -> None:
        """Workers never store code."""
        raise TopologyLoadError("a worker's code store is read-only", topology=topology_id)

    def load(self, topology_id: str, conf: dict[str, Any]) -> StormTopology:
        """Import the package's entry point and build the topology with ``conf``."""
        meta = read_json(self.dir / META)
        if not isinstance(meta, Mapping) or not isinstance(meta.get("entry"), str):
            raise TopologyLoadError(f"no code description for {topology_id} in {self.dir}", topology=topology_id)
        return load_topology(str(meta["entry"]), conf, path=self.dir / CODE)

    def delete(self, topology_id: str) -> None:
        """Workers never delete code."""

    def has(self, topology_id: str) -> bool:
        """Whether the code is unpacked."""
        return (self.dir / META).is_file()
