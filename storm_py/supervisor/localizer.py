"""This module owns putting users' blobs into workers' directories (Storm's localizer, for ``topology.blobstore.map``).

For each slot assigned to this supervisor whose topology maps blobs (``{key: {localname: name}}``, the local name
defaulting to the key), the supervisor keeps ``<worker dir>/<localname>`` equal to the newest version of the
blob: it downloads a version when it is first needed (before the worker starts, when possible) and again whenever
``blobstore update`` registers a newer one.  The file is replaced atomically, so a worker reading it sees the old
contents or the new, never a mix.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.errors import StormPyError
from storm_py.nimbus.userblobs import decode, store_key
from storm_py.node.local_state import worker_artifacts_dir
from storm_py.supervisor.logviewer import WORKER_FILES

log = logging.getLogger(__name__)

Fetch = Callable[[str, str], bytes]
#: Names a blob may not take in a worker's directory (the worker's own files).
RESERVED = frozenset({*WORKER_FILES, "worker.yaml", "exit-codes"})


def local_names(mapping: Any) -> dict[str, str]:
    """``{blob key: local name}`` of a ``topology.blobstore.map`` value (entries that make no sense are skipped
    with a warning naming them)."""
    out: dict[str, str] = {}
    if not isinstance(mapping, Mapping):
        return out
    for key, spec in mapping.items():
        name = spec.get("localname", key) if isinstance(spec, Mapping) else key
        name = str(name)
        if not name or name in (".", "..") or "/" in name or "\0" in name or name in RESERVED:
            log.warning("topology.blobstore.map: blob %r cannot be placed as %r", key, name)
            continue
        out[str(key)] = name
    return out


class BlobLocalizer:
    """Keeps the mapped blobs of this supervisor's workers current (see the module docstring)."""

    def __init__(self, conf: Mapping[str, Any], state: ClusterState, fetch: Fetch,
                 leader: Callable[[], str | None]) -> None:
        self.conf = conf
        self.state = state
        self.fetch = fetch
        self.leader = leader
        self._placed: dict[tuple[str, int, str], int] = {}  # (topology, port, key) -> version in place
        self._failing: set[tuple[str, int, str]] = set()  # warned about once, until placed

    def sync(self, slots: Mapping[int, str]) -> int:
        """Bring the blobs of the workers in ``slots`` (port -> topology id) up to date; how many were written."""
        written = 0
        live = set()
        for port, tid in sorted(slots.items()):
            base = self.state.storm_base(tid)
            if base is None:
                continue
            for key, name in local_names(base.topology_conf.get("topology.blobstore.map")).items():
                live.add((tid, port, key))
                try:
                    written += self._place(tid, port, key, name)
                    self._failing.discard((tid, port, key))
                except StormPyError as err:
                    if (tid, port, key) not in self._failing:
                        log.warning("cannot place blob %s for %s on port %d: %s", key, tid, port, err.message)
                    self._failing.add((tid, port, key))
        for gone in [k for k in self._placed if k not in live]:
            del self._placed[gone]
        self._failing &= live
        return written

    def _place(self, tid: str, port: int, key: str, name: str) -> int:
        holders = self.state.blob_holders(store_key(key))
        newest = max(holders.values(), default=0)
        if newest == 0:
            raise StormPyError(f"no blob {key!r} in the blob store", key=key)
        target = worker_artifacts_dir(self.conf, tid, port) / name
        if self._placed.get((tid, port, key)) == newest and target.is_file():
            return 0
        candidates = sorted((h for h, v in holders.items() if v >= newest), key=lambda h: h != self.leader())
        errors = []
        for holder in candidates:
            try:
                stored = self.fetch(holder, store_key(key))
                break
            except StormPyError as err:
                errors.append(f"{holder}: {err.message}")
        else:
            raise StormPyError(f"no nimbus could serve version {newest} ({'; '.join(errors) or 'no holder'})")
        meta, data = decode(stored, key)
        _write_atomically(target, data)
        self._placed[(tid, port, key)] = int(meta.get("version", newest))
        log.info("placed blob %s version %s as %s for %s on port %d", key, meta.get("version"), name, tid, port)
        return 1


def _write_atomically(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".blob-", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise StormPyError(f"cannot write {target}: {err.strerror}") from err
