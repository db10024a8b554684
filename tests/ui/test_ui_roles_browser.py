"""The UI under each role, in headless Chromium against one dev cluster with users: an admin, a readonly user, a
topology's user and a plain user each see exactly the actions nimbus lets them take (the others are not on the
page); one click of an allowed action works and the audit log names who did it."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from storm_py.clock import wait_until
from tests.cluster.harness import DevClusterProcess
from tests.ui.conftest import Browser

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(400)]

ROLES = {"adm": "admin", "eve": "readonly", "alice": "user", "bob": "user", "dave": "user"}
EVERY_ACTION = ["activate", "deactivate", "rebalance", "kill", "debug"]


class Tenants:
    """A dev cluster with the users of :data:`ROLES` and topology ``shared`` of alice, naming bob in its
    ``topology.users``."""

    def __init__(self, cluster: DevClusterProcess) -> None:
        self.cluster = cluster
        self.url = cluster.nimbus_url().rstrip("/")
        self.tokens: dict[str, str] = {}
        self.tid = ""

    def open(self, browser: Browser, who: str, path: str) -> None:
        """Open a UI page as ``who`` (its token in the tab's session storage, as after pasting it)."""
        browser.driver.get(self.url + "/static/style.css")  # the UI's origin, no API call
        browser.driver.execute_script("sessionStorage.setItem('storm-py.token', arguments[0])", self.tokens[who])
        browser.driver.get(self.url + path)

    def get(self, who: str, path: str) -> dict[str, object]:
        req = urllib.request.Request(self.url + path, headers={"Authorization": f"Bearer {self.tokens[who]}"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            return dict(json.loads(resp.read()))

    def audit(self) -> list[dict[str, object]]:
        path = self.cluster.workdir / "logs" / "audit.log"
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def tenants(tmp_path_factory: pytest.TempPathFactory, metrics_wheel: Path) -> Iterator[Tenants]:
    root = tmp_path_factory.mktemp("tenants-ui")
    cluster = DevClusterProcess(root / "cluster", supervisors=1)
    cluster.start()
    try:
        world = Tenants(cluster)
        for name, role in ROLES.items():
            world.tokens[name] = cluster.cli("users", "add", name, "--role", role).stdout.strip()
        # the cluster token is an admin: it submits in alice's name
        out = cluster.cli("submit", str(metrics_wheel), "metricsapp.topology:build", "--name", "shared",
                          "-c", "topology.workers=1", "-c", "metrics.lag=false",
                          "-c", "topology.submitter.user=alice", "-c", 'topology.users=["bob"]')
        assert "Finished submitting topology: shared" in out.stdout, out.stdout + out.stderr
        world.tid = cluster.client().topology_id("shared")
        yield world
    finally:
        cluster.stop()


def shown_actions(browser: Browser) -> list[str]:
    """The ids of the topology page's action buttons a person can see."""
    return list(browser.driver.execute_script(
        "return Array.from(document.querySelectorAll('.actions button'))"
        ".filter(b => b.offsetParent !== null).map(b => b.id);"))


def visible(browser: Browser, css: str) -> bool:
    """Whether the element is on the page and shown."""
    return bool(browser.driver.execute_script(
        "const e = document.querySelector(arguments[0]); return Boolean(e) && e.offsetParent !== null;", css))


@pytest.mark.parametrize(("who", "cluster_actions", "actions"), [
    ("adm", "submit, users", EVERY_ACTION),
    ("eve", "none (read only)", []),
    ("bob", "submit", EVERY_ACTION),  # named in topology.users
])
def test_each_role_sees_exactly_its_actions(
    tenants: Tenants, browser: Browser, who: str, cluster_actions: str, actions: list[str],
) -> None:
    tenants.open(browser, who, "/")
    wait_until(lambda: "Cluster actions" in browser.text("#caller"), 60, interval=0.2, what="the caller's rights")
    assert f"{who}\t{ROLES[who]}\t{cluster_actions}" in browser.text("#caller")
    tenants.open(browser, who, f"/topology.html?id={quote(tenants.tid)}&refresh=1")
    wait_until(lambda: browser.driver.execute_script("return document.body.dataset.actions !== undefined"), 60,
               interval=0.2, what="the topology page to learn the caller's actions")
    assert shown_actions(browser) == actions
    assert visible(browser, "#no-actions") == (not actions)
    assert browser.script_errors() == []
    browser.shot(who)
    # the component page's profiling actions follow the same rights; its results list is for every reader
    tenants.open(browser, who, f"/component.html?topology_id={quote(tenants.tid)}&id=judge&refresh=1")
    wait_until(lambda: visible(browser, "#profiling-results") and browser.text("#profiling-worker") != "", 60,
               interval=0.2, what="the component page's profiling panel")  # fmt: skip
    assert visible(browser, "#profiling-actions") == bool(actions)
    assert browser.script_errors() == []


def test_a_user_the_topology_does_not_name_sees_no_action_and_is_told_why(tenants: Tenants, browser: Browser) -> None:
    tenants.open(browser, "dave", f"/topology.html?id={quote(tenants.tid)}&refresh=1")
    wait_until(lambda: "may not" in browser.text("#load-error"), 60, interval=0.2, what="the refusal shown")
    assert "dave" in browser.text("#load-error")
    assert shown_actions(browser) == []
    browser.shot("dave")


def test_an_allowed_click_works_and_is_audited(tenants: Tenants, browser: Browser) -> None:
    client = tenants.cluster.client()
    tenants.open(browser, "bob", f"/topology.html?id={quote(tenants.tid)}&refresh=1")
    wait_until(lambda: "deactivate" in shown_actions(browser), 60, interval=0.2, what="bob's deactivate button")
    browser.driver.find_element("id", "deactivate").click()
    wait_until(lambda: browser.text("#status") == "INACTIVE", 60, interval=0.2, what="the page to show INACTIVE")
    assert client.topology("shared")["status"] == "INACTIVE"
    entries = [(e["user"], e["action"], e["target"], e["result"]) for e in tenants.audit()]
    assert ("bob", "deactivate", tenants.tid, "ok") in entries
    browser.shot("bob-deactivated")


def test_the_pages_name_the_caller_and_its_actions_for_other_front_ends(tenants: Tenants) -> None:
    every = [*EVERY_ACTION, "logconfig", "profile"]
    page, component = f"/api/v1/topology/{tenants.tid}", f"/api/v1/topology/{tenants.tid}/component/judge"
    for who, actions in (("adm", every), ("bob", every), ("eve", [])):
        assert {k: tenants.get(who, page)[k] for k in ("user", "actions")} == {"user": who, "actions": actions}
        assert tenants.get(who, component)["actions"] == actions
    summary = tenants.get("bob", "/api/v1/cluster/summary")
    assert {k: summary[k] for k in ("user", "role", "actions")} == {"user": "bob", "role": "user",
                                                                    "actions": ["submit"]}
