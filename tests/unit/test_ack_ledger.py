"""The XOR ledger on its own (unit tier): Storm's acker protocol cases, rotation, and a property test over
random tuple trees."""

from __future__ import annotations

import gc
import random
from collections import defaultdict
from importlib.machinery import EXTENSION_SUFFIXES

from hypothesis import given, settings
from hypothesis import strategies as st

from storm_py.runtime import acker as acker_module
from storm_py.runtime.acker import ACK, ACKED, FAIL, FAILED, INIT, RESET, RESET_TIMEOUT, AckerBolt, AckLedger
from storm_py.testing import test_tuple


def run(ledger: AckLedger, rows, now=0.0):
    out = defaultdict(list)
    ledger.process(rows, now, out)
    return [(task, row[0], row[1]) for task, decided in out.items() for row in decided]


def test_init_then_acks_complete():
    led = AckLedger()
    assert run(led, [(INIT, 7, 0b1010, 3)]) == []
    assert run(led, [(ACK, 7, 0b1000)]) == []
    assert run(led, [(ACK, 7, 0b0010)]) == [(3, ACKED, 7)]
    assert 7 not in led


def test_compiled_an_open_trees_entry_is_outside_the_garbage_collector():
    """Under a stateful bolt a checkpoint interval of trees stays open: no collection may walk their entries."""
    led = AckLedger()
    run(led, [(INIT, 7, 0b1010, 3)])
    compiled = acker_module.__file__.endswith(tuple(EXTENSION_SUFFIXES))
    assert [gc.is_tracked(e) for e in led._entries.values()] == [not compiled]


def test_ack_before_init_completes_when_init_arrives():
    """Storm 2.x: an ack may overtake the init; completion waits for the spout task."""
    led = AckLedger()
    assert run(led, [(ACK, 9, 5)]) == []
    assert run(led, [(INIT, 9, 5, 4)]) == [(4, ACKED, 9)]


def test_fail_before_init_fails_when_init_arrives():
    """A fail that arrives before the spout's init is kept and fails the root once the init comes."""
    led = AckLedger()
    assert run(led, [(FAIL, 11)]) == []
    assert run(led, [(INIT, 11, 6, 2)]) == [(2, FAILED, 11)]


def test_zero_init_acks_at_once():
    """A spout tuple with no targets: init value 0 completes immediately."""
    assert run(AckLedger(), [(INIT, 1, 0, 5)]) == [(5, ACKED, 1)]


def test_reset_timeout_refreshes_and_notifies():
    led = AckLedger()
    run(led, [(INIT, 1, 3, 5)])
    led.rotate()
    led.rotate()
    assert run(led, [(RESET, 1)]) == [(5, RESET_TIMEOUT, 1)]
    led.rotate()
    led.rotate()
    assert 1 in led  # reset moved it to the newest bucket
    led.rotate()
    assert 1 not in led


def test_rotation_drops_after_three_ticks_silently():
    led = AckLedger()
    run(led, [(INIT, 1, 3, 5)])
    assert led.rotate() == 0
    assert led.rotate() == 0
    assert led.rotate() == 1
    assert run(led, [(ACK, 1, 3)]) == []  # a late ack re-creates an entry with no spout task: nothing happens


def test_each_rotation_expires_only_the_oldest_bucket():
    led = AckLedger()
    run(led, [(INIT, 1, 3, 5)])
    led.rotate()
    run(led, [(INIT, 2, 3, 5)])
    assert led.rotate() == 0
    assert led.rotate() == 1  # root 1, three rotations old
    assert 1 not in led and 2 in led
    assert led.rotate() == 1  # root 2 on its third rotation
    assert len(led) == 0


def test_an_ack_does_not_refresh_the_expiry():
    led = AckLedger()
    run(led, [(INIT, 1, 0b11, 5)])
    led.rotate()
    led.rotate()
    assert run(led, [(ACK, 1, 0b01)]) == []  # a partial ack: root 1 keeps its age (Storm 2.x)
    assert led.rotate() == 1
    assert 1 not in led


def test_a_fail_before_the_init_survives_rotations_until_its_time():
    led = AckLedger()
    run(led, [(FAIL, 3)])
    led.rotate()
    led.rotate()
    assert run(led, [(INIT, 3, 7, 9)]) == [(9, FAILED, 3)]


def test_acker_bolt_accepts_tuples_on_storm_streams():
    bolt = AckerBolt()
    out = []
    bolt.bind(lambda task, row: out.append((task, row[0])), lambda: 0.0)
    bolt.execute(test_tuple([5, 12, 3], component="spout", stream="__ack_init"))
    bolt.execute(test_tuple([5, 12], component="bolt", stream="__ack_ack"))
    assert out == [(3, ACKED)]


