"""This module owns the ids of tuple trees: a worker's source of random 62-bit root and edge ids, and the
acker each root belongs to.

Storm draws a tree's root id and every edge id from a ``java.util.Random`` per executor; an acker sees a tree
complete when the XOR of its edge ids comes back to zero, so ids must look independent of one another, and
nothing more (they guard against mistakes, not against an adversary: frames from other workers are
authenticated).  :class:`IdSource` is SplitMix64 narrowed to 62 bits: a Weyl sequence (a counter stepping by an
odd constant modulo ``2**62``) through a mixing function of xor-shifts and odd multiplications.  The mix is a
bijection, so a source repeats no id within ``2**62`` draws, and it is not linear over XOR, so no fixed set of
draws XORs to zero whatever the seed (a xorshift generator alone would have such sets).

Compiled, the arithmetic runs on machine integers (``i64``, masked to 62 bits after every step, so the interpreted
and the compiled code compute the same values) and a draw costs a few dozen instructions where
``random.getrandbits(62)`` costs about 600; interpreted, that arithmetic on int objects is slower than the one C
call, so the pure build draws through ``getrandbits``.  Ids stay below ``2**62``, where compiled code holds them
as machine integers (see ``ID_BITS``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from importlib.machinery import EXTENSION_SUFFIXES
from typing import Final

from mypy_extensions import i64

#: Bits of the root and edge ids a worker makes.  Storm draws 64; 62 keep every id and every XOR of ids below
#: 2**62, which compiled code holds as a machine integer instead of a Python int object (the acker takes any
#: 64-bit id from elsewhere).  A false completion needs a 2**-62 coincidence instead of 2**-64.
ID_BITS: Final = 62
MASK: Final = (1 << ID_BITS) - 1
#: this module runs compiled (then :meth:`IdSource.next` mixes on machine integers)
COMPILED: Final = __file__.endswith(tuple(EXTENSION_SUFFIXES))

#: SplitMix64's constants taken modulo 2**62 (all odd: the step visits every state, the products are bijections)
_GAMMA: Final = 0x278DDE6E5FD29F05
_MUL1: Final = 0x3F58476D1CE4E5B9
_MUL2: Final = 0x14D049BB133111EB


def mix62(s: i64) -> i64:
    """SplitMix64's output function on 62 bits: a bijection of ``[0, 2**62)``, far from linear over XOR."""
    z: i64 = ((s ^ (s >> 30)) * _MUL1) & MASK
    z = ((z ^ (z >> 27)) * _MUL2) & MASK
    return z ^ (z >> 31)


class IdSource:
    """Random 62-bit ids from ``seed``; root ids picked so that an acker of this worker owns the tree.

    The acker of a root is ``ackers[root mod n]`` in every worker (``n`` acker tasks), so choosing the residue
    keeps a spout's init and the acker's answer inside its worker (Heron keeps the XOR ledger next to the spout
    for the same reason); only acks from bolts in other workers cross the wire.  ``local`` are the positions of
    this worker's ackers in the sorted acker list; roots take them in turn.
    """

    __slots__ = ("_draw", "_local", "_n", "_state", "_turn")

    def __init__(self, seed: int, n_ackers: int = 1, local: list[int] | None = None) -> None:
        self._state: i64 = seed & MASK
        self._draw: Callable[[int], int] = random.Random(seed).getrandbits
        self._n = n_ackers if n_ackers > 1 and local else 1
        self._local: list[int] = list(local or [0])
        self._turn = 0

    def next(self) -> int:
        """A new id below ``2**62`` (an edge id)."""
        if not COMPILED:
            return self._draw(ID_BITS)
        s: i64 = (self._state + _GAMMA) & MASK
        self._state = s
        return mix62(s)

    def root(self) -> int:
        """A new root id whose acker runs in this worker when one does (``root mod n`` is a local position)."""
        n = self._n
        if n == 1:
            return self.next()
        local = self._local
        turn = self._turn + 1
        if turn >= len(local):
            turn = 0
        self._turn = turn
        return (self.next() // n) * n + local[turn]


def acker_chooser(ackers: list[int]) -> Callable[[int], int]:
    """The acker task of a root id: ``ackers[root mod n]`` (Storm's fields grouping on the root id)."""
    if not ackers:
        return lambda root: -1
    if len(ackers) == 1:
        only = ackers[0]
        return lambda root: only
    ordered = sorted(ackers)
    n = len(ordered)
    return lambda root: ordered[root % n]


def worker_id_source(seed: int, ackers: tuple[int, ...], worker_tasks: set[int]) -> IdSource:
    """The worker's :class:`IdSource`: its roots are owned by the worker's own ackers when it runs any
    (``ackers``: every acker task, sorted)."""
    return IdSource(seed, len(ackers), [i for i, t in enumerate(ackers) if t in worker_tasks])
