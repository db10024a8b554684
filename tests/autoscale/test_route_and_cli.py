"""The autoscaler's REST route (token required) and ``storm-py autoscale NAME``, against a nimbus daemon in this
process over the in-memory state store; bad bounds refused at submit over REST; the CLI's rendering."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from storm_py.cli.autoscale import render
from storm_py.cli.main import cli
from storm_py.client import NimbusClient
from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.errors import InvalidTopologyException
from storm_py.nimbus.daemon import NimbusDaemon
from storm_py.packaging.package import TopologyPackage, read_package
from tests.cluster.harness import APPS

pytestmark = pytest.mark.timeout(120)

TOKEN = "autoscale-token"
DECISION = {"time": 1_795_000_000.5, "component": "relay", "from": 1, "to": 3,
            "reason": "saturated: utilization 0.97 over 0.85"}
DIAGNOSIS = {"time": 1_795_000_100.0, "component": "sink", "kind": "stuck", "reason": "sink is stuck"}


@pytest.fixture
def nimbus(tmp_path: Path) -> Iterator[NimbusDaemon]:
    conf = {"nimbus.host": "127.0.0.1", "nimbus.thrift.port": 0, "nimbus.monitor.freq.secs": 0.2,
            "nimbus.auth.token": TOKEN, "storm.local.dir": str(tmp_path / "nimbus")}
    daemon = NimbusDaemon(conf, MemoryStorage(MemoryStore()))
    daemon.start()
    thread = threading.Thread(target=daemon.run, daemon=True)
    thread.start()
    yield daemon
    daemon.stop()
    thread.join(10)


def client(daemon: NimbusDaemon) -> NimbusClient:
    return NimbusClient({"nimbus.seeds": [f"127.0.0.1:{daemon.port}"], "nimbus.auth.token": TOKEN})


def package() -> TopologyPackage:
    data, name = read_package(APPS / "ackcheck")
    return TopologyPackage(data, "ackcheck.topology:build", name)


def get(url: str, token: str | None) -> tuple[int, Any]:
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_decisions_are_served_with_the_token_only_and_printed_by_the_cli(nimbus, tmp_path):
    conf = {"topology.autoscale.enabled": True, "topology.autoscale.max.parallelism": {"relay": 4},
            "topology.autoscale.period.secs": 3600}
    tid = client(nimbus).submit("scaled", package(), conf)["id"]
    nimbus.state.set_autoscale_events(tid, {"decisions": [DECISION, {"from": "x"}], "diagnoses": [DIAGNOSIS]})

    url = f"http://127.0.0.1:{nimbus.port}/api/v1/topology/{tid}/autoscale"
    assert get(url, None)[0] == 401
    assert get(url, "wrong")[0] == 401
    status, view = get(url, TOKEN)
    assert status == 200
    assert view["decisions"] == [DECISION] and view["diagnoses"] == [DIAGNOSIS]
    assert view["enabled"] is True and view["name"] == "scaled" and view["periodSecs"] == 3600
    assert view["bolts"]["relay"] == {"executors": 4, "tasks": 4, "min": 1, "max": 4}
    assert get(f"http://127.0.0.1:{nimbus.port}/api/v1/topology/scaled/autoscale", TOKEN)[1] == view  # by name

    storm_yaml = tmp_path / "storm.yaml"
    storm_yaml.write_text(yaml.safe_dump({"nimbus.seeds": [f"127.0.0.1:{nimbus.port}"],
                                          "nimbus.auth.token": TOKEN}))
    out = CliRunner().invoke(cli, ["autoscale", "scaled", "--config", str(storm_yaml)])
    assert out.exit_code == 0, out.output
    assert "time (UTC)            component  from  to  reason" in out.output
    assert "2026-11-18 11:06:40Z  relay      1     3   saturated: utilization 0.97 over 0.85" in out.output
    assert "sink       stuck      sink is stuck" in out.output
    assert "target capacity 0.7, cooldown 120s, period 3600s" in out.output
    raw = CliRunner().invoke(cli, ["autoscale", "scaled", "--json", "--config", str(storm_yaml)])
    assert json.loads(raw.output)["decisions"] == [DECISION]
    gone = CliRunner().invoke(cli, ["autoscale", "nope", "--config", str(storm_yaml)])
    assert gone.exit_code != 0 and "nope" in gone.output


def test_bad_bounds_are_refused_at_submit_naming_the_key_and_the_component(nimbus):
    with pytest.raises(InvalidTopologyException, match=r"topology.autoscale.min.parallelism of 'sink' is 5, "
                                                       r"above its 4 task\(s\)"):
        client(nimbus).submit("bad", package(), {"topology.autoscale.min.parallelism": {"sink": 5}})
    with pytest.raises(InvalidTopologyException, match=r"topology.autoscale.max.parallelism names spout 'ledger'"):
        client(nimbus).submit("bad", package(), {"topology.autoscale.max.parallelism": {"ledger": 1}})
    assert client(nimbus).topology_summaries() == []


def test_the_cli_says_when_the_autoscaler_is_off_and_when_nothing_was_decided():
    lines = render({"name": "t", "enabled": False, "bolts": {}, "decisions": [], "diagnoses": []})
    assert lines[0] == "the autoscaler is off for t (topology.autoscale.enabled: false)"
    assert lines[-1] == "no decisions yet"
