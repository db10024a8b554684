"""A page of another origin, opened in real headless Chromium, attacks the cluster's endpoints on loopback: a
cross-site simple POST (``text/plain``), a form POST and a reading ``fetch`` change nothing and read nothing.
Then the UI's own flow: the page asks for the token once, keeps it in session storage and shows the cluster
(screenshots in the test's tmp directory and test-output/ui/)."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from storm_py.clock import wait_until
from tests.security.endpoints import TOKEN, Endpoints, loopback_endpoints
from tests.ui.conftest import Browser, browser  # noqa: F401  (the headless Chromium fixture)

pytestmark = [pytest.mark.timeout(180)]

ATTACK = """<!doctype html><html><body>
<form id="form" method="POST" action="{nimbus}/api/v1/topology/x/kill/0" target="sink">
  <input name="wait" value="0"></form>
<form id="plain" method="POST" action="{ui}/api/v1/uploadTopology" target="sink2" enctype="text/plain">
  <input name='{{"name": "pwn", "x": "' value='"}}'></form>
<iframe name="sink"></iframe><iframe name="sink2"></iframe>
<pre id="results"></pre>
<script>
const results = {{}};
async function attempt(label, url, init) {{
  try {{
    const reply = await fetch(url, init);
    results[label] = "read " + reply.status + " " + (await reply.text());
  }} catch (e) {{ results[label] = "blocked " + e; }}
}}
(async () => {{
  const simple = {{method: "POST", mode: "no-cors", headers: {{"Content-Type": "text/plain"}},
                  body: '{{"name": "pwn", "entry": "x:y", "package": ""}}'}};
  await attempt("simple-nimbus", "{nimbus}/api/v1/uploadTopology", simple);
  await attempt("simple-ui", "{ui}/api/v1/uploadTopology", simple);
  await attempt("simple-drpc", "{drpc}/drpc/f", simple);
  await attempt("read-nimbus", "{nimbus}/api/v1/cluster/configuration", {{}});
  await attempt("read-ui", "{ui}/api/v1/cluster/configuration", {{}});
  await attempt("read-logs", "{logviewer}/api/v1/logs/x", {{}});
  await attempt("read-guess", "{nimbus}/api/v1/cluster/configuration",
                {{headers: {{"Authorization": "Bearer guess"}}}});
  document.getElementById("form").submit();
  document.getElementById("plain").submit();
  document.getElementById("results").textContent = JSON.stringify(results);
  document.title = "attacked";
}})();
</script></body></html>
"""


@pytest.fixture(scope="module")
def endpoints(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Endpoints]:
    with loopback_endpoints(tmp_path_factory.mktemp("browser-endpoints")) as found:
        yield found


@pytest.fixture
def attacker_site(tmp_path: Path, endpoints: Endpoints) -> Iterator[str]:
    """An HTTP server on another port serving the attack page (another origin than every endpoint)."""
    site = tmp_path / "site"
    site.mkdir()
    urls = {name: f"http://127.0.0.1:{endpoints.servers[key].port}"
            for name, key in (("nimbus", "nimbus"), ("ui", "ui"), ("drpc", "drpc-http"), ("logviewer", "logviewer"))}
    (site / "attack.html").write_text(ATTACK.format(**urls), encoding="utf-8")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/attack.html"
    finally:
        server.shutdown()
        server.server_close()


def test_a_page_of_another_origin_changes_nothing_and_reads_nothing(
    endpoints: Endpoints, attacker_site: str, browser: Browser,  # noqa: F811
) -> None:
    endpoints.handled.clear()
    endpoints.refused.clear()
    browser.driver.get(attacker_site)
    wait_until(lambda: browser.driver.title == "attacked", 60, interval=0.2, what="the attack page to finish")
    # the two form posts navigate their frames: wait until both reached their servers
    wait_until(lambda: {("nimbus", "/api/v1/topology/x/kill/0"), ("ui", "/api/v1/uploadTopology")}
               <= {(r[0], r[2]) for r in endpoints.refused if r[1] == "POST" and r[2].endswith(("kill/0", "Topology"))},
               30, interval=0.2, what="the form posts to arrive")
    results = browser.text("#results")
    print(results)
    assert "nimbus.auth.token" not in results and "storm.zookeeper" not in results and '"files"' not in results
    assert "read 200" not in results
    assert endpoints.handled == []  # no route ran: nothing changed, nothing was read
    posts = {(r[0], r[2]): r[3] for r in endpoints.refused if r[1] == "POST"}
    assert posts[("nimbus", "/api/v1/uploadTopology")] == 403  # foreign Origin (and text/plain)
    assert posts[("ui", "/api/v1/uploadTopology")] == 403
    assert posts[("drpc-http", "/drpc/f")] == 403
    assert posts[("nimbus", "/api/v1/topology/x/kill/0")] == 403  # the form post
    gets = {r[3] for r in endpoints.refused if r[1] == "GET"}
    assert gets and gets <= {401, 403}
    browser.shot("attack-page")


def test_the_ui_asks_for_the_token_once_and_keeps_it_for_the_tab(
    endpoints: Endpoints, browser: Browser, tmp_path: Path,  # noqa: F811
) -> None:
    driver = browser.driver
    ui = f"http://127.0.0.1:{endpoints.servers['ui'].port}"
    driver.get(ui + "/")
    wait_until(lambda: bool(driver.find_elements("id", "token-prompt-input")), 30, interval=0.2,
               what="the token prompt")
    driver.save_screenshot(str(tmp_path / "ui-token-prompt.png"))
    browser.shot("token-prompt")
    driver.find_element("id", "token-prompt-input").send_keys("a-wrong-token")
    driver.find_element("id", "token-prompt-use").click()
    wait_until(lambda: "refused" in browser.text("#token-prompt"), 30, interval=0.2, what="the refusal")
    driver.find_element("id", "token-prompt-input").send_keys(TOKEN)
    driver.find_element("id", "token-prompt-use").click()
    wait_until(lambda: "Leader" in browser.text("#nimbus-summary"), 30, interval=0.2, what="the cluster page")
    assert not driver.find_elements("id", "token-prompt")
    driver.save_screenshot(str(tmp_path / "ui-after-token.png"))
    browser.shot("after-token")
    print(f"screenshots: {tmp_path / 'ui-token-prompt.png'} {tmp_path / 'ui-after-token.png'}")
    # kept in this tab's session storage, never in the URL or a cookie; the next page asks nothing
    assert driver.execute_script("return sessionStorage.getItem('storm-py.token')") == TOKEN
    assert TOKEN not in driver.current_url and driver.get_cookies() == []
    driver.get(ui + "/topology.html?id=none")
    wait_until(lambda: "not alive" in browser.text("#load-error").lower() or bool(browser.text("#load-error")),
               30, interval=0.2, what="the topology page's answer")
    assert not driver.find_elements("id", "token-prompt")
    assert browser.script_errors() == []