def test_acker_bolt_rotates_its_ledger_on_tick_tuples():
    """Three ticks expire a pending tree silently (the spout times it out itself); fewer keep it."""
    bolt = AckerBolt()
    out = []
    bolt.bind(lambda task, row: out.append((task, row[0])), lambda: 0.0)
    tick = test_tuple([1], component="__system", stream="__tick")
    bolt.execute(test_tuple([5, 12, 3], component="spout", stream="__ack_init"))
    bolt.execute(test_tuple([6, 12, 3], component="spout", stream="__ack_init"))
    bolt.execute(tick)
    bolt.execute(tick)
    assert 5 in bolt.ledger and 6 in bolt.ledger
    bolt.execute(test_tuple([6, 12], component="bolt", stream="__ack_ack"))
    assert out == [(3, ACKED)]  # still pending after two ticks: completes
    bolt.execute(tick)
    assert 5 not in bolt.ledger and len(bolt.ledger) == 0
    assert out == [(3, ACKED)]  # expiry reports nothing


@st.composite
def trees(draw):
    """A random tuple tree: nodes with random fan-out and extra anchors to earlier nodes of the same root."""
    n_roots = draw(st.integers(1, 4))
    nodes = []  # (node id, parents)
    for r in range(n_roots):
        nodes.append((len(nodes), [("root", r)]))
    for _ in range(draw(st.integers(0, 25))):
        k = draw(st.integers(1, min(3, len(nodes))))
        parents = draw(st.lists(st.integers(0, len(nodes) - 1), min_size=k, max_size=k))
        nodes.append((len(nodes), [("node", p) for p in parents]))
    fail_node = draw(st.one_of(st.none(), st.integers(0, len(nodes) - 1)))
    drop_node = draw(st.one_of(st.none(), st.integers(0, len(nodes) - 1)))
    seed = draw(st.integers(0, 2**32 - 1))
    return n_roots, nodes, fail_node, drop_node, seed


def roots_of(nodes, i, memo):
    if i in memo:
        return memo[i]
    out = set()
    for kind, p in nodes[i][1]:
        out |= {p} if kind == "root" else roots_of(nodes, p, memo)
    memo[i] = out
    return out


@settings(max_examples=300, deadline=None)
@given(trees())
def test_random_trees_complete_exactly_when_all_descendants_acked(case):
    """Builds the XOR messages a real run would send (random 64-bit edges, multi-anchoring), delivers them in a
    random order with random delays between deliveries, and checks: a root is acked exactly when every node
    under it was acked, failed when one was failed, and neither when one was never acked."""
    n_roots, nodes, fail_node, drop_node, seed = case
    rng = random.Random(seed)
    edge = lambda: rng.getrandbits(64)  # noqa: E731
    root_ids = [rng.getrandbits(64) | 1 for _ in range(n_roots)]
    ids: dict[int, dict[int, int]] = {}  # node -> {root id: edge xor}
    ack_val: dict[int, int] = {i: 0 for i, _ in nodes}
    init = dict.fromkeys(root_ids, 0)
    for i, parents in nodes:
        mine: dict[int, int] = {}
        for kind, p in parents:
            e = edge()
            if kind == "root":
                init[root_ids[p]] ^= e
                mine[root_ids[p]] = mine.get(root_ids[p], 0) ^ e
            else:
                ack_val[p] ^= e
                for r in ids[p]:
                    mine[r] = mine.get(r, 0) ^ e
        ids[i] = mine
    messages = [(INIT, r, v, 7) for r, v in init.items()]
    for i, _ in nodes:
        if i == drop_node:
            continue
        if i == fail_node:
            messages.extend((FAIL, r) for r in ids[i])
        else:
            messages.extend((ACK, r, v ^ ack_val[i]) for r, v in ids[i].items())
    rng.shuffle(messages)
    led = AckLedger()
    out = []
    now = 0.0
    for m in messages:
        now += rng.random()
        decided = defaultdict(list)
        led.process([m], now, decided)
        out.extend(row[:2] for rows in decided.values() for row in rows)
    memo: dict[int, set[int]] = {}
    touched_by = lambda n: roots_of(nodes, n, memo) if n is not None else set()  # noqa: E731
    for r_index, root in enumerate(root_ids):
        decided = [code for code, rid in out if rid == root]
        assert len(decided) <= 1
        if r_index in touched_by(fail_node) and fail_node != drop_node:
            assert decided == [FAILED]
        elif r_index in touched_by(drop_node):
            assert decided in ([], [FAILED])
            if r_index not in touched_by(fail_node):
                assert decided == []
        else:
            assert decided == [ACKED]



def test_a_fail_puts_its_entry_back_so_its_expiry_starts_over():
    led = AckLedger()
    run(led, [(ACK, 4, 0b1)])  # an ack before the init creates the entry
    led.rotate()
    led.rotate()
    assert run(led, [(FAIL, 4)]) == []  # still no init: nothing decided, but the entry is put again
    assert led.rotate() == 0  # the ack alone would have expired here
    led.rotate()
    assert run(led, [(INIT, 4, 0b11, 2)]) == [(2, FAILED, 4)]
    assert led.rotate() == 0 and 4 not in led
