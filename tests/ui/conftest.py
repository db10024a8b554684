"""Fixtures of the UI and metrics tests: headless Chromium, a dev cluster running the metrics test topology.

The browser is Debian's ``chromium`` driven through its ``chromium-driver`` (never a driver that downloads a
browser), with a fresh profile per test; screenshots go to ``test-output/ui/`` at the repository root (ignored by
git) and their paths are printed.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from storm_py.client import NimbusClient
from storm_py.clock import wait_until
from tests.cluster.harness import REPO, DevClusterProcess, build_wheel

APP = Path(__file__).parent / "apps" / "metricsapp"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
SHOTS = REPO / "test-output" / "ui"
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1400,1100",
)

#: the metrics topology's settings: 100 trees (10 fail, 10 time out), 10 tuples/s into a bolt sleeping 50 ms
TREES, RATE, SLEEP_MS, BUCKET, TIMEOUT = 100, 10, 50, 2, 4


def topology_conf(consumer_file: Path) -> list[str]:
    """``-c`` options of the metrics topology."""
    register = ('[{"class": "metricsapp.topology:FileConsumer", "parallelism.hint": 1, '
                f'"argument": "{consumer_file}"}}]')
    return [
        "-c", "topology.workers=2", "-c", f"topology.message.timeout.secs={TIMEOUT}",
        "-c", "worker.log.level.reset.poll.secs=1",
        "-c", f"metrics.trees={TREES}", "-c", f"metrics.rate={RATE}", "-c", f"metrics.sleep.ms={SLEEP_MS}",
        "-c", f"metrics.bucket={BUCKET}", "-c", f"topology.builtin.metrics.bucket.size.secs={BUCKET}",
        "-c", f"topology.metrics.consumer.register={register}",
    ]


class Browser:
    """A Chromium page plus screenshots into the test output."""

    def __init__(self, driver: Any, name: str) -> None:
        self.driver = driver
        self.name = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:80]

    def shot(self, label: str) -> Path:
        SHOTS.mkdir(parents=True, exist_ok=True)
        path = SHOTS / f"{self.name}-{label}.png"
        self.driver.save_screenshot(str(path))
        print(f"screenshot: {path}")
        return path

    def script_errors(self) -> list[str]:
        """Errors the page's scripts logged to the console (failed requests the test caused are left out)."""
        return [e["message"] for e in self.driver.get_log("browser")
                if e["level"] == "SEVERE" and "the server responded with a status" not in e["message"]]

    def text(self, css: str) -> str:
        """The element's text ("" while it is not on the page), read in one script call (the page re-renders)."""
        text = self.driver.execute_script(
            "const e = document.querySelector(arguments[0]); return e ? (e.innerText ?? e.textContent) : '';", css)
        return str(text or "")


@pytest.fixture
def browser(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Browser]:
    """Headless Debian Chromium with a fresh profile."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    assert shutil.which(CHROMIUM) and shutil.which(CHROMEDRIVER), "needs Debian's chromium and chromium-driver"
    options = Options()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield Browser(driver, request.node.name)
    finally:
        driver.quit()


@pytest.fixture(scope="session")
def metrics_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The metrics test topology as a wheel."""
    return build_wheel(APP, tmp_path_factory.mktemp("metrics-wheel"))


class MetricsCluster:
    """A dev cluster running topology ``judged`` (the metrics topology) with a file metrics consumer."""

    def __init__(self, cluster: DevClusterProcess, consumer_file: Path, wheel: Path) -> None:
        self.cluster = cluster
        self.consumer_file = consumer_file
        self.wheel = wheel
        self.conf = cluster.client_conf()
        self.token = str(self.conf["nimbus.auth.token"])
        self.url = cluster.nimbus_url().rstrip("/")

    def client(self) -> NimbusClient:
        return NimbusClient(self.conf)

    def open(self, browser: Browser, path: str) -> None:
        """Open a UI page with the cluster's token already in the tab's session storage (as after pasting it)."""
        browser.driver.get(self.url + "/static/style.css")  # the UI's origin, no API call
        browser.driver.execute_script("sessionStorage.setItem('storm-py.token', arguments[0])", self.token)
        browser.driver.get(self.url + path)

    def submit(self, name: str, consumer_file: Path, *options: str) -> str:
        out = self.cluster.cli("submit", str(self.wheel), "metricsapp.topology:build", "--name", name,
                               *topology_conf(consumer_file), *options)
        assert f"Finished submitting topology: {name}" in out.stdout
        client = self.client()
        wait_until(lambda: bool(client.topology(name)["workers"]), 120, interval=0.25, what=f"{name}'s workers")
        return client.topology_id(name)


@pytest.fixture(scope="package")
def metrics_cluster(tmp_path_factory: pytest.TempPathFactory, metrics_wheel: Path) -> Iterator[MetricsCluster]:
    """One dev cluster for the UI tests, with ``judged`` submitted; stopped after them (not at the end of the run)."""
    root = tmp_path_factory.mktemp("metrics-cluster")
    cluster = DevClusterProcess(root / "cluster", supervisors=2)
    cluster.start()
    try:
        mc = MetricsCluster(cluster, root / "consumer.jsonl", metrics_wheel)
        mc.submit("judged", mc.consumer_file)
        yield mc
    finally:
        cluster.stop()
