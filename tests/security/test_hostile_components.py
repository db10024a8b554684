"""Components that misbehave on a real dev cluster: a bolt stuck in an infinite loop, a BasicBolt failing in
prepare(), a spout failing in open().  The worker cannot be frozen for good, the real error is shown, and the
stuck topology processes every tuple once its worker is restarted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from storm_py.clock import wait_until
from tests.cluster.harness import DevClusterProcess, build_wheel

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(400)]

APP = Path(__file__).parent / "apps" / "hostileapps"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(APP, tmp_path_factory.mktemp("hostile-wheel"))


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[DevClusterProcess]:
    dev = DevClusterProcess(tmp_path / "cluster", {"supervisor.worker.timeout.secs": 6}, supervisors=1)
    dev.start()
    try:
        yield dev
    finally:
        dev.stop()


def errors(cluster: DevClusterProcess, name: str, component: str) -> list[str]:
    page: dict[str, Any] = cluster.client().component(name, component)
    return [str(e.get("error", "")) for e in page.get("componentErrors", [])]


def spout_acked(cluster: DevClusterProcess, name: str) -> int:
    return int(cluster.client().topology(name)["spouts"][0]["acked"] or 0)


def test_a_stuck_bolt_gets_its_worker_restarted_and_no_tuple_is_lost(
    cluster: DevClusterProcess, wheel: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "hung-once"
    cluster.cli("submit", str(wheel), "hostileapps.topology:stuck", "--name", "stuck",
                "-c", f"hostile.marker={marker}", "-c", "hostile.count=200",
                "-c", "topology.message.timeout.secs=10")  # fmt: skip
    wait_until(marker.exists, 120, interval=0.25, what="the bolt to get stuck")
    # The stuck component and where it is stuck reach the topology's errors ...
    wait_until(lambda: any("stuck in hang" in e for e in errors(cluster, "stuck", "hang")), 60, interval=0.5,
               what="the stuck bolt reported")  # fmt: skip
    text = next(e for e in errors(cluster, "stuck", "hang") if "stuck in hang" in e)
    assert "while True" in text or "execute" in text  # its stack
    # ... and the restarted worker processes everything (the spout restarts with its worker and replays).
    wait_until(lambda: spout_acked(cluster, "stuck") == 200, 180, interval=0.5,
               what="200 tuples acked after the restart")


@pytest.mark.parametrize(("builder", "component", "message"), [
    ("bad_prepare", "broken", "cannot reach the user database (prepare)"),
    ("bad_open", "numbers", "cannot reach the source queue (open)"),
])  # fmt: skip
def test_an_error_in_prepare_or_open_is_shown_as_itself(
    cluster: DevClusterProcess, wheel: Path, builder: str, component: str, message: str
) -> None:
    cluster.cli("submit", str(wheel), f"hostileapps.topology:{builder}", "--name", builder)
    wait_until(lambda: any(message in e for e in errors(cluster, builder, component)), 120, interval=0.5,
               what=f"the {builder} error in the topology's errors")  # fmt: skip
    shown = errors(cluster, builder, component)
    assert all("required positional argument" not in e for e in shown)  # never the misleading rich-bolt error
    assert all("in next_tuple" not in e for e in shown)  # never next_tuple on a spout that did not open
    # The worker was restarted (with backoff), not left running a half-made component: the error repeats.
    wait_until(lambda: sum(message in e for e in errors(cluster, builder, component)) >= 2, 120, interval=0.5,
               what="a second attempt after the restart")  # fmt: skip
