"""TransactionAttempt: the id of one attempt at processing a transaction, and its compact wire encoding.

Every tuple of a transactional topology carries its attempt as the first value.  A replay of transaction
``N`` gets a new ``attempt_id``, so tuples of an old attempt are told apart from those of the new one.

On the wire the attempt is msgpack extension type :data:`ATTEMPT_EXT_CODE` holding ``[txid, attempt_id]``.
"""

from __future__ import annotations

import logging
import random
from typing import Any

log = logging.getLogger(__name__)

#: where attempt ids come from: a generator seeded once from the system's entropy.  Attempt ids tell attempts
#: apart, they guard nothing, and a system call per batch (``secrets``) would release the GIL thousands of times a
#: second, which keeps every other thread of the process (the clock of ``storm-py local --ttl`` among them) waiting
_ATTEMPT_IDS = random.Random()


def random_attempt_id() -> int:
    """A random 63-bit attempt id, without a system call."""
    return _ATTEMPT_IDS.getrandbits(63)


#: msgpack extension type code of a :class:`TransactionAttempt` (see :mod:`storm_py.protocol.codec`)
ATTEMPT_EXT_CODE = 16


class TransactionAttempt:
    """Transaction ``transaction_id`` (1, 2, ...), attempt ``attempt_id``; equal only when both are equal."""

    __slots__ = ("_hash", "attempt_id", "transaction_id")

    def __init__(self, transaction_id: int, attempt_id: int) -> None:
        self.transaction_id = int(transaction_id)
        self.attempt_id = int(attempt_id)
        self._hash = hash((self.transaction_id, self.attempt_id))

    @classmethod
    def new(cls, transaction_id: int) -> TransactionAttempt:
        """A fresh attempt of ``transaction_id`` with a random attempt id."""
        return cls(transaction_id, random_attempt_id())

    def get_transaction_id(self) -> int:
        """Storm's accessor for :attr:`transaction_id`."""
        return self.transaction_id

    def get_attempt_id(self) -> int:
        """Storm's accessor for :attr:`attempt_id`."""
        return self.attempt_id

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TransactionAttempt):
            return NotImplemented
        return self.transaction_id == other.transaction_id and self.attempt_id == other.attempt_id

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        return f"{self.transaction_id}:{self.attempt_id}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (TransactionAttempt, (self.transaction_id, self.attempt_id))

    def __copy__(self) -> TransactionAttempt:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> TransactionAttempt:
        return self


def _register_codec() -> None:
    """Carry attempts across workers as a msgpack extension type (no-op when the codec is unavailable)."""
    try:
        from storm_py.protocol.codec import pack_value, register_ext, unpack_value
    except ImportError:  # pragma: no cover - the codec ships with storm_py; kept for partial installs
        log.warning("storm_py.protocol.codec is unavailable: TransactionAttempt cannot cross workers")
        return

    def to_bytes(attempt: TransactionAttempt) -> bytes:
        return pack_value([attempt.transaction_id, attempt.attempt_id])

    def from_bytes(data: bytes) -> TransactionAttempt:
        txid, attempt_id = unpack_value(data)
        return TransactionAttempt(txid, attempt_id)

    register_ext(ATTEMPT_EXT_CODE, TransactionAttempt, to_bytes, from_bytes)


_register_codec()
