"""This module owns the base class users extend for a windowed bolt with managed state:
:class:`BaseStatefulWindowedBolt` (Storm's ``BaseStatefulWindowedBolt``) and its chainable state settings."""

from __future__ import annotations

from typing import Final, Self

from storm_py.stateful.state.key_value import KeyValueState
from storm_py.stateful.windowed_runner import MESSAGE_ID_FIELD, StatefulWindowedBolt
from storm_py.windowing.bolt import BaseWindowedBolt

#: how many window events one saved partition holds unless ``with_max_events_in_memory`` says otherwise
DEFAULT_MAX_EVENTS_IN_MEMORY: Final = 1_000_000


class BaseStatefulWindowedBolt(BaseWindowedBolt):
    """A windowed bolt whose state the topology checkpoints: implement ``execute(window)`` and ``init_state``.

    Without :meth:`with_persistence` (Storm's ``StatefulWindowedBoltExecutor``) the window lives in memory and
    the checkpoint saves, per input task and stream, the last message id evaluated and expired; the input's
    message id field (:meth:`with_message_id_field`, required) lets a replay skip what was evaluated already.
    With it (Storm's ``PersistentWindowedBoltExecutor``) the window's tuples are saved with the state in
    partitions of :meth:`with_max_events_in_memory` events, inputs are acked once a checkpoint holding them
    commits, and emits are not anchored (the checkpoint, not the tuple tree, protects them).
    """

    def init_state(self, state: KeyValueState) -> None:
        """Receive the state (the last committed one), before the first window and after each recovery."""

    def pre_prepare(self, txid: int) -> None:
        """The state is about to be prepared for checkpoint ``txid``."""

    def pre_commit(self, txid: int) -> None:
        """The state is about to be committed as checkpoint ``txid``."""

    def pre_rollback(self) -> None:
        """The state is about to be rolled back to the last committed checkpoint."""

    def with_persistence(self) -> Self:
        """Save the window's tuples with the state (they survive a restart; inputs are acked at commit)."""
        self.__dict__["_persistent"] = True
        return self

    def with_max_events_in_memory(self, n: int) -> Self:
        """With persistence: the window is saved in partitions of at most ``n`` events."""
        if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
            raise ValueError(f"max events in memory must be a positive int, got {n!r}")
        self.__dict__["_max_events_in_memory"] = n
        return self

    def with_message_id_field(self, name: str) -> Self:
        """The input field holding each tuple's message id (an int increasing per source task and stream)."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"message id field must be a non-empty string, got {name!r}")
        self._window_conf()[MESSAGE_ID_FIELD] = name
        return self

    def is_persistent(self) -> bool:
        """Whether :meth:`with_persistence` was called."""
        return bool(self.__dict__.get("_persistent", False))

    def max_events_in_memory(self) -> int:
        """The size of a saved window partition."""
        n: int = self.__dict__.get("_max_events_in_memory", DEFAULT_MAX_EVENTS_IN_MEMORY)
        return n

    def message_id_field(self) -> str | None:
        """The message id field, or ``None`` when not set."""
        name: str | None = self._window_conf().get(MESSAGE_ID_FIELD)
        return name

    def topology_bolt(self) -> StatefulWindowedBolt:  # type: ignore[override]
        """What runs in the topology: this bolt inside its stateful window executor."""
        return StatefulWindowedBolt(self)
