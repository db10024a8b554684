"""An async bolt on the dev cluster (real nimbus, supervisor and worker processes): 2,000 numbers enriched by a
local HTTP endpoint answering after 20 ms with ``topology.async.max.in.flight`` 100.  Every number is acked
once, the endpoint's 500s (quietly, a ``FailedException``) and a hung call fail exactly their numbers (replayed by
the spout), the timeout is reported, and the sink receives the numbers that never failed in the order the spout
sent them."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from storm_py.clock import wait_until
from tests.asyncbolt.components import endpoint
from tests.cluster.harness import DevClusterProcess, build_wheel

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(600)]

APP = Path(__file__).parent / "apps" / "asyncenrich"
N = 2000


def lines(path: Path) -> list[int]:
    try:
        return [int(x) for x in path.read_text(encoding="utf-8").split()]
    except FileNotFoundError:
        return []


def test_enrichment_on_the_dev_cluster(tmp_path: Path) -> None:
    wheel = build_wheel(APP, tmp_path / "wheels")
    out = tmp_path / "out"
    out.mkdir()
    bad = frozenset(range(5, N, 101))
    hang = frozenset({42})
    cluster = DevClusterProcess(tmp_path / "cluster", supervisors=1)
    with endpoint(bad=bad, hang=hang) as server:
        try:
            cluster.start()
            cluster.cli("submit", str(wheel), "asyncenrich.topology:build", "--name", "enrich",
                        "-c", "topology.workers=1", "-c", "topology.message.timeout.secs=60",
                        "-c", "topology.async.max.in.flight=100", "-c", "topology.async.execute.timeout.secs=5",
                        "-c", f"asyncenrich.url={server.url}", "-c", f"asyncenrich.out={out}",
                        "-c", f"asyncenrich.count={N}")
            wait_until(lambda: len(set(lines(out / "acks"))) == N, 240, interval=0.5, what="every number acked")
            acks = Counter(lines(out / "acks"))
            fails = Counter(lines(out / "fails"))
            sunk = lines(out / "sunk")
            assert set(acks) == set(range(N)) and set(acks.values()) == {1}
            assert set(fails) == bad | hang and set(fails.values()) == {1}
            assert sorted(sunk) == list(range(N))
            never_failed = [i for i in sunk if i not in bad | hang]
            assert never_failed == sorted(never_failed)  # ordered mode: in the order they arrived

            client = cluster.client()

            def errors() -> list[str]:
                return [e["error"] for e in client.component("enrich", "enrich")["componentErrors"]]

            wait_until(lambda: any("topology.async.execute.timeout.secs" in e for e in errors()), 60,
                       interval=0.5, what="the timeout in the component's errors")
            assert any("'enrich'" in e and "5 s" in e for e in errors())
            assert not any("HTTP 500" in e for e in errors())  # a FailedException fails its input quietly
            cluster.cli("kill", "enrich", "-w", "0")
        finally:
            cluster.stop()
