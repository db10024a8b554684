"""supervisor.run.worker.as.user, the parts that need no root: which OS user, the worker's config without the
cluster's secrets, refusals naming what is wrong."""

from __future__ import annotations

import os
import pwd

import pytest
import yaml

from storm_py.errors import ConfigError
from storm_py.supervisor import run_as

ON = {"supervisor.run.worker.as.user": True, "supervisor.worker.user.map": {"alice": "svc-alice"}}


def test_the_os_user_is_the_submitter_mapped_or_by_name() -> None:
    assert run_as.worker_user({}, {"topology.submitter.user": "alice"}) is None  # off by default
    assert run_as.worker_user(ON, {"topology.submitter.user": "alice"}) == "svc-alice"
    assert run_as.worker_user(ON, {"topology.submitter.user": "bob"}) == "bob"
    with pytest.raises(ConfigError, match=r"names no topology\.submitter\.user"):
        run_as.worker_user(ON, {})
    with pytest.raises(ConfigError, match="maps 'alice' to 3"):
        run_as.worker_user({**ON, "supervisor.worker.user.map": {"alice": 3}}, {"topology.submitter.user": "alice"})


def test_the_workers_config_holds_none_of_the_clusters_secrets() -> None:
    conf = {"nimbus.auth.token": "t", "storm.zookeeper.auth.payload": "p", "storm.zookeeper.servers": ["h"]}
    assert run_as.worker_conf(conf) == {"storm.zookeeper.servers": ["h"]}


def test_unknown_users_root_and_a_supervisor_not_root_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"'no-such-user-here' .* does not exist"):
        run_as.account("no-such-user-here")
    with pytest.raises(ConfigError, match="never run as root"):
        run_as.account(pwd.getpwuid(0).pw_name)
    with pytest.raises(ConfigError, match="needs the supervisor to run as root"):
        run_as.check_root(1000)
    run_as.check_root(0)


def test_prepare_writes_an_owner_only_config_and_hands_over_the_directories(tmp_path) -> None:
    me = pwd.getpwuid(os.geteuid())
    account = run_as.OsAccount(me.pw_name, me.pw_uid, me.pw_gid, me.pw_dir)
    conf = {"nimbus.auth.token": "t", "topology.workers": 1}
    path = run_as.prepare(account, conf, tmp_path / "confs", "wc-1-1", [tmp_path / "logs", tmp_path / "beat"])
    assert path == tmp_path / "confs" / "wc-1-1.yaml"
    assert oct(path.stat().st_mode & 0o777) == "0o600" and path.stat().st_uid == me.pw_uid
    assert yaml.safe_load(path.read_text()) == {"topology.workers": 1}
    assert (tmp_path / "logs").is_dir() and (tmp_path / "beat").stat().st_uid == me.pw_uid


def test_the_code_is_shared_read_only_with_the_users_group_and_links_are_not_followed(tmp_path) -> None:
    code = tmp_path / "dist"
    (code / "pkg").mkdir(parents=True)
    (code / "pkg" / "mod.py").write_text("x = 1\n")
    outside = tmp_path / "outside"
    outside.write_text("secret")
    outside.chmod(0o600)
    (code / "link").symlink_to(outside)
    for p in (code, code / "pkg"):
        p.chmod(0o700)
    (code / "pkg" / "mod.py").chmod(0o600)
    run_as.share_read(code, os.getegid())
    assert oct(code.stat().st_mode & 0o777) == "0o750" and oct((code / "pkg").stat().st_mode & 0o777) == "0o750"
    assert oct((code / "pkg" / "mod.py").stat().st_mode & 0o777) == "0o640"
    assert oct(outside.stat().st_mode & 0o777) == "0o600"  # the link's target is untouched


def test_a_worker_that_cannot_start_as_its_user_says_why_on_its_topologys_errors() -> None:
    from storm_py.clock import SimulatedClock
    from storm_py.cluster_state.cluster_state import ClusterState
    from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
    from storm_py.cluster_state.models import ACTIVE, Assignment, StormBase
    from storm_py.supervisor.core import Supervisor

    class NoSuchUser:
        def launch(self, supervisor_id, topology_id, port, executors):
            raise ConfigError("OS user 'ghost' (the topology's, under supervisor.run.worker.as.user) does not exist")

        def resident_mb(self, worker):
            return None

    state = ClusterState(MemoryStorage(MemoryStore()))
    state.set_storm_base("t-1-1", StormBase("t", ACTIVE, 0.0, 1))
    state.set_assignment("t-1-1", Assignment({"s1": "h"}, {(1, 1): ("s1", 6700)}, {(1, 1): 0.0}))
    reports: list[str] = []
    sup = Supervisor({"supervisor.slots.ports": [6700]}, state, NoSuchUser(), SimulatedClock(), "s1",
                     report_error=lambda _t, _p, _e, text: reports.append(text))
    sup.sync()
    assert reports == ["cannot start a worker on port 6700: OS user 'ghost' (the topology's, under "
                       "supervisor.run.worker.as.user) does not exist"]
