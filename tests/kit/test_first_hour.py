"""A newcomer's first hour through the command line, without a cluster: config-file typos and errors, `list`'s
table, `spark-job`'s bad input and unreachable master, `ui`'s address, and `conf/storm.yaml`'s defaults."""

from __future__ import annotations

import re
import signal
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from storm_py.cli import topology as topology_commands
from storm_py.cli.main import cli
from storm_py.clock import SYSTEM_CLOCK
from storm_py.config.keys import KEYS
from storm_py.dev.zookeeper import free_port
from tests.cluster.harness import storm_py_command

REPO = Path(__file__).resolve().parents[2]


def _unreachable_nimbus() -> str:
    return f"nimbus.seeds: ['127.0.0.1:{free_port()}']\nstorm.nimbus.retry.times: 0\n"


def test_a_misspelt_key_in_a_config_file_warns_like_one_given_with_c(tmp_path: Path) -> None:
    conf = tmp_path / "cluster.yaml"
    conf.write_text(_unreachable_nimbus() + "topology.wrokers: 2\n", encoding="utf-8")
    proc = subprocess.run([*storm_py_command(), "list", "--config", str(conf), "-c", "topology.ackers=1"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 1 and "cannot reach nimbus" in proc.stderr
    assert (f"unknown config key 'topology.wrokers' in config file {conf}; did you mean 'topology.workers'?"
            in proc.stderr)
    assert "unknown config key 'topology.ackers' given with -c" in proc.stderr


def test_config_file_errors_name_the_file_without_a_usage_hint(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*storm_py_command(), "list", *args], capture_output=True, text=True, timeout=60,
                              check=False)

    missing = run("--config", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    assert "cannot read config file" in missing.stderr and "--help" not in missing.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("topology.workers: many\n", encoding="utf-8")
    result = run("--config", str(bad))
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "--help" not in result.stderr
    assert "'topology.workers' must be an integer" in result.stderr and f"in config file {bad}" in result.stderr
    override = run("-c", "topology.workers=many")  # a bad option keeps its hint
    assert override.returncode == 2 and "(see 'storm-py list --help')" in override.stderr


class _Client:
    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows

    def topology_summaries(self) -> list[dict[str, Any]]:
        return self.rows


def test_list_keeps_its_columns_apart_and_shows_topologies_short_of_workers(monkeypatch) -> None:
    rows = [
        {"name": "wc", "status": "ACTIVE", "tasksTotal": 5, "workersTotal": 2, "uptimeSeconds": 7,
         "requestedWorkers": 2, "schedulerInfo": ""},
        {"name": "moving", "status": "REBALANCING", "tasksTotal": 12345, "workersTotal": 3, "uptimeSeconds": 86400,
         "requestedWorkers": 3, "schedulerInfo": ""},
        {"name": "greedy", "status": "ACTIVE", "tasksTotal": 210, "workersTotal": 0, "uptimeSeconds": 3,
         "requestedWorkers": 100, "schedulerInfo": "not running: no free slot for any of its 100 workers"},
    ]
    monkeypatch.setattr(topology_commands, "_client", lambda conf: _Client(rows))
    result = CliRunner().invoke(cli, ["list", "-c", "nimbus.seeds=['127.0.0.1:1']"])
    assert result.exit_code == 0, result.output
    header, rule, *lines = result.output.splitlines()
    starts = [header.index(h) for h in ("Status", "Num_tasks", "Num_workers", "Uptime_secs")]
    for line in [header, *lines[:3]]:
        assert all(line[s - 2:s] == "  " and line[s] != " " for s in starts), line  # two spaces, then the cell
    assert lines[1].split()[:2] == ["moving", "REBALANCING"] and lines[2].split()[3] == "0/100"
    assert lines[3] == "greedy: not running: no free slot for any of its 100 workers"
    assert len(rule) >= len(max(lines[:3], key=len))


def test_spark_job_refuses_an_input_that_does_not_exist_and_creates_nothing(tmp_path: Path) -> None:
    out = tmp_path / "report"
    result = CliRunner().invoke(cli, ["spark-job", "examples.daily_report:report", "--input",
                                      str(tmp_path / "events"), "--output", str(out)])
    assert result.exit_code != 0 and str(tmp_path / "events") in result.output and "does not exist" in result.output
    assert not out.exists()


def test_spark_job_fails_fast_naming_an_unreachable_master(tmp_path: Path) -> None:
    (tmp_path / "events").mkdir()
    master = f"spark://127.0.0.1:{free_port()}"
    start = SYSTEM_CLOCK.now()
    proc = subprocess.run([*storm_py_command(), "spark-job", "examples.daily_report:report", "--input",
                           str(tmp_path / "events"), "--output", str(tmp_path / "report"), "--master", master,
                           "--connect-timeout", "5"], capture_output=True, text=True, timeout=60, check=False,
                          cwd=REPO)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(f"Error: cannot reach the Spark master {master}")
    assert SYSTEM_CLOCK.now() - start < 30  # the JVM never starts: no minute of retries
    assert not (tmp_path / "report").exists()


def test_ui_prints_the_address_of_its_pages(tmp_path: Path) -> None:
    seeds = f"nimbus.seeds=['127.0.0.1:{free_port()}']"
    proc = subprocess.Popen([*storm_py_command(), "ui", "-c", "ui.port=0", "-c", seeds,
                             "-c", f"storm.local.dir={tmp_path}"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=tmp_path)
    try:
        # no token configured: it generates one and says where, once
        assert proc.stdout is not None and proc.stdout.readline().strip() == f"token: {tmp_path / 'storm-py.token'}"
        line = proc.stdout.readline().strip() if proc.stdout else ""
        assert re.fullmatch(r"ui: http://127\.0\.0\.1:\d+/", line), line
        with urllib.request.urlopen(line.split(" ", 1)[1], timeout=10) as resp:
            assert resp.headers["Content-Type"].startswith("text/html") and b"storm_py" in resp.read()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)


def test_storm_yaml_states_one_default_per_key_and_the_tables() -> None:
    """Each commented key of conf/storm.yaml (its line and the comment lines under it) states at most one
    default, and where keys.py states one too, the same."""
    entries: dict[str, str] = {}
    current = None
    for line in (REPO / "conf" / "storm.yaml").read_text(encoding="utf-8").splitlines():
        found = re.match(r"^# ([a-z][a-z0-9._-]+):(.*)$", line)
        if found:
            current = found.group(1)
            entries[current] = found.group(2)
        elif current and re.match(r"^#\s{20,}", line):
            entries[current] += " " + line.lstrip("# ")
        else:
            current = None
    assert "storm.local.hostname" in entries
    for key, text in entries.items():
        stated = re.findall(r"\(default: ([^\s,):]+)", text)
        assert len(stated) <= 1, f"{key} states {len(stated)} defaults: {stated}"
        declared = re.findall(r"\(default: ([^\s,):]+)", KEYS[key].doc) if key in KEYS else []
        if stated and declared:
            assert stated == declared, f"{key}: conf/storm.yaml says {stated[0]}, keys.py {declared[0]}"


def test_a_clean_config_file_warns_of_nothing(tmp_path: Path) -> None:
    conf = tmp_path / "cluster.yaml"
    conf.write_text(_unreachable_nimbus() + "topology.workers: 2\n", encoding="utf-8")
    proc = subprocess.run([*storm_py_command(), "list", "--config", str(conf)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.stderr.count("\n") == 1 and "cannot reach nimbus" in proc.stderr
