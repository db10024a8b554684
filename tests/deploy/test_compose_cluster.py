"""docker-compose.yml run for real, as docs/deploying.md tells: the images built (from local Debian bases made by
scripts/local-images.sh where no registry's are at hand), the cluster up, a wheel submitted from the host through
the published port with the client configuration the compose file documents, exact acked counts; a supervisor
container killed (its workers move to the other), the nimbus container restarted (the topology survives in the
volumes and a new one runs), every container stopping promptly on SIGTERM, and nothing left behind.

Docker where its daemon answers, else podman (tests/deploy/containers.py); never skipped.
"""

from __future__ import annotations

import http.client
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from storm_py.client import NimbusClient
from storm_py.clock import wait_until
from storm_py.dev.zookeeper import free_port
from tests.cluster.harness import REPO, build_wheel, storm_py_command, word_count_project
from tests.deploy.containers import Engine
from tests.deploy.images import base_images, drop_older_project_images, image_ids, image_tag

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(1500)]

COMPOSE = REPO / "docker-compose.yml"
#: what the test adds to conf/docker/storm.yaml: a lost supervisor noticed in seconds, not a minute
FAST = {
    "nimbus.monitor.freq.secs": 1,
    "nimbus.supervisor.timeout.secs": 10,
    "nimbus.task.timeout.secs": 10,
    "supervisor.worker.timeout.secs": 10,
    "supervisor.monitor.frequency.secs": 1,
    "worker.heartbeat.frequency.secs": 1,
    "storm.zookeeper.session.timeout": 6000,
    "storm.nimbus.retry.times": 40,
    "storm.nimbus.retry.interval.millis": 250,
    "storm.nimbus.retry.intervalceiling.millis": 1000,
}
def health(port: int) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/health")
        return conn.getresponse().status
    except OSError:
        return 0
    finally:
        conn.close()


def submit(wheel: Path, name: str, sentences: int, client: Path, port: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*storm_py_command(), "submit", str(wheel), "examples.word_count:build", "--name", name,
         "-c", "topology.workers=2", "-c", f"wordcount.sentences={sentences}", "--config", str(client),
         "-c", f"nimbus.seeds=['127.0.0.1:{port}']"],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip


def leftovers(engine: Engine, project: str) -> list[str]:
    label = f"label=com.docker.compose.project={project}"
    found = []
    for what in (["ps", "-a"], ["volume", "ls"], ["network", "ls"]):
        out = engine.run(*what, "--filter", label, "--format", "{{.Names}}" if what[0] == "ps" else "{{.Name}}")
        found += [f"{what[0]} {n}" for n in out.stdout.split()]
    return found


