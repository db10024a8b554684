"""The UI in headless Chromium against a dev cluster: cluster page, live topology page, graph, component page,
actions with and without the cluster's token.  Screenshots land in test-output/ui/."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

import storm_py
from storm_py.clock import wait_until
from tests.ui.conftest import Browser, MetricsCluster

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(400)]

COMPONENTS = {"counted", "paced", "judge", "sleeper"}


def cell(browser: Browser, table: str, row_key: str, column: str) -> str:
    """The text of a cell of a UI table, by its row's key and its column's header."""
    return str(browser.driver.execute_script(
        """
        const [table, key, column] = arguments;
        const t = document.querySelector(table + " table");
        if (!t) return null;
        const col = Array.from(t.tHead.rows[0].cells).findIndex(c => c.textContent === column);
        const row = Array.from(t.tBodies[0].rows).find(r => r.dataset.key === key);
        return row && col >= 0 ? row.cells[col].textContent : null;
        """, table, row_key, column))


def column(browser: Browser, table: str, column: str) -> list[str]:
    """The texts of a column of a UI table, by its header."""
    return list(browser.driver.execute_script(
        """
        const [table, column] = arguments;
        const t = document.querySelector(table + " table");
        if (!t) return [];
        const col = Array.from(t.tHead.rows[0].cells).findIndex(c => c.textContent === column);
        return col < 0 ? [] : Array.from(t.tBodies[0].rows).map(r => r.cells[col].textContent);
        """, table, column))


def lag_section_shown(browser: Browser) -> bool:
    """Whether the topology page shows its "Kafka Spouts Lag" section."""
    return bool(browser.driver.execute_script(
        """
        const s = Array.from(document.querySelectorAll("section"))
          .find(x => x.querySelector("h2") && x.querySelector("h2").textContent === "Kafka Spouts Lag");
        return Boolean(s) && s.offsetParent !== null;
        """))


def section_shown(browser: Browser, title: str) -> bool:
    """Whether the page shows the section headed ``title``."""
    return bool(browser.driver.execute_script(
        """
        const s = Array.from(document.querySelectorAll("section"))
          .find(x => x.querySelector("h2") && x.querySelector("h2").textContent === arguments[0]);
        return Boolean(s) && s.offsetParent !== null;
        """, title))


def test_cluster_page_lists_the_topology(metrics_cluster: MetricsCluster, browser: Browser) -> None:
    metrics_cluster.open(browser, "/")
    wait_until(lambda: "judged" in browser.text("#topology-summary"), 30, interval=0.2, what="judged listed")
    assert "ACTIVE" in browser.text("#topology-summary")
    assert browser.text("#cluster-summary").count("\n") >= 1 and "Leader" in browser.text("#nimbus-summary")
    assert len(browser.driver.find_elements("css selector", "#supervisor-summary tbody tr")) == 2
    ports = column(browser, "#nimbus-summary", "Port")
    assert ports and all(p.isdigit() for p in ports), ports  # a port, not a quantity: "40607", never "40,607"
    assert column(browser, "#supervisor-summary", "Version") == [storm_py.__version__] * 2
    assert browser.script_errors() == []
    browser.shot("cluster")


def test_topology_page_counts_change_live(metrics_cluster: MetricsCluster, browser: Browser) -> None:
    tid = metrics_cluster.client().topology_id("judged")
    metrics_cluster.open(browser, f"/topology.html?id={quote(tid)}&refresh=1")
    wait_until(lambda: cell(browser, "#spouts", "paced", "Emitted") not in ("None", ""), 30, interval=0.2,
               what="the spouts table")
    first = int(cell(browser, "#spouts", "paced", "Emitted").replace(",", ""))
    wait_until(lambda: int(cell(browser, "#spouts", "paced", "Emitted").replace(",", "")) > first, 30,
               interval=0.3, what="the paced spout's emitted count to grow on the page without a reload")
    wait_until(lambda: cell(browser, "#spouts", "counted", "Timed out") == "10", 60, interval=0.3,
               what="'counted' to show its 10 timed-out trees")
    assert cell(browser, "#spouts", "counted", "Failed") == "10"
    assert float(cell(browser, "#bolts", "sleeper", "Capacity")) > 0
    windows = [e.text for e in browser.driver.find_elements("css selector", "#topology-stats tbody tr td:first-child")]
    assert windows == ["10m 0s", "3h 0m 0s", "1d 0h 0m 0s", "All time"]
    wait_until(lambda: cell(browser, "#lag", "paced/paced-log/0", "Lag") == "3", 30, interval=0.3,
               what="the paced spout's lag row")
    assert cell(browser, "#lag", "paced/paced-log/0", "Topic") == "paced-log"
    assert int(cell(browser, "#lag", "paced/paced-log/0", "Log head offset").replace(",", "")) > 3
    assert lag_section_shown(browser)
    ports = column(browser, "#workers", "Port")
    assert ports and all(p.isdigit() for p in ports), ports
    links = browser.driver.find_elements("css selector", "#workers a")
    # same origin: the log page reads the log through nimbus with the token (a log viewer link would be a 401)
    assert links and all(a.get_attribute("href").startswith(metrics_cluster.url + "/log.html?") for a in links)
    assert browser.script_errors() == []
    browser.shot("topology")
    port = ports[0]
    links[0].click()
    wait_until(lambda: "running executors" in browser.text("#log-text"), 30, interval=0.2, what="the worker's log")
    text = browser.text("#log-text")
    assert f"of {tid} running executors" in text and f"on port {port}" in text
    assert "of " in browser.text("#log-range") and browser.script_errors() == []
    browser.shot("worker-log")


def test_graph_renders_every_component_with_rates_and_capacity(
    metrics_cluster: MetricsCluster, browser: Browser
) -> None:
    tid = metrics_cluster.client().topology_id("judged")
    metrics_cluster.open(browser, f"/topology.html?id={quote(tid)}&refresh=1")

    def nodes() -> set[str]:
        found = browser.driver.find_elements("css selector", "#graph g.node")
        return {e.get_attribute("data-component") for e in found}

    wait_until(lambda: nodes() == COMPONENTS, 30, interval=0.2, what=f"graph nodes {COMPONENTS}")
    edges = browser.driver.find_elements("css selector", "#graph g.edge-group")
    assert {(e.get_attribute("data-source"), e.get_attribute("data-target")) for e in edges} == {
        ("counted", "judge"), ("paced", "sleeper")}
    label = "#graph g.edge-group[data-target=sleeper] text"
    wait_until(lambda: browser.text(label).endswith("/s") and browser.text(label) != "0.0/s", 60, interval=0.5,
               what="a rate on the paced -> sleeper edge")
    sleeper = browser.driver.find_element("css selector", "#graph g.node[data-component=sleeper] rect")
    wait_until(lambda: sleeper.get_attribute("fill") not in (None, "", "hsl(120,65%,75%)"), 30, interval=0.5,
               what="the sleeper coloured by its capacity")
    browser.driver.execute_script("document.getElementById('graph-box').scrollIntoView()")
    browser.shot("graph")


def test_component_page_shows_executors_streams_and_log_links(
    metrics_cluster: MetricsCluster, browser: Browser
) -> None:
    tid = metrics_cluster.client().topology_id("judged")
    metrics_cluster.open(browser, f"/component.html?topology_id={quote(tid)}&id=judge&refresh=1")
    wait_until(lambda: len(browser.driver.find_elements("css selector", "#executors tbody tr[data-key]")) == 2, 30,
               interval=0.2, what="judge's two executors")
    assert "counted" in browser.text("#input-stats") and "default" in browser.text("#input-stats")
    links = browser.driver.find_elements("css selector", "#executors a")
    assert len(links) == 2 and all("/log.html?topology_id=" in a.get_attribute("href") for a in links)
    assert browser.script_errors() == []
    wait_until(lambda: "tuple 5 looks odd" in browser.text("#errors"), 30, interval=0.2, what="the reported error")
    error_links = browser.driver.find_elements("css selector", "#errors a")
    assert error_links and "/log.html?topology_id=" in error_links[0].get_attribute("href")
    browser.shot("component")


def test_actions_need_the_token_and_deactivate_changes_the_status(
    metrics_cluster: MetricsCluster, browser: Browser, tmp_path: Path
) -> None:
    tid = metrics_cluster.submit("clicks", tmp_path / "clicks-consumer.jsonl", "-c", "metrics.lag=false")
    client = metrics_cluster.client()
    driver = browser.driver
    metrics_cluster.open(browser, f"/topology.html?id={quote(tid)}&refresh=1")
    wait_until(lambda: browser.text("#status") == "ACTIVE", 30, interval=0.2, what="the page to show ACTIVE")
    # no spout of this topology reads a log: no Kafka lag section
    wait_until(lambda: "judge" in browser.text("#bolts"), 30, interval=0.2, what="the bolts table")
    assert not lag_section_shown(browser)
    assert not section_shown(browser, "Window and State Settings")  # no windowed bolt, no state

    driver.find_element("id", "token").clear()
    driver.find_element("id", "token").send_keys("a-wrong-token")
    driver.find_element("id", "deactivate").click()  # a wrong token given: the cluster refuses
    wait_until(lambda: "Refused" in browser.text("#action-message"), 30, interval=0.2, what="the refusal shown")
    assert "nimbus.auth.token" in browser.text("#action-message")
    assert client.topology("clicks")["status"] == "ACTIVE"
    # the page's own reads now carry the wrong token too: refused, they ask for the token
    wait_until(lambda: browser.driver.find_elements("id", "token-prompt"), 30, interval=0.2, what="the token prompt")
    browser.shot("refused")

    driver.find_element("id", "token").clear()
    driver.find_element("id", "token").send_keys(metrics_cluster.token)
    driver.find_element("id", "deactivate").click()
    wait_until(lambda: browser.text("#status") == "INACTIVE", 30, interval=0.2, what="the page to show INACTIVE")
    assert client.topology("clicks")["status"] == "INACTIVE"
    assert not browser.driver.find_elements("id", "token-prompt")  # the accepted token answered the prompt
    browser.shot("deactivated")
    driver.find_element("id", "activate").click()
    wait_until(lambda: client.topology("clicks")["status"] == "ACTIVE", 30, interval=0.2, what="active again")
    client.kill("clicks", 0)


def test_topology_page_shows_window_and_state_settings_per_component(
    metrics_cluster: MetricsCluster, browser: Browser
) -> None:
    name = "windowed"
    out = metrics_cluster.cluster.cli("submit", str(metrics_cluster.wheel), "metricsapp.topology:build_windowed",
                                      "--name", name, "-c", "topology.workers=1", "-c", "topology.max.spout.pending=50",
                                      "-c", "topology.state.checkpoint.interval.ms=500")
    assert f"Finished submitting topology: {name}" in out.stdout
    client = metrics_cluster.client()
    tid = client.topology_id(name)
    metrics_cluster.open(browser, f"/topology.html?id={quote(tid)}&refresh=1")
    wait_until(lambda: section_shown(browser, "Window and State Settings"), 60, interval=0.2,
               what="the settings section")
    table = "#component-settings"
    assert cell(browser, table, "windowsum/topology.bolts.window.length.count", "Value") == "5"
    assert cell(browser, table, "windowsum/topology.bolts.sliding.interval.count", "Value") == "5"
    assert cell(browser, table, "windowsum/topology.bolts.message.id.field.name", "Value") == '"id"'
    assert cell(browser, table, "$checkpointspout/topology.state.checkpoint.interval.ms", "Value") == "500"
    assert cell(browser, table, "$checkpointspout/topology.state.guarantee", "Value") == '"at_least_once"'
    assert cell(browser, table, "$checkpointspout/topology.state.provider", "Value") == '"checkpoint_dir"'
    assert cell(browser, table, "numbers/topology.bolts.window.length.count", "Value") == "None"  # no window
    assert browser.script_errors() == []
    browser.shot("settings")
    client.kill(name, 0)


def test_graph_of_200_components_renders_and_refreshes_in_place(
    metrics_cluster: MetricsCluster, browser: Browser
) -> None:
    driver = browser.driver
    driver.get(metrics_cluster.url + "/topology.html?id=none&refresh=3600")  # loads graph.js; no topology needed
    result = driver.execute_script(
        """
        const vis = {};
        for (let i = 0; i < 20; i++) vis["spout-" + i] = {":type": "spout", ":capacity": 0, ":inputs": []};
        for (let i = 0; i < 180; i++) {
          vis["bolt-" + i] = {":type": "bolt", ":capacity": (i % 10) / 10, ":inputs": [
            {":component": i < 20 ? "spout-" + i : "bolt-" + (i - 20), ":stream": "default", ":rate": i}]};
        }
        const svg = document.getElementById("graph");
        const graph = new StormGraph(svg, null);
        let t0 = performance.now();
        graph.update(vis);
        const first = performance.now() - t0;
        const node = svg.querySelector("g.node[data-component='bolt-5']");
        for (const c of Object.values(vis)) { c[":capacity"] = 1 - (c[":capacity"] || 0); }
        t0 = performance.now();
        graph.update(vis);
        const again = performance.now() - t0;
        return {nodes: svg.querySelectorAll("g.node").length, edges: svg.querySelectorAll("g.edge-group").length,
                same: node === svg.querySelector("g.node[data-component='bolt-5']"), first, again};
        """)
    print(f"graph of 200 components: first render {result['first']:.1f} ms, refresh {result['again']:.1f} ms")
    assert result["nodes"] == 200 and result["edges"] == 180 and result["same"]
    driver.execute_script("document.getElementById('graph-box').scrollIntoView()")
    browser.shot("graph-200")


def chart_points(browser: Browser, chart: str) -> list[dict[str, object]]:
    """The points a chart drew, as the page keeps them (its svg's data-series)."""
    raw = browser.driver.execute_script(
        "const s = document.getElementById(arguments[0]); return s ? s.dataset.series || '[]' : '[]';", chart)
    return list(json.loads(str(raw)))


def test_charts_follow_a_rate_change(metrics_cluster: MetricsCluster, browser: Browser, tmp_path: Path) -> None:
    tid = metrics_cluster.submit("charted", tmp_path / "charted-consumer.jsonl", "-c", "metrics.lag=false")
    client = metrics_cluster.client()
    metrics_cluster.open(browser, f"/topology.html?id={quote(tid)}&refresh=1")

    def last(key: str) -> float:
        points = chart_points(browser, "rates-chart")
        return float(points[-1][key]) if points else -1.0  # type: ignore[arg-type]

    wait_until(lambda: last("emitted") > 0, 60, interval=0.3, what="the chart's last point to show emits")
    wait_until(lambda: any(p["completeLatency"] for p in chart_points(browser, "latency-chart")), 60, interval=0.3,
               what="a complete latency on the chart")
    browser.shot("charts-active")
    client.deactivate("charted")  # the rate changes: nothing is emitted any more
    wait_until(lambda: last("emitted") == 0 and last("acked") == 0, 90, interval=0.5,
               what="the chart's last point to show no emits after the deactivation")
    points = chart_points(browser, "rates-chart")
    assert any(float(p["emitted"]) > 0 for p in points[:-1]), points  # type: ignore[arg-type]
    assert "emitted 0" in browser.text("#rates-chart")  # the legend reads the last point
    assert browser.script_errors() == []
    browser.driver.execute_script("document.getElementById('rates-chart').scrollIntoView()")
    browser.shot("charts-after-deactivate")
    metrics_cluster.open(browser, f"/component.html?topology_id={quote(tid)}&id=paced&refresh=1")
    wait_until(lambda: len(chart_points(browser, "rates-chart")) > 0, 30, interval=0.3, what="the spout's chart")
    assert any(float(p["emitted"]) > 0 for p in chart_points(browser, "rates-chart"))  # type: ignore[arg-type]
    browser.shot("charts-component")
    reply = client.request("GET", f"/topology/{quote(tid)}/timeseries")
    assert reply["bucketSecs"] == 30 and 0 < len(reply["points"]) <= 20
    for path in (f"/topology/{quote(tid)}/component/nope/timeseries", "/topology/no-such-topology/timeseries"):
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(urllib.request.Request(f"{metrics_cluster.url}/api/v1{path}", headers={
                "Authorization": f"Bearer {metrics_cluster.token}"}), timeout=30)
        assert err.value.code == 404, path
    client.kill("charted", 0)


def workerlog(cluster: MetricsCluster, tid: str, query: str, token: bool = True) -> tuple[int, dict[str, Any]]:
    """Status and JSON reply of nimbus's ``/topology/:id/workerlog?query``."""
    headers = {"Authorization": f"Bearer {cluster.token}"} if token else {}
    url = f"{cluster.url}/api/v1/topology/{quote(tid, safe='')}/workerlog?{query}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as reply:
            return reply.status, dict(json.loads(reply.read()))
    except urllib.error.HTTPError as err:
        return err.code, dict(json.loads(err.read()))


def test_nimbus_reads_a_worker_log_from_known_log_viewers_only(metrics_cluster: MetricsCluster) -> None:
    tid = metrics_cluster.client().topology_id("judged")
    worker = metrics_cluster.client().request("GET", f"/topology-workers/{quote(tid, safe='')}")["hostPortList"][0]
    host, port, sid = worker["host"], worker["port"], worker["supervisorId"]
    where = f"host={quote(host)}&port={port}"
    wait_until(lambda: "running executors" in workerlog(metrics_cluster, tid, where)[1].get("data", ""), 30,
               interval=0.3, what="the worker's log through nimbus")
    status, page = workerlog(metrics_cluster, tid, where)
    assert status == 200 and f"of {tid} running executors" in page["data"] and page["supervisorId"] == sid
    assert page["next"] == page["size"] and page["file"] == "worker.log"  # the tail unless a start is given
    status, page = workerlog(metrics_cluster, tid, f"supervisor={quote(sid)}&port={port}&start=0&length=10")
    assert status == 200 and (page["start"], page["next"]) == (0, 10) and len(page["data"]) <= 10
    assert workerlog(metrics_cluster, tid, where, token=False)[0] == 401
    for query, status, named in [
        (f"host=evil.example&port={port}", 404, "evil.example"),  # not a supervisor of this topology's workers
        (f"host=127.0.0.2&port={port}", 404, "127.0.0.2"),
        (f"host={quote(host)}&port=1", 404, ":1"),  # a known host, but no worker of the topology there
        (f"supervisor=nobody&port={port}", 404, "nobody"),
        (f"host={quote('http://evil.example/x')}&port={port}", 400, "host"),
        (f"host={quote(host)}&port=x", 400, "port"),
        (f"host={quote(host)}&port=70000", 400, "port"),
        (f"host={quote(host)}", 400, "port"),
        (f"port={port}", 400, "host"),
        (f"host={quote(host)}&supervisor={quote(sid)}&port={port}", 400, "host"),
        (f"{where}&file=..%2F..%2Fetc%2Fpasswd", 400, "file"),
        (f"{where}&length=0", 400, "length"),
        (f"{where}&length={(1 << 20) + 1}", 400, "length"),
        (f"{where}&start=-1", 400, "start"),
    ]:
        got, body = workerlog(metrics_cluster, tid, query)
        assert (got, named in body.get("errorMessage", "")) == (status, True), (query, body)
    assert workerlog(metrics_cluster, "no-such-topology-1-1", where)[0] == 404


UNTRACKED = "untracked (no message ids)"


def test_a_spout_emitting_without_message_ids_says_it_is_untracked(
    metrics_cluster: MetricsCluster, browser: Browser
) -> None:
    tid = metrics_cluster.client().topology_id("judged")
    metrics_cluster.open(browser, f"/topology.html?id={quote(tid)}&refresh=1")
    # "paced" emits without message ids; "counted" with them
    wait_until(lambda: cell(browser, "#spouts", "paced", "Acked") == UNTRACKED, 30, interval=0.2,
               what="the paced spout's acked cell to say why it stays empty")
    assert cell(browser, "#spouts", "paced", "Complete latency (ms)") == UNTRACKED
    wait_until(lambda: cell(browser, "#spouts", "counted", "Acked").replace(",", "").isdigit(), 30, interval=0.2,
               what="the counted spout's acked count")
    assert UNTRACKED not in browser.text("#latency-chart")  # the topology has a tracked spout too
    metrics_cluster.open(browser, f"/component.html?topology_id={quote(tid)}&id=paced&refresh=1")
    wait_until(lambda: UNTRACKED in browser.text("#latency-chart"), 30, interval=0.2,
               what="the paced spout's latency chart to say it is untracked")
    assert "no data" not in browser.text("#latency-chart")
    assert cell(browser, "#output-stats", "default", "Acked") == UNTRACKED
    assert cell(browser, "#component-stats", ":all-time", "Acked") == UNTRACKED
    assert browser.script_errors() == []
    browser.shot("untracked-spout")
    metrics_cluster.open(browser, f"/component.html?topology_id={quote(tid)}&id=counted&refresh=1")
    wait_until(lambda: browser.text("#latency-chart") != "", 30, interval=0.2, what="the counted spout's chart")
    assert UNTRACKED not in browser.text("#latency-chart") + browser.text("#component-stats")


def test_the_dev_cluster_ui_link_brings_the_token_into_the_tab_and_leaves_the_address(
    metrics_cluster: MetricsCluster, browser: Browser
) -> None:
    link = next(x for x in metrics_cluster.cluster.output().splitlines() if x.startswith("ui: "))[len("ui: "):]
    assert link == f"{metrics_cluster.url}/#token={metrics_cluster.token}"
    browser.driver.get(link)  # a fresh tab: no token stored yet
    wait_until(lambda: "judged" in browser.text("#topology-summary"), 30, interval=0.2, what="judged listed")
    assert browser.driver.current_url == f"{metrics_cluster.url}/"
    assert browser.driver.execute_script("return sessionStorage.getItem('storm-py.token')") == metrics_cluster.token
    assert browser.driver.find_elements("css selector", "#token-prompt") == []
    assert browser.script_errors() == []
    # another page of the same tab keeps the token; a fragment without one is left alone
    browser.driver.get(f"{metrics_cluster.url}/index.html#other=1")
    wait_until(lambda: "judged" in browser.text("#topology-summary"), 30, interval=0.2, what="judged listed again")
    assert browser.driver.current_url == f"{metrics_cluster.url}/index.html#other=1"
