"""Structured exceptions for storm_py: one tree, each error naming the thing that is wrong.

Storm's user-facing names (``InvalidTopologyException``, ``AlreadyAliveException``, ...) are kept as the public
classes; internal failures derive from :class:`StormPyError` and carry a stable ``code`` plus context fields.
"""

from __future__ import annotations

from typing import Any, TypeVar


class StormPyError(Exception):
    """Base of every storm_py error: a message plus a stable machine-readable ``code`` and context fields."""

    code = "storm_py_error"

    def __init__(self, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly description, used for error replies over HTTP."""
        return {"error": self.code, "message": self.message, **{k: str(v) for k, v in self.fields.items()}}


class ConfigError(StormPyError, ValueError):
    """A configuration key or value is invalid."""

    code = "config_error"


class InvalidTopologyException(StormPyError, ValueError):
    """The topology's structure is invalid (unknown component, stream or field, reserved or duplicate ids)."""

    code = "invalid_topology"


class AlreadyAliveException(StormPyError):
    """A topology with that name is already running."""

    code = "already_alive"


class NotAliveException(StormPyError):
    """No running topology has that name."""

    code = "not_alive"


class FailedException(Exception):
    """Raised by a BasicBolt (or batch bolt) to fail the input tuple (and so its tuple tree)."""


class ReportedFailedException(FailedException):
    """Like :class:`FailedException`, and the error is also reported to the topology's error list."""


class StateError(StormPyError):
    """The cluster state store (ZooKeeper or its in-memory twin) failed or holds unexpected data."""

    code = "state_error"


class StateBackendError(StormPyError):
    """A managed-state backend (``topology.state.provider``) failed or refused an operation."""

    code = "state_backend_error"


class TransportError(StormPyError):
    """Sending or receiving between workers failed."""

    code = "transport_error"


class CodecError(StormPyError):
    """A message could not be encoded or decoded (corrupted frame, wrong version, unsupported value)."""

    code = "codec_error"


class TopologyLoadError(StormPyError):
    """A topology package (wheel or directory) or its ``MODULE:FUNCTION`` could not be loaded."""

    code = "topology_load_error"


class AuthorizationError(StormPyError):
    """A mutating request lacked the configured ``nimbus.auth.token``."""

    code = "unauthorized"


class NotLeaderError(StormPyError):
    """This nimbus is not the leader; the request should go to the leader."""

    code = "not_leader"


class WaitTimeoutError(StormPyError, TimeoutError):
    """A bounded wait for a condition ran out of time."""

    code = "timeout"


class StaleBuildError(StormPyError, ImportError):
    """A compiled module is older than its edited ``.py`` source and would run instead of it."""

    code = "stale_build"


class ShellProcessError(StormPyError):
    """A shell component's process died, hung, broke the multilang protocol or reported an error."""

    code = "shell_process_error"


class DependencyError(StormPyError):
    """A topology's Python requirements could not be resolved, bundled or installed."""

    code = "dependency_error"


_E = TypeVar("_E", bound=BaseException)


def caused_by(error: _E, cause: BaseException) -> _E:
    """``error`` chained to ``cause``, for ``raise caused_by(X(...), exc) from exc``.

    Compiled modules (mypyc) drop the ``from`` of a ``raise``; setting ``__cause__`` keeps the chain in both builds.
    """
    error.__cause__ = cause
    return error
