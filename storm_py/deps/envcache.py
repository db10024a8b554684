"""This module owns the decisions of a supervisor's environment cache: which virtualenv a topology needs and
which environments, unused for ``supervisor.env.cleanup.secs``, are removed.

A requirement set is the set of wheel files a topology's wheelhouse holds; its id is a digest of their names and
contents, so topologies resolving to the same wheels share one environment.  Pure: inputs and ``now`` in,
decisions out; :mod:`storm_py.deps.venv` does the building and removing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

#: The length of an environment id (hex digits of a SHA-256).
ID_LENGTH = 24
#: A supervisor's heartbeat carries ``{PENDING_META + topology id: what its worker waits for}`` in its
#: ``scheduler_meta`` while an environment is built; the topology's page shows them as its ``environment``.
PENDING_META = "env.pending."
#: ... and ``{STATE_META + topology id: "ready: ..." | "failed: ..."}`` once its environment is built or failed.
STATE_META = "env.state."
#: The states of a topology's environment on one supervisor, as its page shows them.
ENV_STATES = ("building", "ready", "failed")


def set_id(wheels: Mapping[str, str]) -> str:
    """The id of a requirement set, given ``{wheel file name: sha256 of its bytes}`` (order does not matter)."""
    h = hashlib.sha256()
    for name in sorted(wheels):
        h.update(f"{name}\0{wheels[name]}\n".encode())
    return h.hexdigest()[:ID_LENGTH]


@dataclass
class EnvLedger:
    """Tracks since when each present environment has had no topology, and says which to remove.

    Args:
        cleanup_secs: how long an environment stays after its last topology is gone.
    """

    cleanup_secs: float
    unused_since: dict[str, float] = field(default_factory=dict)

    def expired(self, needed: Collection[str], present: Collection[str], now: float) -> list[str]:
        """The environments of ``present`` to remove now, given the ids ``needed`` by live topologies.

        An environment needed again before its time is up is kept; one present but never seen needed (left by an
        earlier run of the supervisor) starts its clock now.
        """
        wanted = set(needed)
        out: list[str] = []
        for env in sorted(present):
            if env in wanted:
                self.unused_since.pop(env, None)
                continue
            since = self.unused_since.setdefault(env, now)
            if now - since >= self.cleanup_secs:
                out.append(env)
        for gone in [e for e in self.unused_since if e not in present or e in out]:
            del self.unused_since[gone]
        return out


@dataclass
class BuildRecord:
    """What a supervisor knows of one environment build: the error of a failed one (never retried, so a broken
    requirement set is an error on its topologies, not a crash loop) and which topologies were told."""

    error: str | None = None
    reported: set[str] = field(default_factory=set)

    def to_report(self, topology_id: str) -> str | None:
        """The error to report on ``topology_id``, once per topology; None when built or already reported."""
        if self.error is None or topology_id in self.reported:
            return None
        self.reported.add(topology_id)
        return self.error


def environment_status(topology_id: str, supervisors: Iterable[tuple[str, Mapping[str, str]]]) -> list[str]:
    """What the topology's workers wait for, per supervisor (``(hostname, scheduler_meta)`` pairs); empty when
    no supervisor is building an environment for it."""
    key = PENDING_META + topology_id
    return sorted(f"{host}: {meta[key]}" for host, meta in supervisors if key in meta)


def environment_states(topology_id: str,
                       supervisors: Iterable[tuple[str, Mapping[str, str]]]) -> list[dict[str, str]]:
    """The topology's environment per supervisor (``(hostname, scheduler_meta)`` pairs) that has one:
    ``{"host", "state": "building" | "ready" | "failed", "detail"}`` (what is built, or the failure's text),
    sorted by host; empty for a topology without a wheelhouse."""
    pending, done = PENDING_META + topology_id, STATE_META + topology_id
    out = []
    for host, meta in supervisors:
        if pending in meta:
            out.append({"host": host, "state": "building", "detail": meta[pending]})
        elif done in meta:
            state, _, detail = meta[done].partition(": ")
            out.append({"host": host, "state": state, "detail": detail})
    return sorted(out, key=lambda e: (e["host"], e["state"], e["detail"]))