def test_compose_cluster_runs_a_topology_survives_a_lost_supervisor_and_a_nimbus_restart(
    engine: Engine, tmp_path: Path
) -> None:
    timings: dict[str, float] = {}
    started = time.monotonic()
    bases = base_images(engine)
    timings["bases"] = time.monotonic() - started
    project = f"stormpy{uuid.uuid4().hex[:8]}"
    image = image_tag(bases)
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    conf_dir.chmod(0o755)
    conf_text = (REPO / "conf" / "docker" / "storm.yaml").read_text(encoding="utf-8")
    (conf_dir / "storm.yaml").write_text(conf_text + yaml.safe_dump(FAST), encoding="utf-8")
    (conf_dir / "storm.yaml").chmod(0o644)
    port, ui_port, drpc_port, drpc_http_port = (free_port() for _ in range(4))
    env = {**bases, "STORM_PY_IMAGE": image, "STORM_PY_CONF_DIR": str(conf_dir),
           "STORM_PY_NIMBUS_PORT": str(port), "STORM_PY_UI_PORT": str(ui_port),
           "STORM_PY_DRPC_PORT": str(drpc_port), "STORM_PY_DRPC_HTTP_PORT": str(drpc_http_port)}  # fmt: skip

    def compose(*args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess[str]:
        return engine.compose_run(project, [COMPOSE], *args, env=env, timeout=timeout, check=check, cwd=REPO)

    try:
        if engine.run("image", "inspect", image, check=False).returncode != 0:
            mark = time.monotonic()
            dangling = image_ids(engine, "dangling=true")
            compose("build", timeout=1200)
            timings["build"] = time.monotonic() - mark
            # the build stage's image, left untagged
            made = image_ids(engine, "dangling=true") - dangling
            if made:
                engine.run("rmi", *made, check=False)
        mark = time.monotonic()
        compose("up", "-d")
        # the client configuration, as docker-compose.yml documents it: the generated secrets file, 0600
        secrets = compose("run", "--rm", "--entrypoint", "cat", "secrets", "/secrets/storm.yaml").stdout
        client_path = tmp_path / "storm-client.yaml"
        client_path.write_text(secrets, encoding="utf-8")
        client_path.chmod(0o600)
        client_conf: dict[str, Any] = {**yaml.safe_load(secrets), "nimbus.seeds": [f"127.0.0.1:{port}"],
                                       "storm.local.dir": str(tmp_path / "client")}  # fmt: skip
        assert client_conf["nimbus.auth.token"] and client_conf["storm.zookeeper.auth.payload"]
        client = NimbusClient(client_conf)

        def supervisors() -> set[str]:
            try:
                return {s["host"] for s in client.supervisor_summary()}
            except Exception:  # nimbus not answering yet
                return set()

        wait_until(lambda: health(port) == 200, 120.0, interval=0.5, what="nimbus's /health on the published port")
        wait_until(lambda: supervisors() == {"supervisor1", "supervisor2"}, 120.0, interval=0.5,
                   what="both supervisors registered")  # fmt: skip
        timings["up"] = time.monotonic() - mark

        # a wrong token in the client configuration: refused, and said so
        wrong = tmp_path / "wrong.yaml"
        wrong.write_text(yaml.safe_dump({**yaml.safe_load(secrets), "nimbus.auth.token": "not-the-token"}))
        wrong.chmod(0o600)
        refused = subprocess.run([*storm_py_command(), "list", "--config", str(wrong),
                                  "-c", f"nimbus.seeds=['127.0.0.1:{port}']"],
                                 capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
        assert refused.returncode != 0 and "token" in refused.stderr.lower(), refused.stderr

        wheel = build_wheel(word_count_project(tmp_path / "src"), tmp_path / "wheels")
        sentences = 400
        submitted = submit(wheel, "wordcount", sentences, client_path, port)
        assert submitted.returncode == 0, submitted.stderr

        def page(name: str) -> dict[str, Any]:
            return client.topology(name)

        wait_until(lambda: int(page("wordcount")["spouts"][0]["acked"]) == sentences, 240.0, interval=0.5,
                   what=f"{sentences} sentences acked")  # fmt: skip
        first = page("wordcount")
        assert first["spouts"][0]["failed"] == 0 and int(first["spouts"][0]["acked"]) == sentences
        assert {w["host"] for w in first["workers"]} == {"supervisor1", "supervisor2"}

        # a supervisor's container killed: nimbus moves its worker to the other
        mark = time.monotonic()
        compose("kill", "supervisor1")

        def moved() -> bool:
            workers = page("wordcount")["workers"]
            return len(workers) == 2 and {w["host"] for w in workers} == {"supervisor2"}

        wait_until(moved, 120.0, interval=0.5, what="both workers on supervisor2")
        timings["workers moved"] = time.monotonic() - mark
        wait_until(lambda: supervisors() == {"supervisor2"}, 60.0, interval=0.5, what="supervisor1's session gone")

        # nimbus's container restarted: the topology is still there (ZooKeeper's and nimbus's volumes), running
        mark = time.monotonic()
        compose("restart", "nimbus")
        wait_until(lambda: health(port) == 200, 120.0, interval=0.5, what="nimbus back after its restart")
        wait_until(lambda: page("wordcount")["id"] == first["id"] and moved(), 120.0, interval=0.5,
                   what="the topology back in nimbus's view")  # fmt: skip
        assert page("wordcount")["status"] == "ACTIVE"
        timings["nimbus back"] = time.monotonic() - mark
        # and a new topology runs to its exact count
        more = 300
        submitted = submit(wheel, "wordcount2", more, client_path, port)
        assert submitted.returncode == 0, submitted.stderr
        wait_until(lambda: int(page("wordcount2")["spouts"][0]["acked"]) == more, 240.0, interval=0.5,
                   what=f"{more} sentences acked after nimbus's restart")  # fmt: skip
        assert page("wordcount2")["spouts"][0]["failed"] == 0

        # SIGTERM stops every container promptly (compose would wait 10 s for one that ignores it)
        mark = time.monotonic()
        compose("stop", "-t", "10")
        timings["stop"] = time.monotonic() - mark
        assert timings["stop"] < 9.0, timings
    finally:
        compose("down", "-v", "-t", "3", check=False)
        drop_older_project_images(engine, image)
        print(f"\ncompose test timings (s): {', '.join(f'{k} {v:.1f}' for k, v in timings.items())}")
    assert leftovers(engine, project) == []
    shutil.rmtree(tmp_path / "wheels", ignore_errors=True)
