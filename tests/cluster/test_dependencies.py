"""Topology dependencies on a real cluster: a wheel requiring a pure-Python package (built here) and numpy runs
from the wheelhouse uploaded at submit, with no index reachable from the supervisor; two topologies with the same
requirement set share one environment, removed once both are killed; a broken environment is an error on the
topology; an unsatisfiable requirement and a wheel for another platform fail the submit; a direct-URL requirement
is fetched by the submitting client only, and deploys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from storm_py.clock import wait_until
from storm_py.deps.wheelhouse import WHEELHOUSE
from tests.cluster.harness import DevClusterProcess, storm_py_command
from tests.cluster.wheelmaker import ONE_INTO_PROBE, ONE_NUMBER_SPOUT, make_wheel
from tests.security.test_env_build import Server

pytestmark = pytest.mark.slow

#: Where the numpy wheel is downloaded once (from PyPI) and kept between runs.
WHEEL_CACHE = Path(os.environ.get("STORM_PY_TEST_WHEELHOUSE", Path.home() / ".cache" / "storm-py-tests" / "wheelhouse"))

APP = '''"""A spout of one number and a bolt that needs tinydep and numpy (imported where they run, not at import)."""
import json
import sys

from storm_py import BasicBolt, Spout, TopologyBuilder


''' + ONE_NUMBER_SPOUT + '''

class Probe(BasicBolt):
    def prepare(self, conf, context):
        self.out = conf["depsapp.out"]

    def execute(self, tup, collector):
        import numpy
        import storm_py
        import tinydep

        row = {"sum": int(numpy.arange(tup.values[0]).sum()) + tinydep.X, "numpy": numpy.__file__,
               "prefix": sys.prefix, "storm_py": storm_py.__file__}
        with open(self.out, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\\n")

    def declare_output_fields(self, declarer):
        pass


''' + ONE_INTO_PROBE


@pytest.fixture(scope="session")
def numpy_wheelhouse() -> Path:
    """A folder holding a numpy wheel for this interpreter (downloaded once)."""
    WHEEL_CACHE.mkdir(parents=True, exist_ok=True)
    if not list(WHEEL_CACHE.glob("numpy-*.whl")):
        subprocess.run([sys.executable, "-m", "pip", "download", "--only-binary=:all:", "--no-deps", "-q",
                        "-d", str(WHEEL_CACHE), "numpy"], check=True, timeout=300)
    return WHEEL_CACHE


def client_wheelhouse(tmp_path: Path, numpy_wheelhouse: Path) -> Path:
    """The wheelhouse given to submit: numpy's wheel and tinydep, built here."""
    wh = tmp_path / "wheelhouse"
    make_wheel(wh, "tinydep", "1.0", {"tinydep.py": "X = 100\n"})
    for whl in numpy_wheelhouse.glob("numpy-*.whl"):
        (wh / whl.name).symlink_to(whl)
    return wh


def submit(cluster: DevClusterProcess, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*storm_py_command(), "submit", *args, "--config", str(cluster.config)],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "PIP_NO_INDEX": "1"})


def envs(cluster: DevClusterProcess) -> list[Path]:
    return sorted(p for p in cluster.workdir.glob("supervisor-*/supervisor/envs/*") if p.is_dir())


def rows(path: Path) -> list[dict[str, object]]:
    try:
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    except OSError:
        return []


