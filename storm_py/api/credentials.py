"""This module owns the credentials listener interface (Storm's ``ICredentialsListener``).

A spout or bolt that defines ``set_credentials(creds)`` is a listener: when the topology's credentials change
(``storm-py upload-credentials TOPOLOGY key value ...``), every worker calls it on each of its listening tasks, on
the worker's loop thread between tuples, with the whole new map (string keys to string values).  A worker that
starts while the topology has credentials calls it once before the task's first tuple, so a restarted worker's
tasks see them too.  Subclassing :class:`CredentialsListener` is optional: defining the method is enough.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class CredentialsListener(Protocol):
    """Storm's ``ICredentialsListener``: ``set_credentials`` receives the topology's new credentials."""

    def set_credentials(self, creds: dict[str, str]) -> None:
        """Called with the topology's credentials when they change (see the module docstring)."""
        ...
