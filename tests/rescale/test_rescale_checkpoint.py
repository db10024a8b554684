"""The pure cores of the checkpoint a rescale of the tasks takes first: nimbus's decision (wait for the commit of
the checkpoint asked for, bounded, then go on with it or from the last committed one), the request's record and
the checkpoint spout's following of a request, and a held worker's spouts."""

from __future__ import annotations

from typing import Any

import pytest

from storm_py import Spout, TopologyBuilder
from storm_py.clock import SimulatedClock
from storm_py.cluster_state.checkpoint_request import (
    OPTIONS_KEY,
    SERVED_GAUGE,
    CheckpointRequest,
    pending_request,
)
from storm_py.cluster_state.models import ACTIVE, REBALANCING, StormBase
from storm_py.config import defaults
from storm_py.nimbus.rescale_checkpoint import POLL_SECS, CheckpointReading, decide, new_request, reading_of
from storm_py.runtime.system_topology import layout_tasks, system_topology
from storm_py.runtime.worker_runtime import WorkerRuntime
from storm_py.stateful.at_least_once.checkpoint import COMMITTED, INITIAL, CheckpointAsk, CheckpointCoordinator, TxState

REQUEST = CheckpointRequest(id=1_000_000, asked_at=1000.0, until=1030.0, txid=4)


def test_the_rescale_waits_for_the_commit_of_the_checkpoint_it_asked_for() -> None:
    before = CheckpointReading(txid=4, served=None)
    d = decide(REQUEST, due_at=1000.0, reading=before, now=1001.0)
    assert not d.proceed and d.recheck_secs == POLL_SECS
    d = decide(REQUEST, 1000.0, CheckpointReading(txid=5, served=999), 1001.0)  # a commit, not for this request
    assert not d.proceed
    d = decide(REQUEST, 1000.0, CheckpointReading(txid=6, served=REQUEST.id), 1002.0)
    assert d.proceed and d.taken and d.txid == 6
    assert "committed as txid 6" in d.describe(REQUEST)


def test_a_checkpoint_taken_before_the_rebalance_wait_is_over_waits_for_it() -> None:
    d = decide(REQUEST, due_at=1005.0, reading=CheckpointReading(5, REQUEST.id), now=1001.0)
    assert not d.proceed and d.recheck_secs == pytest.approx(4.0)
    assert decide(REQUEST, 1005.0, CheckpointReading(5, REQUEST.id), 1005.0).proceed


def test_no_commit_in_time_falls_back_to_the_last_committed_checkpoint() -> None:
    d = decide(REQUEST, 1000.0, CheckpointReading(4, None), 1029.95)
    assert not d.proceed and d.recheck_secs == pytest.approx(0.05)
    d = decide(REQUEST, 1000.0, CheckpointReading(4, None), 1030.0)
    assert d.proceed and not d.taken and d.txid == 4
    assert "within 30s" in d.describe(REQUEST) and "txid 4" in d.describe(REQUEST)


def test_a_request_is_waited_for_the_longer_of_the_wait_and_the_message_timeout() -> None:
    r = new_request(CheckpointReading(7, None), wait_secs=0.0, timeout_secs=30.0, now=1234.5678)
    assert (r.id, r.asked_at, r.until, r.txid) == (1234567, 1234.5678, pytest.approx(1264.5678), 7)
    assert new_request(CheckpointReading(), 60.0, 30.0, 10.0).until == 70.0


def test_the_reading_comes_from_the_checkpoint_spouts_gauges() -> None:
    assert reading_of([{"pending": 3.0}, {"checkpoint.txid": 9.0, SERVED_GAUGE: 77.0}]) == CheckpointReading(9, 77)
    assert reading_of([{"checkpoint.txid": 2.0}]) == CheckpointReading(2, None)
    assert reading_of([]) == CheckpointReading(-1, None)


def _base(status: str, options: dict[str, Any] | None) -> StormBase:
    return StormBase(name="t", launch_time=0.0, status=status, num_workers=1, component_executors={"a": 1},
                     topology_action_options=options)  # type: ignore[arg-type]


def test_the_request_record_reads_back_and_bad_records_are_refused_by_name() -> None:
    assert CheckpointRequest.from_json(REQUEST.to_json()) == REQUEST
    bad = [
        ([], "must be an object"),
        ({**REQUEST.to_json(), "id": 0}, "id must be a positive integer"),
        ({**REQUEST.to_json(), "id": True}, "id must be a positive integer"),
        ({**REQUEST.to_json(), "until": "soon"}, "until must be wall-clock seconds"),
        ({**REQUEST.to_json(), "txid": 1.5}, "txid must be an integer"),
    ]
    for obj, match in bad:
        with pytest.raises(ValueError, match=match):
            CheckpointRequest.from_json(obj)
    held = {"action": "rebalance", OPTIONS_KEY: REQUEST.to_json()}
    assert pending_request(_base(REBALANCING, held)) == REQUEST
    assert pending_request(_base(ACTIVE, held)) is None  # the rescale went on: nothing is held
    assert pending_request(_base(REBALANCING, {"action": "rebalance"})) is None
    assert pending_request(_base(REBALANCING, {OPTIONS_KEY: {"id": "x"}})) is None


