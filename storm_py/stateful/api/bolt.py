"""This module owns the base class users extend for a stateful bolt: :class:`BaseStatefulBolt`."""

from __future__ import annotations

from storm_py.api.components import Bolt
from storm_py.stateful.state.key_value import KeyValueState


class BaseStatefulBolt(Bolt):
    """Storm's ``BaseStatefulBolt``: a rich bolt whose state the topology checkpoints.

    ``init_state`` is called after ``prepare`` and before the first tuple with the last committed state, and
    again with the restored state after each recovery; the hooks run right before the state is prepared,
    committed or rolled back.  Inputs the bolt acks are acked upstream only once a checkpoint holding their
    effect is committed; every emit must be anchored.
    """

    def init_state(self, state: KeyValueState) -> None:
        """Receive the state (the last committed one)."""

    def pre_prepare(self, txid: int) -> None:
        """The state is about to be prepared for checkpoint ``txid``."""

    def pre_commit(self, txid: int) -> None:
        """The state is about to be committed as checkpoint ``txid``."""

    def pre_rollback(self) -> None:
        """The state is about to be rolled back to the last committed checkpoint."""
