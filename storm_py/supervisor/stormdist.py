"""This module owns the supervisor's copies of topology code (``stormdist``): download, verify, unpack, clean up.

:class:`StormDist` downloads a topology's blobs from a nimbus that holds them, checks the digest and unpacks
the package into ``stormdist/<topology-id>/code`` (no user code is imported here); a worker process loads it
from there through :class:`~storm_py.packaging.code_store.DistCodeStore`.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path

from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.errors import StormPyError
from storm_py.nimbus.blobstore import code_key, jar_key, parse_code_description, verify_package
from storm_py.node.local_state import write_json
from storm_py.packaging.code_store import CODE, META
from storm_py.packaging.package import UnpackLimits, unpack

log = logging.getLogger(__name__)

JAR = "stormjar.zip"

Fetch = Callable[[str, str], bytes]


class StormDist:
    """The topologies' code on this supervisor, under ``root/<topology-id>/``."""

    def __init__(self, root: Path, state: ClusterState, fetch: Fetch, leader: Callable[[], str | None],
                 limits: UnpackLimits | None = None) -> None:
        self.root = root
        self.limits = limits  # how far a package may unpack (default: the storm.package.max.* defaults)
        self.state = state
        self.fetch = fetch
        self.leader = leader

    def path(self, topology_id: str) -> Path:
        """A topology's directory."""
        return self.root / topology_id

    def ready(self, topology_id: str) -> bool:
        """Whether the topology's code is downloaded and unpacked."""
        d = self.path(topology_id)
        return (d / META).is_file() and (d / CODE).is_dir()

    def ensure(self, topology_id: str) -> Path:
        """Download and unpack the topology's code unless it is here already; return its directory.

        Raises:
            StormPyError: no nimbus holding the code could serve it, or what it served is corrupted.
        """
        d = self.path(topology_id)
        if self.ready(topology_id):
            return d
        meta_bytes = self._download(code_key(topology_id))
        meta = parse_code_description(meta_bytes, code_key(topology_id))
        data = self._download(jar_key(topology_id))
        verify_package(data, meta, jar_key(topology_id))
        d.mkdir(parents=True, exist_ok=True)
        (d / JAR).write_bytes(data)
        unpack(data, d / CODE, self.limits)
        write_json(d / META, meta)
        log.info("downloaded the code of %s (%d bytes, entry %s)", topology_id, len(data), meta["entry"])
        return d

    def _download(self, key: str) -> bytes:
        holders = list(self.state.blob_holders(key))
        leader = self.leader()
        if leader in holders:
            holders.remove(leader)
            holders.insert(0, leader)
        errors = []
        for holder in holders:
            try:
                return self.fetch(holder, key)
            except StormPyError as err:
                errors.append(f"{holder}: {err.message}")
        detail = "; ".join(errors) if errors else "no nimbus holds it"
        raise StormPyError(f"cannot download blob {key}: {detail}", key=key)

    def cleanup(self, keep: Iterable[str]) -> None:
        """Delete the code of topologies not in ``keep``."""
        wanted = set(keep)
        if not self.root.is_dir():
            return
        for d in self.root.iterdir():
            if d.is_dir() and d.name not in wanted and not d.name.startswith("."):
                log.info("deleting the code of %s", d.name)
                shutil.rmtree(d, ignore_errors=True)
