"""Where nimbus keeps each topology's code and how a worker turns it back into a topology.

The in-memory store holds topology objects (LocalCluster: components live in the calling process); the
distributed cluster stores wheels in a blob store and loads ``MODULE:FUNCTION`` from them.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from storm_py.api.topology import StormTopology
from storm_py.errors import TopologyLoadError


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
