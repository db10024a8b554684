"""A dev cluster shared by teams: users and roles over REST, the UI and the CLI (the 401/403 matrix), rotation, the
audit log, the DRPC ACL from the CLI, the memory limit, and workers run as their topology's OS user (for real when
the tests run as root: a throwaway OS user is created and removed)."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import storm_py
from storm_py.clock import wait_until
from tests.cluster.harness import DevClusterProcess, storm_py_command

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(900)]

AS_ROOT = os.geteuid() == 0
ROLES = {"boss": "user", "alice": "user", "bob": "user", "carol": "user", "dave": "user", "eve": "readonly",
         "adm": "admin"}


class Shared:
    def __init__(self, dc: DevClusterProcess, root: Path, os_user: str | None) -> None:
        self.dc, self.root, self.os_user = dc, root, os_user
        self.tokens: dict[str, str] = {"cluster": str(dc.client_conf()["nimbus.auth.token"])}
        self.tid = ""

    def config_of(self, who: str | None) -> Path:
        """A user's client config: the cluster's storm.yaml without its secrets, with the user's token."""
        path = self.root / f"{who or 'nobody'}.yaml"
        if not path.exists():
            conf = {k: v for k, v in self.dc.client_conf().items()
                    if k not in ("nimbus.auth.token", "storm.zookeeper.auth.payload")}
            conf["nimbus.auth.token"] = self.tokens.get(who or "", who) if who else None
            conf["storm.local.dir"] = str(self.root / "client-of-users")  # no token file there
            path.write_text(yaml.safe_dump(conf), encoding="utf-8")
        return path

    def cli(self, who: str | None, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*storm_py_command(), *args, "--config", str(self.config_of(who))],
                              capture_output=True, text=True, timeout=240, check=False)

    def http(self, who: str | None, method: str, path: str, base: str | None = None) -> int:
        url = (base or self.dc.nimbus_url().rstrip("/")) + path
        data = b"{}" if method == "POST" else None
        req = urllib.request.Request(url, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if who is not None:
            req.add_header("Authorization", f"Bearer {self.tokens.get(who, who)}")
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                resp.read()
                return int(resp.status)
        except urllib.error.HTTPError as err:
            err.read()
            return int(err.code)


def _make_os_user() -> str:
    name = f"sp{uuid.uuid4().hex[:8]}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True,
                   capture_output=True, timeout=60)
    return name


