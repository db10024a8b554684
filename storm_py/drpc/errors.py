"""This module owns the errors of DRPC: what a failed, timed-out or refused request raises on the client side.

:class:`DRPCExecutionException` carries Storm's ``DRPCExceptionType`` as :attr:`~DRPCExecutionException.type`
(``failed_request``, ``server_timeout``, ``server_shutdown``) plus this project's refusals (``busy``,
``unauthorized``, ``forbidden``, ``too_large``, ``bad_request``, ``unreachable``); each maps to one HTTP status on
the wire.
"""

from __future__ import annotations

from typing import Any

from storm_py.errors import StormPyError

FAILED_REQUEST = "failed_request"
SERVER_TIMEOUT = "server_timeout"
SERVER_SHUTDOWN = "server_shutdown"
BUSY = "busy"
UNAUTHORIZED = "unauthorized"
FORBIDDEN = "forbidden"
TOO_LARGE = "too_large"
BAD_REQUEST = "bad_request"
UNREACHABLE = "unreachable"

#: The HTTP status of each type (Storm's DRPC HTTP endpoint: 400 failed, 504 timed out, 503 shutting down).
STATUS_BY_TYPE = {
    FAILED_REQUEST: 400,
    SERVER_TIMEOUT: 504,
    SERVER_SHUTDOWN: 503,
    BUSY: 503,
    UNAUTHORIZED: 401,
    FORBIDDEN: 403,
    TOO_LARGE: 413,
    BAD_REQUEST: 400,
    UNREACHABLE: 502,
}


class DRPCExecutionException(StormPyError):
    """A DRPC request did not produce a result: it failed, timed out, or the server refused it.

    ``type`` says which (see the module docstring); the message names the function and the reason.
    """

    code = "drpc_execution_exception"

    def __init__(self, message: str, type: str = FAILED_REQUEST, **fields: Any) -> None:
        super().__init__(message, **fields)
        self.type = type

    @property
    def status(self) -> int:
        """The HTTP status this error is answered with."""
        return STATUS_BY_TYPE.get(self.type, 500)
