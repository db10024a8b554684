"""This module owns :class:`LocalDRPC`, the in-process DRPC server of ``LocalCluster`` tests, and the registry
through which a topology's ``DRPCSpout`` and ``ReturnResults`` find it.

Components are copied when a topology is submitted, so they carry the LocalDRPC's service id (a string), not
the object; :func:`local_service` looks the id up, as Storm's ``ServiceRegistry``.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping
from typing import Any

from storm_py.config import defaults
from storm_py.drpc.errors import SERVER_SHUTDOWN, DRPCExecutionException
from storm_py.drpc.service import DRPCService

_registry: dict[str, DRPCService] = {}
_registry_lock = threading.Lock()


def local_service(service_id: str) -> DRPCService:
    """The service of the live :class:`LocalDRPC` with this id; a clear error once it was shut down."""
    with _registry_lock:
        service = _registry.get(service_id)
    if service is None:
        raise DRPCExecutionException(f"no LocalDRPC {service_id!r} in this process (was it shut down?)",
                                     SERVER_SHUTDOWN)
    return service


class LocalDRPC:
    """Storm's ``LocalDRPC``: ``execute(function, args)`` blocks until a topology in this process answers.

    ``drpc.request.timeout.secs`` and ``drpc.max.pending.requests`` come from ``conf`` (else their defaults).
    """

    def __init__(self, conf: Mapping[str, Any] | None = None) -> None:
        c = {**defaults(), **(conf or {})}
        self.service = DRPCService(float(c["drpc.request.timeout.secs"]), int(c["drpc.max.pending.requests"]))
        self.service_id = f"local-drpc-{uuid.uuid4().hex}"
        with _registry_lock:
            _registry[self.service_id] = self.service

    def get_service_id(self) -> str:
        """The id topologies find this LocalDRPC by."""
        return self.service_id

    def execute(self, function: str, args: str) -> str:
        """The result of ``function(args)``; :class:`DRPCExecutionException` when it fails or times out."""
        return self.service.execute(function, args)

    def shutdown(self) -> None:
        """Fail waiting requests with a shutdown error and unregister."""
        with _registry_lock:
            _registry.pop(self.service_id, None)
        self.service.close()

    def __enter__(self) -> LocalDRPC:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
