"""``storm-py flux``: --dry-run prints Storm's details and runs nothing, a local run prints progress and the totals,
filters substitute, and every bad input ends with a one-line error naming the file and component, non-zero."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from storm_py.cli.flux import _resolve_config
from storm_py.clock import wait_until
from storm_py.flux import parse_file
from tests.flux.conftest import CONFIGS, HERE, WORDS

REPO = HERE.parents[1]
pytestmark = pytest.mark.timeout(120)

DETAILS = """---------- TOPOLOGY DETAILS ----------
Topology Name: yaml-topology
--------------- SPOUTS ---------------
spout-1 [1] (org.apache.storm.testing.TestWordSpout)
---------------- BOLTS ---------------
bolt-1 [1] (org.apache.storm.testing.TestWordCounter)
bolt-2 [1] (org.apache.storm.flux.wrappers.bolts.LogInfoBolt)
--------------- STREAMS ---------------
spout-1 --FIELDS--> bolt-1
bolt-1 --SHUFFLE--> bolt-2
--------------- WORKER HOOKS ---------------
--------------------------------------
"""


def _command() -> list[str]:
    script = Path(sys.executable).parent / "storm-py"
    return [str(script)] if script.exists() else [sys.executable, "-m", "storm_py"]


def flux(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([*_command(), "flux", *args], capture_output=True, text=True, timeout=100, check=False,
                          env=full_env, cwd=cwd)


def test_dry_run_prints_storms_details_and_runs_nothing(tmp_path: Path) -> None:
    unreachable = tmp_path / "storm.yaml"
    unreachable.write_text("nimbus.seeds: [\"127.0.0.1\"]\nnimbus.thrift.port: 1\n", encoding="utf-8")
    for extra in ((), ("--remote", "--config", str(unreachable))):
        proc = flux(str(CONFIGS / "simple_wordcount.yaml"), "--dry-run", "--no-splash", *extra)
        assert proc.returncode == 0, proc.stderr
        assert DETAILS in proc.stdout
        assert "in-process" not in proc.stdout and "Finished submitting" not in proc.stdout
    assert "storm-py flux" in flux(str(CONFIGS / "simple_wordcount.yaml"), "-d").stdout  # the splash


def test_local_run_prints_progress_and_the_totals() -> None:
    proc = flux("--local", "-n", "-q", "--sleep", "2500", "-z", "localhost:2181",
                str(CONFIGS / "simple_wordcount.yaml"))
    assert proc.returncode == 0, proc.stderr
    assert "running yaml-topology in-process" in proc.stdout
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("done: emitted ") and not last.startswith("done: emitted 0,")
    assert "--zookeeper localhost:2181 is ignored" in proc.stderr


def test_inactive_local_run_emits_nothing() -> None:
    proc = flux("-i", "-n", "-q", "-s", "1500", str(CONFIGS / "simple_wordcount.yaml"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "done: emitted 0, acked 0, failed 0"


def test_sigterm_ends_a_local_run_cleanly(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    with out.open("w") as sink:
        proc = subprocess.Popen([*_command(), "flux", "-n", "-q", str(CONFIGS / "simple_wordcount.yaml")],
                                stdout=sink, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(REPO)})
        try:
            wait_until(lambda: "emitted" in out.read_text(), 60, interval=0.2, what="the first progress line")
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=60) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert out.read_text().strip().splitlines()[-1].startswith("done: emitted ")


def test_filters_substitute_properties_and_the_environment(tmp_path: Path) -> None:
    proc = flux(str(CONFIGS / "substitution-test.yaml"), "-d", "-n", "--filter", str(CONFIGS / "test.properties"),
                "--env-filter")
    assert proc.returncode == 0, proc.stderr
    assert "Topology Name: substitution-topology" in proc.stdout
    yaml_file = tmp_path / "env.yaml"
    yaml_file.write_text(WORDS.replace('name: "t"', 'name: "${ENV-FLUX_TOPOLOGY_NAME}"'), encoding="utf-8")
    proc = flux(str(yaml_file), "-e", "-d", "-n", env={"FLUX_TOPOLOGY_NAME": "from-the-environment"})
    assert "Topology Name: from-the-environment" in proc.stdout, proc.stderr
    proc = flux(str(yaml_file), "-d", "-n", env={"FLUX_TOPOLOGY_NAME": "from-the-environment"})
    assert "Topology Name: ${ENV-FLUX_TOPOLOGY_NAME}" in proc.stdout


def test_a_resource_of_the_package() -> None:
    proc = flux("-R", "--package", str(HERE), "/configs/simple_wordcount.yaml", "-d", "-n")
    assert proc.returncode == 0, proc.stderr
    assert DETAILS in proc.stdout


def _one_line_error(proc: subprocess.CompletedProcess[str], *parts: str) -> None:
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), proc.stderr
    for part in parts:
        assert part in lines[0], lines[0]
    assert "Traceback" not in proc.stderr and "in-process" not in proc.stdout


def test_bad_inputs_end_with_one_line_naming_file_and_component(tmp_path: Path) -> None:
    windowing = str(CONFIGS / "simple_windowing.yaml")
    _one_line_error(flux(windowing, "-n"), windowing, "'bolt-1'", "org.apache.storm.flux.examples.TestWindowBolt",
                    "no storm_py equivalent")
    diamond = str(CONFIGS / "diamond-topology.yaml")
    _one_line_error(flux(diamond, "-n", "--remote"), diamond, "'B'", "'default'")
    _one_line_error(flux(str(tmp_path / "absent.yaml")), "absent.yaml")
    _one_line_error(flux(str(CONFIGS / "simple_wordcount.yaml"), "-f", str(tmp_path / "none.properties")),
                    "none.properties")
    _one_line_error(flux(str(CONFIGS / "simple_wordcount.yaml"), "--package", str(tmp_path / "nowhere")), "nowhere")
    bad = tmp_path / "bad.yaml"
    bad.write_text('name: "x"\nspouts: [\n', encoding="utf-8")
    _one_line_error(flux(str(bad)), str(bad), "invalid YAML at line")
    cls = tmp_path / "cls.yaml"
    cls.write_text(WORDS.replace("org.apache.storm.testing.TestWordCounter", "no_such_module:Bolt"), encoding="utf-8")
    _one_line_error(flux(str(cls)), str(cls), "'bolt-1'", "no_such_module")
    loud = tmp_path / "loud.yaml"
    loud.write_text(WORDS.replace("org.apache.storm.testing.TestWordCounter", "tests.flux.components:ExplodingLoudly"),
                    encoding="utf-8")
    _one_line_error(flux(str(loud), cwd=REPO), str(loud), "'bolt-1'", "first line second line third")


def test_usage_errors() -> None:
    wc = str(CONFIGS / "simple_wordcount.yaml")
    for args in (("--local", "--remote", wc), ("-R", wc)):
        proc = flux(*args)
        assert proc.returncode == 2 and proc.stderr.startswith("Error: "), proc.stderr


def test_conf_precedence_defaults_config_file_then_flux_config_then_overrides(configs: Path) -> None:
    td = parse_file(configs / "simple_wordcount.yaml")  # its config: topology.workers: 1
    conf = {"topology.workers": 4, "topology.debug": True, "nimbus.seeds": ["h"]}
    _resolve_config(td, conf, ("topology.max.spout.pending=7",))
    assert td.config == {"topology.workers": 1, "topology.debug": True, "topology.max.spout.pending": 7}
    td = parse_file(configs / "simple_wordcount.yaml")
    _resolve_config(td, conf, ("topology.workers=9",))
    assert td.config["topology.workers"] == 9


def test_an_unpacked_wheel_keeps_its_requirements(tmp_path: Path) -> None:
    from storm_py.cli.flux import _wheel_requirements

    meta = tmp_path / "app-1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Name: app\nRequires-Dist: six>=1.0\nRequires-Dist: pytest; extra == \"test\"\n",
                                   encoding="utf-8")
    _wheel_requirements(tmp_path)
    assert (tmp_path / "requirements.txt").read_text(encoding="utf-8") == "six>=1.0\n"
