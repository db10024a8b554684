"""The id source of tuple trees: SplitMix64 on 62 bits, roots owned by the worker's own ackers."""

from __future__ import annotations

import random

import pytest

from storm_py.runtime.ids import ID_BITS, MASK, IdSource, mix62

GAMMA = 0x9E3779B97F4A7C15 & MASK  # SplitMix64's constants modulo 2**62, written out here as the reference
MUL1 = 0xBF58476D1CE4E5B9 & MASK
MUL2 = 0x94D049BB133111EB & MASK


def reference_mix(s: int) -> int:
    """The output function on Python ints, masked after every step (what the compiled i64 code must equal)."""
    z = ((s ^ (s >> 30)) * MUL1) & MASK
    z = ((z ^ (z >> 27)) * MUL2) & MASK
    return z ^ (z >> 31)


def test_the_mix_is_splitmix_on_62_bits() -> None:
    rng = random.Random(7)
    states = [0, 1, MASK, MASK - 1, 1 << 61, (1 << 61) - 1] + [rng.getrandbits(ID_BITS) for _ in range(2000)]
    for s in states:
        assert mix62(s) == reference_mix(s), hex(s)
        assert 0 <= mix62(s) <= MASK


def test_the_mix_is_a_bijection_on_a_sample() -> None:
    # consecutive Weyl states, the way the source visits them: no two give the same id
    s = 123456789
    out = set()
    for _ in range(50_000):
        s = (s + GAMMA) & MASK
        out.add(mix62(s))
    assert len(out) == 50_000


def test_a_source_draws_distinct_balanced_ids_below_2_62() -> None:
    src = IdSource(2024)
    ids = [src.next() for _ in range(100_000)]
    assert len(set(ids)) == len(ids)
    assert all(0 <= i <= MASK for i in ids)
    for bit in range(ID_BITS):  # each bit set in about half of the ids (6 sigma is about 0.0095)
        share = sum((i >> bit) & 1 for i in ids) / len(ids)
        assert 0.49 < share < 0.51, (bit, share)
    # no id is the XOR of its two predecessors (a linear generator would make such triples for every seed)
    assert all(ids[k] != ids[k - 1] ^ ids[k - 2] for k in range(2, len(ids)))


def test_the_same_seed_gives_the_same_ids_and_another_seed_others() -> None:
    a, b, c = IdSource(99), IdSource(99), IdSource(100)
    first = [a.next() for _ in range(100)]
    assert first == [b.next() for _ in range(100)]
    assert not set(first) & {c.next() for _ in range(100)}


def test_roots_without_local_ackers_are_plain_ids() -> None:
    src = IdSource(5, 3, [])
    roots = [src.root() for _ in range(300)]
    assert {r % 3 for r in roots} == {0, 1, 2}


@pytest.mark.parametrize("n, local", [(4, [2]), (5, [0, 3]), (3, [0, 1, 2])])
def test_roots_are_owned_by_the_workers_ackers_in_turn(n: int, local: list[int]) -> None:
    src = IdSource(11, n, local)
    roots = [src.root() for _ in range(30)]
    assert [r % n for r in roots] == [local[(k + 1) % len(local)] for k in range(30)]
    assert len(set(roots)) == len(roots)
