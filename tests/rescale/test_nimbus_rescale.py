"""Nimbus's decisions on ``rebalance --tasks`` (pure): what is refused and why, the new task and executor counts,
and the rescale history the workers name state namespaces by; the CLI's and the client's forms of the request."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from storm_py.cluster_state.models import ACTIVE, REBALANCING, StormBase
from storm_py.errors import InvalidTopologyException
from storm_py.nimbus.rescale import checked_tasks, rescaled_counts, unkeyed_reason
from storm_py.stateful.state.task_names import Rescales


def _base(status: str = ACTIVE, conf: dict[str, Any] | None = None) -> StormBase:
    return StormBase(
        name="wc", status=status, launch_time=0.0, num_workers=1,
        component_executors={"__acker": 1, "$checkpointspout": 1, "count": 2, "split": 2, "words": 1, "win": 1},
        component_tasks={"__acker": 1, "$checkpointspout": 1, "count": 4, "split": 2, "words": 1, "win": 1},
        component_inputs={
            "count": [["split", "default", "fields"], ["split", "$checkpoint", "all"]],
            "split": [["words", "default", "shuffle"]],
            "win": [["split", "default", "fields"]],
        },
        topology_conf={"topology.state.max.parallelism": 16, **(conf or {})},
        component_settings={"count": {"topology.state.kind": "key_value"}, "win": {"topology.state.kind": "window"},
                            "words": {"topology.state.kind": "position"}},
    )


def test_a_keyed_bolt_behind_fields_groupings_and_a_stateless_bolt_can_be_rescaled() -> None:
    assert checked_tasks("wc", _base(), {"count": 16, "split": 40}) == {"count": 16, "split": 40}
    assert unkeyed_reason(_base(), "count") == "" and unkeyed_reason(_base(), "split") == ""


@pytest.mark.parametrize(("tasks", "match"), [
    ({"count": 17}, "'count'.*at most 16"),
    ({"count": 0}, "'count'.*positive integer"),
    ({"count": True}, "'count'.*positive integer"),
    ({"count": None}, "'count'.*positive integer"),
    ({"win": 2}, "'win'.*\\(window\\) is kept per task"),
    ({"words": 2}, "'words'.*\\(position\\) is kept per task"),
    ({"count": 8, "win": 2, "words": 2}, "'win'"),  # the first unkeyed one asked, in name order
    ({"nope": 2}, "unknown component 'nope'"),
    ({"$checkpointspout": 2}, "system component"),
    ({}, "non-empty mapping"),
    ([("count", 2)], "non-empty mapping"),
])
def test_refusals_name_the_component(tasks: Any, match: str) -> None:
    with pytest.raises(InvalidTopologyException, match=match):
        checked_tasks("wc", _base(), tasks)


def test_a_keyed_bolt_reading_any_input_by_another_grouping_is_unkeyed() -> None:
    base = _base()
    base.component_inputs["count"].append(["words", "default", "shuffle"])
    with pytest.raises(InvalidTopologyException, match=r"'count'.*not keyed.*'words'.*shuffle"):
        checked_tasks("wc", base, {"count": 8})


def test_a_rescale_while_rebalancing_is_refused() -> None:
    with pytest.raises(InvalidTopologyException, match=r"'count'.*already rebalancing"):
        checked_tasks("wc", _base(REBALANCING), {"count": 8})


def test_new_counts_keep_one_executor_per_task_or_the_executors_asked_for() -> None:
    base = _base()
    base.component_executors["split"] = 2  # one per task
    tasks, execs, conf = rescaled_counts(base, {"count": 8, "split": 5}, {})
    assert tasks["count"] == 8 and tasks["split"] == 5
    assert execs["count"] == 2 and execs["split"] == 5  # count had fewer executors than tasks: kept
    _, execs, _ = rescaled_counts(base, {"count": 1}, {})
    assert execs["count"] == 1
    _, execs, _ = rescaled_counts(base, {"count": 8}, {"count": 8})
    assert execs["count"] == 8
    history = Rescales.of(conf)
    # submit layout, in component order: $checkpointspout 1, __acker 2, count 3-6, split 7-8, win 9, words 10
    assert history.first_tasks == {"$checkpointspout": 1, "__acker": 2, "count": 3, "split": 7, "win": 9,
                                   "words": 10}
    assert history.tasks == {"count": [4, 8], "split": [2, 5]}


def test_a_second_rescale_appends_to_the_history_and_keeps_the_submits_ids() -> None:
    base = _base()
    _, _, conf = rescaled_counts(base, {"count": 8}, {})
    second = _base(conf=conf)
    second.component_tasks["count"] = 8
    _, _, conf2 = rescaled_counts(second, {"count": 3}, {})
    history = Rescales.of(conf2)
    assert history.tasks["count"] == [4, 8, 3] and history.first_tasks["words"] == 10


def test_the_cli_sends_tasks_at_the_top_level_of_the_body(monkeypatch: pytest.MonkeyPatch) -> None:
    from storm_py.cli import topology as cli_topology
    from storm_py.client import NimbusClient

    sent: list[tuple[str, str, Any, Any]] = []

    def action(self: NimbusClient, name: str, what: str, wait: Any = None, body: Any = None) -> dict[str, Any]:
        sent.append((name, what, wait, body))
        return {}

    monkeypatch.setattr(NimbusClient, "_action", action)
    result = CliRunner().invoke(cli_topology.rebalance, ["wc", "--tasks", "count=8", "--tasks", "split=x", "-w", "0"])
    assert result.exit_code == 0, result.output
    assert sent == [("wc", "rebalance", 0.0, {"rebalanceOptions": {}, "tasks": {"count": 8, "split": "x"}})]
    bad = CliRunner().invoke(cli_topology.rebalance, ["wc", "--tasks", "count"])
    assert bad.exit_code != 0 and "COMPONENT=N" in bad.output
