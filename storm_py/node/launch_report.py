"""What a supervisor reports, in its heartbeat, of the workers it could not start, and nimbus's reading of it.

A worker that cannot start (its code cannot be downloaded from any nimbus, its environment cannot be built, its
process cannot be spawned) leaves its topology without that worker; the supervisor keeps retrying with backoff.
So that the user sees why, not only a topology with missing workers, the supervisor's heartbeat carries
``{LAUNCH_FAILED_META + topology id: the last error}`` and the topology page lists it per supervisor.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

#: a supervisor heartbeat's ``scheduler_meta`` key prefix: ``launch.failed.<topology id>``
LAUNCH_FAILED_META = "launch.failed."


def launch_failures(topology_id: str,
                    supervisors: Iterable[tuple[str, Mapping[str, str]]]) -> list[dict[str, str]]:
    """``{"host", "error"}`` of each supervisor (``(hostname, scheduler_meta)`` pairs) whose last launch of a worker
    of the topology failed, sorted by host; empty when every supervisor started its workers."""
    key = LAUNCH_FAILED_META + topology_id
    return sorted(({"host": host, "error": meta[key]} for host, meta in supervisors if key in meta),
                  key=lambda e: (e["host"], e["error"]))
