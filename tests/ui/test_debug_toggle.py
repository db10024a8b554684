"""The topology page's debug toggle on a dev cluster: Debug samples emits to the event logger, whose events.log
the log viewer serves; Stop Debug ends it (Storm's /debug/:action/:spct route behind the button)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from storm_py.clock import wait_until
from storm_py.errors import StormPyError
from tests.ui.conftest import Browser, MetricsCluster

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(400)]


def events_lines(metrics_cluster: MetricsCluster, tid: str) -> list[str]:
    """Every line of the topology's events.log files, read through the supervisors' log viewers."""
    client = metrics_cluster.client()
    workers = client.request("GET", f"/topology-workers/{tid}")
    lines: list[str] = []
    for row in workers["hostPortList"]:
        base = f"http://{row['host']}:{row['logviewerPort']}"
        headers = {"Authorization": f"Bearer {metrics_cluster.token}"}
        rel = f"{tid}/{row['port']}/events.log"
        url = f"{base}/api/v1/log?file={quote(rel)}"
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as reply:
                data: dict[str, Any] = json.loads(reply.read())
        except urllib.error.HTTPError as err:
            if err.code == 404:  # no event sampled in that worker yet
                continue
            raise
        lines.extend(x for x in data["data"].splitlines() if x)
    return lines


def test_debug_toggle_samples_to_events_log_and_stops(
    metrics_cluster: MetricsCluster, browser: Browser, tmp_path: Path
) -> None:
    tid = metrics_cluster.submit("debugged", tmp_path / "debugged-consumer.jsonl",
                                 "-c", "topology.eventlogger.executors=1", "-c", "metrics.lag=false")
    client = metrics_cluster.client()
    driver = browser.driver
    # the token in the tab's session storage (as after pasting it): the page shows the actions the token may take
    metrics_cluster.open(browser, f"/topology.html?id={quote(tid)}&refresh=1")
    wait_until(lambda: browser.text("#debug") == "Debug" and driver.find_element("id", "debug").is_displayed(), 30,
               interval=0.2, what="the Debug button")  # fmt: skip
    pct = driver.find_element("id", "debug-pct")
    pct.clear()
    pct.send_keys("100")
    driver.find_element("id", "debug").click()
    wait_until(lambda: browser.text("#debug") == "Stop Debug", 30, interval=0.2, what="the page to show debugging")
    page = client.topology("debugged")
    assert page["debug"] is True and page["samplingPct"] == 100
    assert "sampling 100 % to events.log" in browser.text("#debug-state")
    wait_until(lambda: any(",paced," in x for x in events_lines(metrics_cluster, tid)), 60, interval=0.5,
               what="the paced spout's emits in events.log")
    browser.shot("debugging")

    driver.find_element("id", "debug").click()
    wait_until(lambda: browser.text("#debug") == "Debug", 30, interval=0.2, what="the page to show debugging off")
    assert client.topology("debugged")["debug"] is False
    counts: list[int] = []

    def stopped() -> bool:  # the paced spout emits 10 tuples a second: three equal reads 2 s apart mean stopped
        counts.append(len(events_lines(metrics_cluster, tid)))
        return len(counts) >= 3 and counts[-1] == counts[-2] == counts[-3]

    wait_until(stopped, 30, interval=2.0, what=f"events.log to stop growing ({counts[-3:]})")
    # Storm's route, bad input refused by name
    for path, says in ((f"/topology/{tid}/debug/explode/10", "enable or disable"),
                       (f"/topology/{tid}/debug/enable/many", "must be a number"),
                       (f"/topology/{tid}/debug/enable/101", "between 0 and 100"),
                       (f"/topology/{tid}/component/nope/debug/enable/10", "no component 'nope'")):
        with pytest.raises(StormPyError) as err:
            client.request("POST", path)
        assert says in str(err.value), (path, err.value)
    client.request("POST", f"/topology/{tid}/component/judge/debug/enable/50")
    judge = client.request("GET", f"/topology/{tid}/component/judge")
    assert judge["debug"] is True and judge["samplingPct"] == 50
    assert client.topology("debugged")["debug"] is False
    client.kill("debugged", 0)