def _shared_python(root: Path) -> str:
    """An interpreter every OS user may run (this one may live in a private home) that imports this one's packages:
    a virtualenv of the system's python3 of the same version, with this interpreter's site-packages on its path."""
    system = shutil.which("python3", path="/usr/bin:/usr/local/bin")
    assert system is not None, "no system python3 for the workers of other OS users"
    venv = root / "shared-python"
    subprocess.run([system, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True, timeout=120)
    python = venv / "bin" / "python"
    probe = "import sys, sysconfig; print(sys.version_info[:2] == (%d, %d)); print(sysconfig.get_paths()['purelib'])"
    same, purelib = subprocess.run([str(python), "-c", probe % sys.version_info[:2]], check=True,
                                   capture_output=True, text=True, timeout=60).stdout.split()
    assert same == "True", f"{system} is not Python {sys.version_info[:2]}: its workers could not load our packages"
    # this interpreter's packages, and storm_py's own directory: an editable install's .pth file in site-packages
    # is not read when that directory comes from another .pth file
    paths = [sysconfig.get_paths()["purelib"], str(Path(storm_py.__file__).resolve().parent.parent)]
    Path(purelib, "storm-py-tests.pth").write_text("\n".join(paths) + "\n", encoding="utf-8")
    return str(python)


@pytest.fixture(scope="module")
def shared(zookeeper) -> Iterator[Shared]:
    # a directory every user can traverse (the workers of a topology run as its OS user and read their code here)
    root = Path(tempfile.mkdtemp(prefix="storm-py-tenants-"))
    root.chmod(0o755)
    os_user = _make_os_user() if AS_ROOT else None
    conf: dict[str, Any] = {
        "storm.zookeeper.root": f"/tests/tenants-{root.name}/storm",
        "nimbus.admins": ["boss"],
        "drpc.authorizer.acl": {"secret": {"client.users": ["alice"]}},
    }
    if os_user is not None:
        conf.update({"supervisor.run.worker.as.user": True, "supervisor.worker.user.map": {"alice": os_user},
                     "supervisor.worker.python": _shared_python(root)})
    dc = DevClusterProcess(root / "cluster", zookeeper=zookeeper.connect_string, conf=conf, supervisors=1)
    try:
        dc.start()
        world = Shared(dc, root, os_user)
        for name, role in ROLES.items():
            out = world.cli("cluster", "users", "add", name, "--role", role)
            assert out.returncode == 0, out.stderr
            world.tokens[name] = out.stdout.strip()
        yield world
    finally:
        dc.stop()
        if os_user is not None:
            subprocess.run(["userdel", os_user], capture_output=True, timeout=60, check=False)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def wordcount(shared: Shared, tmp_path_factory) -> str:
    from tests.cluster.harness import build_wheel, word_count_project

    out = tmp_path_factory.mktemp("tenant-wheels")
    wheel = build_wheel(word_count_project(out), out)
    shutil.copy(wheel, shared.root / wheel.name)
    return str(shared.root / wheel.name)


def test_users_are_managed_by_admins_only_and_tokens_never_listed(shared: Shared) -> None:
    listing = shared.cli("adm", "users", "list")
    assert listing.returncode == 0, listing.stderr
    assert sorted(line.split("\t") for line in listing.stdout.splitlines()) == sorted(
        [n, r] for n, r in ROLES.items())
    assert all(t not in listing.stdout for t in shared.tokens.values())
    assert shared.cli("boss", "users", "list").returncode == 0  # nimbus.admins
    for who in ("alice", "eve"):
        refused = shared.cli(who, "users", "add", "mallory")
        assert refused.returncode != 0 and f"user '{who}'" in refused.stderr and "may not" in refused.stderr
    nobody = shared.cli(None, "users", "list")
    assert nobody.returncode != 0 and "needs a valid token" in nobody.stderr
    assert shared.http("not-a-token", "GET", "/api/v1/users") == 401


def test_rights_over_rest_ui_and_cli(shared: Shared, wordcount: str) -> None:
    submitted = shared.cli("alice", "submit", wordcount, "examples.word_count:build", "--name", "wc",
                           "-c", 'topology.users=["bob"]', "-c", 'topology.readonly.users=["carol"]',
                           "-c", "topology.workers=1")
    assert submitted.returncode == 0, submitted.stderr
    client = shared.dc.client()
    shared.tid = tid = client.topology_id("wc")
    page = f"/api/v1/topology/{tid}"
    # caller -> (cluster summary, topology page, /metrics, users, deactivate, activate)
    matrix = {
        None: (401, 401, 401, 401, 401, 401), "not-a-token": (401, 401, 401, 401, 401, 401),
        "cluster": (200, 200, 200, 200, 200, 200), "adm": (200, 200, 200, 200, 200, 200),
        "alice": (200, 200, 403, 403, 200, 200), "bob": (200, 200, 403, 403, 200, 200),
        "carol": (200, 200, 403, 403, 403, 403), "dave": (200, 403, 403, 403, 403, 403),
        "eve": (200, 200, 200, 403, 403, 403),
    }
    for who, expected in matrix.items():
        got = tuple(shared.http(who, m, p) for m, p in (
            ("GET", "/api/v1/cluster/summary"), ("GET", page), ("GET", "/metrics"), ("GET", "/api/v1/users"),
            ("POST", f"{page}/deactivate"), ("POST", f"{page}/activate")))
        assert got == expected, who

    # the CLI: the same rights, a refusal is a non-zero exit naming the user
    for who in ("dave", "carol", "eve"):
        out = shared.cli(who, "deactivate", "wc")
        assert out.returncode != 0 and f"user '{who}'" in out.stderr, out.stderr
    assert shared.cli("bob", "deactivate", "wc").returncode == 0
    assert shared.cli("alice", "activate", "wc").returncode == 0
    assert shared.cli("dave", "list").returncode == 0  # the cluster summary is every user's

    # the UI checks tokens itself and relays the rights to nimbus
    from storm_py.ui.daemon import UiDaemon

    ui = UiDaemon({**shared.dc.client_conf(), "ui.port": 0})
    ui.start()
    try:
        base = f"http://127.0.0.1:{ui.port}"
        # the UI reads the users through a session it opens in the background at start
        wait_until(lambda: shared.http("carol", "GET", page, base) == 200, 60, interval=0.2,
                   what="the UI to recognise users' tokens")
        assert [shared.http(w, "GET", page, base) for w in ("carol", "dave", "eve", "not-a-token", None)] == [
            200, 403, 200, 401, 401]
        assert shared.http("dave", "POST", f"{page}/deactivate", base) == 403
    finally:
        ui.stop()


def test_the_log_viewer_applies_each_users_rights_to_topology_and_daemon_logs(shared: Shared) -> None:
    client = shared.dc.client()
    row = client.supervisor_summary()[0]
    base = f"http://127.0.0.1:{row['logviewerPort']}"
    tid = shared.tid
    listing = f"/api/v1/logs/{tid}"

    def worker_log() -> str | None:
        req = urllib.request.Request(base + listing, headers={"Authorization": f"Bearer {shared.tokens['cluster']}"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            files = [f["file"] for f in json.loads(resp.read())["files"] if f["file"].endswith("/worker.log")]
        return files[0] if files else None

    wait_until(lambda: worker_log() is not None, 120, interval=0.5, what="the topology's worker.log on the host")
    file = worker_log()
    requests = [listing, f"/api/v1/log?file={file}&length=64", f"/api/v1/search?file={file}&search-string=a",
                "/api/v1/daemonlogs"]
    # caller -> (its file list, a page of its worker.log, a search in it, the daemon logs)
    matrix = {
        None: (401, 401, 401, 401), "not-a-token": (401, 401, 401, 401),
        "cluster": (200, 200, 200, 200), "adm": (200, 200, 200, 200), "boss": (200, 200, 200, 200),
        "alice": (200, 200, 200, 403), "bob": (200, 200, 200, 403), "carol": (200, 200, 200, 403),
        "dave": (403, 403, 403, 403), "eve": (200, 200, 200, 200),
    }
    for who, expected in matrix.items():
        assert tuple(shared.http(who, "GET", r, base) for r in requests) == expected, who
    entries = [json.loads(line) for line in
               (shared.dc.workdir / "logs" / "audit.log").read_text(encoding="utf-8").splitlines()]
    seen = {(e["user"], e["action"], e["target"], e["result"]) for e in entries}
    assert ("dave", "log read", tid, "forbidden") in seen and ("alice", "daemon log read", "", "forbidden") in seen
    assert ("-", "log read", tid, "unauthorized") in seen


def test_rotation_refuses_the_old_token_at_once(shared: Shared) -> None:
    old = shared.tokens["carol"]
    out = shared.cli("adm", "users", "rotate", "carol")
    assert out.returncode == 0, out.stderr
    new = out.stdout.strip()
    assert new and new != old
    assert shared.http(old, "GET", "/api/v1/cluster/summary") == 401
    assert shared.http(new, "GET", "/api/v1/cluster/summary") == 200
    shared.tokens["carol"] = new
    assert shared.cli("adm", "users", "remove", "dave").returncode == 0
    assert shared.http("dave", "GET", "/api/v1/cluster/summary") == 401


def test_the_audit_log_has_changes_and_refusals_and_no_token(shared: Shared) -> None:
    path = shared.dc.workdir / "logs" / "audit.log"
    entries = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    seen = {(e["user"], e["action"], e["result"]) for e in entries}
    assert ("bob", "deactivate", "ok") in seen and ("alice", "submit", "ok") in seen
    assert ("carol", "deactivate", "forbidden") in seen and ("-", "deactivate", "unauthorized") in seen
    assert ("cluster", "users add", "ok") in seen and ("alice", "users add", "forbidden") in seen
    assert any(e["target"] == shared.tid and e["action"] == "deactivate" for e in entries)
    assert not any(e["method"] == "GET" and e["result"] == "ok" for e in entries)  # reads are not audited
    text = path.read_text(encoding="utf-8")
    assert all(token not in text for token in shared.tokens.values())


def test_the_drpc_acl_from_the_cli(shared: Shared) -> None:
    out = shared.cli("bob", "drpc-client", "secret", "x", "--timeout", "30")
    assert out.returncode != 0 and "may not invoke DRPC function 'secret'" in out.stderr, out.stderr


def test_a_worker_over_its_memory_limit_is_killed_and_the_errors_name_the_limit(shared: Shared, wordcount: str) -> None:
    submitter = ["-c", "topology.submitter.user=alice"] if shared.os_user else []  # an admin names the submitter
    out = shared.cli("cluster", "submit", wordcount, "examples.word_count:build", "--name", "heavy",
                     "-c", "topology.workers=1", "-c", "topology.worker.max.heap.size.mb=5", *submitter)
    assert out.returncode == 0, out.stderr

    def named() -> bool:
        errors = shared.cli("cluster", "get-errors", "heavy")
        return "topology.worker.max.heap.size.mb = 5 MiB" in errors.stdout

    try:
        wait_until(named, 240, interval=1.0, what="the memory limit on the topology's errors")
    finally:
        shared.cli("cluster", "kill", "heavy", "-w", "0")


def test_workers_run_as_the_topologys_os_user_and_cannot_read_the_supervisors_config(shared: Shared) -> None:
    if not AS_ROOT:  # only root starts processes as another user: tests/tenants/test_run_as.py covers the rest
        assert shared.os_user is None
        return
    assert shared.os_user is not None and shared.tid
    account = pwd.getpwnam(shared.os_user)
    artifacts = shared.dc.artifacts(shared.tid)

    def worker_pid() -> int | None:
        for meta in artifacts.glob("*/worker.yaml"):
            pid = int(json.loads(meta.read_text(encoding="utf-8"))["pid"])
            if Path(f"/proc/{pid}").exists():
                return pid
        return None

    wait_until(lambda: worker_pid() is not None, 240, interval=0.5, what="a live worker of wc")
    pid = worker_pid()
    status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
    assert uid_line.split()[1:] == [str(account.pw_uid)] * 4
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    worker_conf = Path(cmdline[cmdline.index(b"--config") + 1].decode())
    assert worker_conf.stat().st_uid == account.pw_uid
    worker_text = worker_conf.read_text(encoding="utf-8")
    assert shared.tokens["cluster"] not in worker_text and "storm.zookeeper.auth.payload" not in worker_text
    supervisor_conf = shared.dc.workdir / "supervisor-1.yaml"
    for secret_file in (supervisor_conf, supervisor_conf.parent / "supervisor-1" / "supervisor" / "worker-conf.yaml"):
        read = subprocess.run(["cat", str(secret_file)], user=account.pw_uid, group=account.pw_gid,
                              capture_output=True, text=True, timeout=30, check=False)
        assert read.returncode != 0 and "Permission denied" in read.stderr, secret_file
    # and the topology flows: its words are counted by the worker running as that user
    wait_until(lambda: int(shared.dc.client().topology("wc")["spouts"][0]["emitted"]) > 0, 240, interval=1.0,
               what="the wordcount topology to emit")
