"""Profiling from the component page, in headless Chromium against a dev cluster running a topology whose bolt is
busy in a known function and keeps a growing list: a stack dump names the function, a CPU profile's flame graph
opens in a new tab and names ``execute``, a memory snapshot names the line that appends; a result is read only
with a token (401 without) and the topology's rights (403 for a user without them)."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from storm_py.clock import wait_until
from tests.cluster.harness import DevClusterProcess, build_wheel
from tests.ui.conftest import Browser

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(400)]

APP = Path(__file__).parent / "apps" / "profiledapp"
SOURCE = APP / "profiledapp" / "topology.py"
NAME = "profiled-ui"


class Profiled:
    """The dev cluster, its topology's id, its one worker, the cluster's token and a user's without rights."""

    def __init__(self, dc: DevClusterProcess, tid: str, worker: str, outsider: str) -> None:
        self.dc, self.tid, self.worker, self.outsider = dc, tid, worker, outsider
        self.url = dc.nimbus_url().rstrip("/")
        self.token = str(dc.client_conf()["nimbus.auth.token"])

    def status(self, method: str, path: str, token: str | None) -> int:
        """The status nimbus answers ``method path`` with ``token`` (None: without one)."""
        req = urllib.request.Request(self.url + path, method=method, data=b"{}" if method == "POST" else None)
        if method == "POST":
            req.add_header("Content-Type", "application/json")
        if token is not None:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return int(resp.status)
        except urllib.error.HTTPError as err:
            return int(err.code)


@pytest.fixture(scope="module")
def profiled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Profiled]:
    root = tmp_path_factory.mktemp("profiling-ui")
    wheel = build_wheel(APP, root)
    dc = DevClusterProcess(root / "cluster", supervisors=1,
                           conf={"worker.profiler.memory.trace.secs": 2, "worker.profiler.poll.secs": 0.2})
    try:
        dc.start()
        dc.cli("submit", str(wheel), "profiledapp.topology:build", "--name", NAME, "-c", "topology.workers=1",
               "-c", "topology.max.spout.pending=4")
        client = dc.client()
        tid = client.topology_id(NAME)
        wait_until(lambda: len(client.request("GET", f"/topology/{tid}")["workers"]) == 1, 120, interval=0.25,
                   what="the worker to run")
        [row] = client.request("GET", f"/topology-workers/{tid}")["hostPortList"]
        log = dc.artifacts(tid) / str(row["port"]) / "worker.log"
        wait_until(lambda: log.exists() and "running executors" in log.read_text(encoding="utf-8"), 120,
                   interval=0.25, what="the worker to run its executors")
        outsider = dc.cli("users", "add", "outsider", "--role", "user").stdout.splitlines()[0].strip()
        yield Profiled(dc, tid, f"{row['host']}:{row['port']}", outsider)
    finally:
        dc.stop()


def open_component(profiled: Profiled, browser: Browser) -> None:
    """The crunch bolt's page, with the cluster's token in the tab's session storage (never in a URL)."""
    browser.driver.get(profiled.url + "/static/style.css")
    browser.driver.execute_script("sessionStorage.setItem('storm-py.token', arguments[0])", profiled.token)
    browser.driver.get(f"{profiled.url}/component.html?topology_id={quote(profiled.tid)}&id=crunch&refresh=1")
    wait_until(lambda: profiled.worker in browser.text("#profiling-worker"), 60, interval=0.2,
               what="the worker offered")


def click(browser: Browser, css: str) -> None:
    browser.driver.find_element("css selector", css).click()


def result_links(browser: Browser, text: str) -> list[str]:
    """The relay paths of the listed results whose link reads ``text`` (clicked by the test through the page)."""
    return list(browser.driver.execute_script(
        "return Array.from(document.querySelectorAll('#profiling-results a[data-open]'))"
        ".filter(a => a.textContent === arguments[0]).map(a => a.dataset.key);", text))


def test_a_worker_is_profiled_from_the_component_page(profiled: Profiled, browser: Browser) -> None:
    open_component(profiled, browser)
    driver = browser.driver
    driver.find_element("css selector", f"#profiling-worker option[value='{profiled.worker}']").click()

    # a stack dump shows on the page and names the function the bolt is busy in
    click(browser, "#profiling-stack")
    wait_until(lambda: "crunch_numbers" in browser.text("#profiling-view"), 60, interval=0.2,
               what="the stack dump on the page")
    assert "Stack dump of " + profiled.worker in browser.text("#profiling-view-title")

    # a short CPU profile: its flame graph opens in a new tab, from bytes read through nimbus with the token
    seconds = driver.find_element("css selector", "#profiling-seconds")
    seconds.clear()
    seconds.send_keys("3")
    click(browser, "#profiling-cpu")
    wait_until(lambda: bool(result_links(browser, "flame graph")), 90, interval=0.3, what="the flame graph listed")
    rows = browser.text("#profiling-results")
    assert "CPU profile" in rows and "Stack dump" in rows and "Z" in rows  # wall-clock times, ISO 8601 in UTC
    page = driver.current_window_handle
    driver.find_element("css selector", "#profiling-results a[data-open='tab']").click()
    wait_until(lambda: len(driver.window_handles) == 2, 30, interval=0.2, what="the flame graph's tab")
    driver.switch_to.window(next(h for h in driver.window_handles if h != page))
    wait_until(lambda: "execute" in (driver.page_source or ""), 30, interval=0.2, what="the flame graph's frames")
    assert driver.current_url.startswith("blob:" + profiled.url) and "<svg" in driver.page_source
    assert "crunch_numbers" in driver.page_source and profiled.token not in driver.current_url
    browser.shot("flame-graph")
    driver.close()
    driver.switch_to.window(page)
    # the flame graph's own scripts (zoom, search) were refused by the UI's policy, which its document inherits:
    # a result is written where a worker's code could write, so no script of it may run beside the token
    logged = [e["message"] for e in driver.get_log("browser")
              if e["level"] == "SEVERE" and "the server responded with a status" not in e["message"]]
    assert logged and all(m.startswith("blob:") and "Content Security Policy" in m for m in logged), logged

    # a memory snapshot of every worker of the component (here the one) names the line that appends to the list
    append_line = next(i for i, line in enumerate(SOURCE.read_text(encoding="utf-8").splitlines(), 1)
                       if "# APPEND_LINE" in line)
    driver.find_element("css selector", "#profiling-worker option[value='*']").click()
    click(browser, "#profiling-memory")
    wait_until(lambda: f"profiledapp/topology.py:{append_line}" in browser.text("#profiling-view"), 60, interval=0.2,
               what="the memory snapshot naming the appending line")
    assert "Memory snapshot of " + profiled.worker in browser.text("#profiling-view-title")
    assert browser.script_errors() == []
    browser.shot("profiling")

    # a result is read only with a token, and only by a user with the topology's rights
    relay = result_links(browser, "flame graph")[0]
    path = f"/api/v1/topology/{quote(profiled.tid)}/profiling/download/{relay}"
    assert profiled.status("GET", path, profiled.token) == 200
    assert profiled.status("GET", path, None) == 401
    assert profiled.status("GET", path, profiled.outsider) == 403
    dump = f"/api/v1/topology/{quote(profiled.tid)}/profiling/dumpjstack/{profiled.worker}"
    assert profiled.status("POST", dump, profiled.outsider) == 403
