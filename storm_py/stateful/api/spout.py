"""This module owns :class:`StatefulSpout`, the base of spouts whose position lives in managed state."""

from __future__ import annotations

from storm_py.api.components import Spout
from storm_py.stateful.state.key_value import KeyValueState


class StatefulSpout(Spout):
    """A spout whose position (offsets, a cursor) lives in its state, checkpointed with the bolts' state.

    ``init_state`` is called after ``open`` and before the first ``next_tuple`` with the last committed state,
    and again after each recovery with the restored state; under ``exactly_once`` the spout replays from the
    restored position instead of from ``fail``.
    """

    def init_state(self, state: KeyValueState) -> None:
        """Receive the state (the last committed one)."""

    def pre_prepare(self, txid: int) -> None:
        """The state is about to be prepared for checkpoint ``txid``: put the current position in it."""

    def pre_commit(self, txid: int) -> None:
        """The state is about to be committed as checkpoint ``txid``."""

    def pre_rollback(self) -> None:
        """The state is about to be rolled back to the last committed checkpoint."""