def test_topologies_run_in_a_shared_environment_removed_after_both_are_killed(
    dev_cluster: Callable[..., DevClusterProcess], tmp_path: Path, numpy_wheelhouse: Path
) -> None:
    app = make_wheel(tmp_path / "dist", "depsapp", "0.1", {"depsapp.py": APP}, requires=("tinydep>=1", "numpy"))
    wh = client_wheelhouse(tmp_path, numpy_wheelhouse)
    cluster = dev_cluster(supervisors=1, conf={"supervisor.env.cleanup.secs": 1})
    outs = {name: tmp_path / f"{name}.jsonl" for name in ("dep-a", "dep-b")}
    for name, out in outs.items():
        proc = submit(cluster, str(app), "depsapp:build", "--name", name, "--wheelhouse", str(wh),
                      "-c", f"depsapp.out={out}")
        assert proc.returncode == 0, proc.stderr
        assert "numpy-" in proc.stdout and "tinydep-1.0-py3-none-any.whl" in proc.stdout
    shown: list[str] = []

    def running() -> bool:  # meanwhile, the topology's page says what its worker waits for
        shown.extend(cluster.client().topology("dep-a").get("environment") or [])
        return all(rows(out) for out in outs.values())

    wait_until(running, 240, interval=0.25, what="both topologies to run their bolt")
    # the launch waited for the build (the page shows it when the build outlasts a heartbeat: not every time)
    log = (cluster.workdir / "logs" / "supervisor-1.log").read_text(encoding="utf-8")
    assert "waits: building the environment" in log
    assert all("building the environment" in line for line in shown), shown

    def settled() -> bool:  # the supervisor's next heartbeat after the launch says so
        page = cluster.client().topology("dep-a")
        return page["environment"] == [] and [s["state"] for s in page["environmentStates"]] == ["ready"]

    wait_until(settled, 60, interval=0.25, what="dep-a's environment shown as ready, nothing waiting")
    (env,) = envs(cluster)  # one environment for the two topologies
    for out in outs.values():
        row = rows(out)[0]
        assert row["sum"] == 106  # 0+1+2+3 from numpy, 100 from tinydep
        assert Path(str(row["prefix"])) == env
        assert Path(str(row["numpy"])).is_relative_to(env)
        assert not Path(str(row["storm_py"])).is_relative_to(env)  # the supervisor's, linked
    assert not list(env.rglob("__pycache__"))  # workers write nothing into the shared environment
    cluster.cli("kill", "dep-a", "-w", "0")
    wait_until(lambda: not any(t["name"] == "dep-a" for t in cluster.client().topology_summaries()), 60,
               interval=0.25, what="dep-a to be gone")
    assert envs(cluster) == [env]  # still used by dep-b
    cluster.cli("kill", "dep-b", "-w", "0")
    wait_until(lambda: not envs(cluster), 60, interval=0.25, what="the environment to be removed")

    # a wheelhouse holding a file that is no wheel: refused at upload, naming it
    garbage = make_wheel(tmp_path / "dist", "garbageapp", "0.1", {
        "garbageapp.py": APP, f"{WHEELHOUSE}/garbage-1.0-py3-none-any.whl": "not a zip"})
    proc = submit(cluster, str(garbage), "garbageapp:build", "--name", "dep-garbage")
    assert proc.returncode != 0
    assert "garbage-1.0-py3-none-any.whl is not a wheel or zip archive" in proc.stderr

    # a wheelhouse that cannot be installed (a wheel for another platform): an error on the topology, no crash
    # loop of the supervisor
    broken = make_wheel(tmp_path / "dist", "brokenapp", "0.1", {"brokenapp.py": APP})
    foreign = make_wheel(tmp_path / "foreign", "fastlib", "1.0", {"fastlib.py": ""}, tag="cp311-cp311-win_amd64")
    with zipfile.ZipFile(broken, "a") as zf:
        zf.write(foreign, f"{WHEELHOUSE}/{foreign.name}")
    proc = submit(cluster, str(broken), "brokenapp:build", "--name", "dep-broken", "-c", f"depsapp.out={tmp_path}/x")
    assert proc.returncode == 0, proc.stderr

    def reported() -> bool:
        return "environment cannot be built" in json.dumps(cluster.client().topology("dep-broken"))

    wait_until(reported, 60, interval=0.5, what="the failed environment build on the topology's errors")

    def failed() -> bool:
        states = cluster.client().topology("dep-broken")["environmentStates"]
        return any(s["state"] == "failed" and "environment cannot be built" in s["detail"] for s in states)

    wait_until(failed, 60, interval=0.5, what="the failed environment in the topology's environmentStates")
    assert cluster.proc is not None and cluster.proc.poll() is None