def test_a_request_is_served_by_a_checkpoint_begun_after_it() -> None:
    ask = CheckpointAsk()
    assert not ask.due()
    ask.ask(5)
    assert ask.due()
    ask.begun()
    assert not ask.due()
    ask.abandoned()  # failed or rolled back: due again
    assert ask.due() and ask.served is None
    ask.begun()
    ask.committed()
    assert ask.served == 5 and not ask.due()
    ask.ask(5)  # told again while still held: served already
    assert not ask.due()
    ask.committed()  # a later regular checkpoint serves nothing new
    assert ask.served == 5


def test_a_checkpoint_under_way_at_the_request_does_not_serve_it() -> None:
    ask = CheckpointAsk()
    ask.begun()  # a regular checkpoint, begun before any request
    ask.ask(8)
    ask.committed()
    assert ask.served is None and ask.due()


def test_the_at_least_once_core_prepares_at_once_when_its_last_checkpoint_is_made_due() -> None:
    """The checkpoint spout makes a due request begin by making the interval's last checkpoint long ago."""
    core = CheckpointCoordinator(INITIAL, interval_secs=60.0, now=0.0)
    emit, _ = core.next_emit(0.0)
    assert emit is not None and emit.action == "INITSTATE"
    core.emitted(emit, None, 0.0)
    assert core.acked(emit.txid) is None and not core.recovering
    emit, save = core.next_emit(1.0)
    assert emit is not None and save == TxState(0, "PREPARING")
    core.emitted(emit, save, 1.0)
    core.advanced(core.acked(0) or TxState(0, "COMMITTING"), 1.1)
    emit, _ = core.next_emit(1.2)
    assert emit is not None
    core.emitted(emit, None, 1.2)
    core.advanced(core.acked(0) or TxState(0, COMMITTED), 1.3)
    assert core.next_emit(2.0) == (None, None)  # the interval (60 s) holds the next one
    core.last_checkpoint = float("-inf")
    emit, save = core.next_emit(2.0)
    assert emit is not None and emit.action == "PREPARE" and save == TxState(1, "PREPARING")


class _Spout(Spout):
    """Counts its calls; a ``checkpointer`` also takes part in checkpoints while the topology is held."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.next_tuples = 0

    def __deepcopy__(self, memo: dict[int, Any]) -> _Spout:
        return self  # the test reads what the runtime's copy saw

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.calls.append("open")

    def activate(self) -> None:
        self.calls.append("activate")

    def deactivate(self) -> None:
        self.calls.append("deactivate")

    def next_tuple(self) -> None:
        self.next_tuples += 1

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])


class _Checkpointer(_Spout):
    def hold_for_checkpoint(self, request: int | None) -> None:
        self.calls.append(f"hold {request}")


def test_a_held_worker_runs_only_the_spouts_that_checkpoint_and_tells_them_the_request() -> None:
    plain, checkpointer = _Spout(), _Checkpointer()
    b = TopologyBuilder()
    b.set_spout("plain", plain)
    b.set_spout("checkpointer", checkpointer)
    conf = defaults()
    topology = system_topology(b.create_topology(), conf)
    layout = layout_tasks(topology)
    executors = list(layout.all_executors())
    clock = SimulatedClock()
    rt = WorkerRuntime(topology_id="t", topology_name="t", topology=topology, conf=conf, layout=layout,
                       executors=executors, task_to_worker={t: "w" for _, (s, e) in executors for t in range(s, e + 1)},
                       worker_id="w", clock=clock)
    rt.prepare()

    def passes(n: int) -> tuple[int, int]:
        before = plain.next_tuples, checkpointer.next_tuples
        for _ in range(n):
            clock.advance(0.01)
            rt.run_once(clock.now())
        return plain.next_tuples - before[0], checkpointer.next_tuples - before[1]

    rt.set_active(True)
    assert all(n > 0 for n in passes(3))
    rt.set_active(False, 7)  # held for request 7: the plain spout stops, the checkpointer runs on and is told
    assert passes(3)[0] == 0 and passes(3)[1] > 0
    assert plain.calls == ["open", "activate", "deactivate"]
    assert checkpointer.calls == ["open", "activate", "hold 7"]
    rt.set_active(False)  # released, inactive: both stop
    assert passes(3) == (0, 0)
    assert checkpointer.calls == ["open", "activate", "hold 7", "hold None", "deactivate"]
    rt.set_active(False, 8)  # held from inactive: the checkpointer runs again, held first
    assert passes(3)[1] > 0 and checkpointer.calls[-2:] == ["hold 8", "activate"]
    rt.shutdown()
