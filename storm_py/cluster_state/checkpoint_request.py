"""This module owns the record of a checkpoint nimbus asks for before it rescales a topology's tasks: nimbus writes
it in the rebalance's options of the storm base (``topology_action_options["checkpoint"]``), each worker reads it
with the storm base it follows anyway, and the checkpoint spout reports the request it served in its heartbeat
gauges (:data:`SERVED_GAUGE`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from storm_py.cluster_state.models import REBALANCING, StormBase

#: the key of the request in a rebalance's ``topology_action_options``
OPTIONS_KEY: Final = "checkpoint"
#: the checkpoint spout's heartbeat gauge: the id of the last request whose checkpoint (begun after the request
#: reached it) committed
SERVED_GAUGE: Final = "checkpoint.request"


@dataclass(frozen=True)
class CheckpointRequest:
    """A checkpoint asked for at ``asked_at`` (wall seconds), waited for until ``until`` (wall seconds); ``id``
    names it (a positive integer a float gauge carries exactly), ``txid`` is the last committed checkpoint nimbus
    knew of when it asked (-1: none known)."""

    id: int
    asked_at: float
    until: float
    txid: int = -1

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "asked_at": self.asked_at, "until": self.until, "txid": self.txid}

    @classmethod
    def from_json(cls, obj: Any) -> CheckpointRequest:
        """Read a request; anything else than its JSON shape is a ``ValueError`` naming what is wrong."""
        if not isinstance(obj, Mapping):
            raise ValueError(f"a checkpoint request must be an object, got {obj!r}")
        rid, asked, until, txid = obj.get("id"), obj.get("asked_at"), obj.get("until"), obj.get("txid", -1)
        if isinstance(rid, bool) or not isinstance(rid, int) or not 0 < rid < 2**53:
            raise ValueError(f"a checkpoint request's id must be a positive integer below 2**53, got {rid!r}")
        if isinstance(txid, bool) or not isinstance(txid, int):
            raise ValueError(f"a checkpoint request's txid must be an integer, got {txid!r}")
        return cls(rid, _seconds("asked_at", asked), _seconds("until", until), txid)


def _seconds(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"a checkpoint request's {name} must be wall-clock seconds, got {value!r}")
    return float(value)


def pending_request(base: StormBase) -> CheckpointRequest | None:
    """The checkpoint request of a topology held for a rescale (``None``: none, or not rebalancing; a malformed
    record reads as none: the rebalance then goes on from the last committed checkpoint)."""
    opts = base.topology_action_options
    if base.status != REBALANCING or not opts or OPTIONS_KEY not in opts:
        return None
    try:
        return CheckpointRequest.from_json(opts[OPTIONS_KEY])
    except ValueError:
        return None