def test_an_unsatisfiable_requirement_or_a_foreign_wheel_fails_the_submit(tmp_path: Path) -> None:
    conf = tmp_path / "client.yaml"
    conf.write_text("nimbus.seeds: ['127.0.0.1:1']\n", encoding="utf-8")
    env = {**os.environ, "PIP_NO_INDEX": "1"}
    app = make_wheel(tmp_path / "dist", "needy", "0.1", {"needy.py": APP}, requires=("no-such-dist-for-storm-py",))
    proc = subprocess.run([*storm_py_command(), "submit", str(app), "needy:build", "--config", str(conf)],
                          capture_output=True, text=True, timeout=120, check=False, env=env)
    assert proc.returncode != 0
    assert "cannot resolve the topology's requirements" in proc.stderr
    assert "no-such-dist-for-storm-py" in proc.stderr  # pip's reason
    wh = tmp_path / "wh"
    make_wheel(wh, "fastlib", "1.0", {"fastlib.py": ""}, tag="cp311-cp311-win_amd64")
    app = make_wheel(tmp_path / "dist", "fast", "0.1", {"fast.py": APP}, requires=("fastlib",))
    proc = subprocess.run([*storm_py_command(), "submit", str(app), "fast:build", "--wheelhouse", str(wh),
                           "--config", str(conf)], capture_output=True, text=True, timeout=120, check=False, env=env)
    assert proc.returncode != 0
    assert "fastlib-1.0-cp311-cp311-win_amd64.whl is built for another platform" in proc.stderr


URL_APP = '''"""A spout of one number and a bolt that needs middep, which requires urldep by a direct URL."""
import json
import sys

from storm_py import BasicBolt, Spout, TopologyBuilder


''' + ONE_NUMBER_SPOUT + '''

class Probe(BasicBolt):
    def prepare(self, conf, context):
        self.out = conf["urlapp.out"]

    def execute(self, tup, collector):
        import middep

        with open(self.out, "a", encoding="utf-8") as f:
            f.write(json.dumps({"x": middep.X, "prefix": sys.prefix}) + "\\n")

    def declare_output_fields(self, declarer):
        pass


''' + ONE_INTO_PROBE


def test_a_direct_url_requirement_is_fetched_at_submit_only_and_deploys(
    dev_cluster: Callable[..., DevClusterProcess], tmp_path: Path
) -> None:
    server = Server(make_wheel(tmp_path / "served", "urldep", "1.0", {"urldep.py": "X = 7\n"}))
    try:
        url = f"http://127.0.0.1:{server.port}/urldep-1.0-py3-none-any.whl"
        wh = tmp_path / "wheelhouse"  # a wheel of the wheelhouse requires urldep by its URL
        make_wheel(wh, "middep", "1.0", {"middep.py": "from urldep import X\n"}, requires=(f"urldep @ {url}",))
        app = make_wheel(tmp_path / "dist", "urlapp", "0.1", {"urlapp.py": URL_APP}, requires=("middep",))
        cluster = dev_cluster(supervisors=1)
        out = tmp_path / "url.jsonl"
        proc = submit(cluster, str(app), "urlapp:build", "--name", "url", "--wheelhouse", str(wh),
                      "-c", f"urlapp.out={out}")
        assert proc.returncode == 0, proc.stderr
        assert "urldep-1.0-py3-none-any.whl" in proc.stdout and "middep-1.0-py3-none-any.whl" in proc.stdout
        fetched = list(server.requests)
        assert fetched  # by the submitting client's pip, resolving the requirement
        wait_until(lambda: bool(rows(out)), 240, interval=0.25, what="the topology to run its bolt")
        row = rows(out)[0]
        assert row["x"] == 7
        assert Path(str(row["prefix"])) in envs(cluster)
        assert server.requests == fetched  # the supervisor installed the uploaded wheel, fetching nothing
    finally:
        server.stop()
