"""Acceptance: bad input gets a clear one-line error and a non-zero exit, and running topologies keep running.

One dev cluster serves the module with a topology (``ackcheck``) streaming throughout; after every test it must
still make progress and every daemon must still be up.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from storm_py.clock import wait_until
from storm_py.dev.zookeeper import free_port
from storm_py.transport.zmq import ZmqTransport
from tests.cluster.harness import DevClusterProcess, Ledger, alive, storm_py_command

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def running(zookeeper, wheels, tmp_path_factory) -> Iterator[tuple[DevClusterProcess, Ledger]]:
    """A dev cluster with the ackcheck topology streaming slowly for the whole module."""
    root = tmp_path_factory.mktemp("bad-input")
    cluster = DevClusterProcess(
        root / "cluster", zookeeper=zookeeper.connect_string,
        conf={"storm.zookeeper.root": f"/tests/bad-input-{root.name}/storm"},
    )
    try:
        cluster.start()
        ledger = Ledger(root / "ledger.db", 200_000)
        cluster.cli("submit", str(wheels["ackcheck"]), "ackcheck.topology:build", "--name", "steady",
                    "-c", "topology.workers=2", "-c", f"ackcheck.db={ledger.path}", "-c", "ackcheck.rate=300",
                    "-c", "ackcheck.parallelism=2")
        wait_until(lambda: ledger.acked() > 0, 120, interval=0.2, what="the steady topology to flow")
        yield cluster, ledger
    finally:
        cluster.stop()


@pytest.fixture(autouse=True)
def still_running(running) -> Iterator[None]:
    cluster, ledger = running
    yield
    before = ledger.acked()
    wait_until(lambda: ledger.acked() > before + 50, 60, interval=0.2, what="the steady topology to go on")
    assert all(alive(d["pid"]) for d in cluster.info()["daemons"])


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode != 0, proc.stdout
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("Error: ")
    return lines[0]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("badapps.broken:build", "cannot import module 'badapps.broken'"),
        ("badapps.notopo:build", "returned NoneType, not a topology"),
        ("badapps.invalid:build", "subscribes to non-existent component 'wrods'"),
        ("badapps.notopo:no_such_function", "has no function 'no_such_function'"),
        ("not an entry", "is not of the form MODULE:FUNCTION"),
    ],
)
def test_a_bad_wheel_or_function_is_refused(running, wheels, entry, message) -> None:
    cluster, _ = running
    err = one_line_error(cluster.cli("submit", str(wheels["badapps"]), entry, "--name", "bad", check=False))
    assert message in err
    assert "bad" not in [t["name"] for t in cluster.client().topology_summaries()]


def test_a_file_that_is_no_wheel_is_refused(running, tmp_path) -> None:
    cluster, _ = running
    text = tmp_path / "topology.whl"
    text.write_text("not a zip")
    assert "is not a wheel or zip archive" in one_line_error(
        cluster.cli("submit", str(text), "a:b", check=False)
    )
    assert "does not exist" in one_line_error(cluster.cli("submit", str(tmp_path / "nope.whl"), "a:b", check=False))


def test_a_name_in_use_is_refused(running, wheels) -> None:
    cluster, _ = running
    err = one_line_error(cluster.cli("submit", str(wheels["wordcount"]), "examples.word_count:build",
                                     "--name", "steady", check=False))
    assert "already alive" in err


def test_rebalance_of_an_unknown_component_is_refused(running) -> None:
    cluster, _ = running
    err = one_line_error(cluster.cli("rebalance", "steady", "-e", "nosuchbolt=2", check=False))
    assert "unknown component 'nosuchbolt'" in err
    err = one_line_error(cluster.cli("rebalance", "steady", "-e", "relay=99", check=False))
    assert "between 1 and its 2 task(s)" in err
    assert cluster.client().topology("steady")["status"] == "ACTIVE"


def test_commands_on_an_unknown_topology_fail(running) -> None:
    cluster, _ = running
    for args in (["kill", "ghost"], ["activate", "ghost"], ["deactivate", "ghost"], ["rebalance", "ghost"],
                 ["logs", "ghost"]):
        assert "topology 'ghost' is not alive" in one_line_error(cluster.cli(*args, check=False))


def test_a_corrupted_frame_on_a_worker_socket_is_rejected(running) -> None:
    cluster, _ = running
    client = cluster.client()
    workers = client.topology("steady")["workers"]
    target = workers[0]
    transport = ZmqTransport()
    try:
        sender = transport.connect(f"tcp://{target['host']}:{target['port']}")
        for junk in (b"\x01\xc1 not msgpack", b"\x09 wrong version", b"", b"\x01\x93\x00\xa1x\x91\x96\x01"):
            assert sender.send(junk, timeout=5)

        def rejected() -> int:
            # the dev cluster authenticates frames: junk fails its tag before it is decoded
            for w in client.topology("steady")["workers"]:
                if w["port"] == target["port"]:
                    t = w["transfer"]
                    return int(t.get("frames_rejected", 0)) + int(t.get("frames_unauthenticated", 0))
            return 0

        wait_until(lambda: rejected() >= 4, 30, interval=0.2, what="the worker to count 4 rejected frames")
    finally:
        transport.close()
    log = (cluster.artifacts(client.topology_id("steady")) / str(target["port"]) / "worker.log").read_text()
    assert "rejected a frame" in log or "its tag is not this topology's" in log


def test_a_value_the_codec_refuses_fails_its_tuple_at_once(running, wheels, tmp_path: Path) -> None:
    """The same as LocalCluster with topology.testing.always.try.serialize (tests/core/test_try_serialize.py)."""
    cluster, _ = running
    ledger = Ledger(tmp_path / "sets.db", 20)
    client = cluster.client()
    cluster.cli("submit", str(wheels["ackcheck"]), "ackcheck.topology:build", "--name", "sets",
                "-c", "topology.workers=2", "-c", f"ackcheck.db={ledger.path}", "-c", "ackcheck.parallelism=2",
                "-c", "ackcheck.unencodable=true", "-c", "topology.message.timeout.secs=600")
    try:
        # every payload is a set: a tuple crossing workers is refused by the codec and its tree fails at once
        # (the message timeout is 600 s), so the spout replays it
        wait_until(lambda: ledger.replays() > 0, 60, interval=0.2, what="a refused tuple to fail and be replayed")

        def errors() -> list[str]:
            return [e["error"] for c in ("ledger", "relay") for e in client.component("sets", c)["componentErrors"]]

        wait_until(lambda: any("cannot encode" in e and "set" in e for e in errors()), 30, interval=0.2,
                   what="the codec's error in the topology's errors")
    finally:
        cluster.cli("kill", "sets", "-w", "0")


def test_an_unreachable_nimbus_is_a_one_line_error(running) -> None:
    proc = subprocess.run(
        [*storm_py_command(), "list", "-c", f"nimbus.seeds=['127.0.0.1:{free_port()}']",
         "-c", "storm.nimbus.retry.times=0"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert "cannot reach nimbus" in one_line_error(proc)


def test_daemons_without_zookeeper_say_they_wait_then_fail_with_one_line(running, tmp_path: Path) -> None:
    dead_zk = ["-c", "storm.zookeeper.servers=['127.0.0.1']", "-c", f"storm.zookeeper.port={free_port()}",
               "-c", "storm.zookeeper.connection.timeout=1000", "-c", f"storm.local.dir={tmp_path}",
               "-c", "nimbus.thrift.port=0", "-c", "storm.zookeeper.start.wait.secs=2"]
    for daemon in ("nimbus", "supervisor"):
        proc = subprocess.run([*storm_py_command(), daemon, *dead_zk], capture_output=True, text=True,
                              timeout=60, check=False)
        assert proc.returncode != 0
        assert "trying again (attempt 2" in proc.stderr  # a ZooKeeper still starting is waited for, and said
        assert proc.stderr.rstrip().splitlines()[-1].startswith("Error: could not connect to ZooKeeper")


def test_a_bad_config_value_is_a_usage_error(running) -> None:
    cluster, _ = running
    proc = cluster.cli("list", "-c", "topology.workers=many", check=False)
    assert proc.returncode == 2 and "topology.workers" in one_line_error(proc)
    proc = cluster.cli("rebalance", "steady", "-e", "relay", check=False)
    assert proc.returncode == 2 and "COMPONENT=N" in one_line_error(proc)
    proc = cluster.cli("kill", check=False)
    assert proc.returncode == 2 and "Missing argument 'NAME'" in one_line_error(proc)
