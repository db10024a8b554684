"""A stateful spout's task that starts after its prepared checkpoint was decided committed (a worker killed, a
topology killed and submitted again) commits that checkpoint before restoring, as the bolts do: its position is
the decided one, so nothing the bolts committed is read twice."""

from __future__ import annotations

from typing import Any

from storm_py import KeyValueState, StatefulSpout
from storm_py.stateful.exactly_once.coordinator import RESTARTING, Published
from storm_py.stateful.managed_spout import StatefulSpoutExecutor
from storm_py.stateful.state.key_value import MemoryStore


class Positions(StatefulSpout):
    def open(self, conf, context, collector):
        pass

    def init_state(self, state):
        self.pos = state.get("pos", 0)

    def pre_prepare(self, txid):
        pass

    def next_tuple(self):
        pass

    def declare_output_fields(self, declarer):
        declarer.declare(["n"])


class Sent:
    def __init__(self) -> None:
        self.sent: list[list[Any]] = []

    def emit(self, values, msg_id=None, stream="default"):
        self.sent.append(list(values))
        return []


def restarted(prepared: int, restore: int) -> tuple[Positions, KeyValueState]:
    store = MemoryStore()
    state = KeyValueState(store)
    state.put("pos", 100)
    state.prepare_commit(4)
    state.commit(4)
    state.put("pos", 160)
    state.prepare_commit(prepared)  # durable: the old task prepared it and died
    spout = Positions()
    ex = StatefulSpoutExecutor(spout)
    ex.state = KeyValueState(store)  # the new task's view of the same store
    ex._collector = Sent()  # type: ignore[assignment]
    ex._exactly_once_step(Published(restore, RESTARTING, 1, restore))
    return spout, ex.state


def test_a_fresh_task_commits_its_prepared_checkpoint_when_it_was_decided():
    spout, state = restarted(prepared=5, restore=5)
    assert spout.pos == 160 and state.committed_txid() == 5


def test_a_fresh_task_rolls_back_a_prepared_checkpoint_that_was_not_decided():
    spout, state = restarted(prepared=5, restore=4)
    assert spout.pos == 100 and state.committed_txid() == 4
