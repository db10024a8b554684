"""Topology dependencies: the environment ledger's decisions, requirement sets, and the submit-side wheelhouse
(requirements read from a package, platform checks, the size limit, pip's reason on an unsatisfiable requirement)."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import pytest
from packaging.tags import Tag

from storm_py.clock import wait_until
from storm_py.deps.envcache import (
    PENDING_META,
    STATE_META,
    BuildRecord,
    EnvLedger,
    environment_states,
    environment_status,
    set_id,
)
from storm_py.deps.envcheck import expected_of
from storm_py.deps.venv import EnvBuilding, EnvCache
from storm_py.deps.wheelhouse import (
    MANIFEST,
    WHEELHOUSE,
    bundle,
    check_platforms,
    is_storm_py,
    requirements_of,
    wheel_digests,
    with_dependencies,
)
from storm_py.errors import DependencyError
from tests.cluster.wheelmaker import make_wheel

CONF = {"topology.dependencies.max.size.mb": 150, "topology.dependencies.resolve.timeout.secs": 120}


def zip_of(members: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, text in members.items():
            zf.writestr(name, text)
    return buf.getvalue()


# ------------------------------------------------------------------------------------------- the pure core

def test_a_set_id_depends_on_the_wheels_not_their_order() -> None:
    a = set_id({"x-1-py3-none-any.whl": "aa", "y-2-py3-none-any.whl": "bb"})
    assert a == set_id({"y-2-py3-none-any.whl": "bb", "x-1-py3-none-any.whl": "aa"})
    assert a != set_id({"x-1-py3-none-any.whl": "aa", "y-2-py3-none-any.whl": "bc"})
    assert a != set_id({"x-1-py3-none-any.whl": "aa"})


def test_an_environment_is_removed_only_after_the_cleanup_time_without_topologies() -> None:
    ledger = EnvLedger(cleanup_secs=60)
    assert ledger.expired({"e1"}, {"e1", "e2"}, now=0) == []  # e2 (a left-over) starts its clock
    assert ledger.expired({"e1"}, {"e1", "e2"}, now=59) == []
    assert ledger.expired({"e1"}, {"e1", "e2"}, now=60) == ["e2"]
    assert ledger.expired(set(), {"e1"}, now=100) == []  # e1's last topology is gone
    assert ledger.expired({"e1"}, {"e1"}, now=150) == []  # needed again: kept, clock reset
    assert ledger.expired(set(), {"e1"}, now=151) == []
    assert ledger.expired(set(), {"e1"}, now=210) == []
    assert ledger.expired(set(), {"e1"}, now=211) == ["e1"]
    assert ledger.unused_since == {}


def test_a_shared_environment_stays_while_any_topology_needs_it() -> None:
    ledger = EnvLedger(cleanup_secs=0)
    assert ledger.expired(["e1", "e1"], {"e1"}, now=0) == []  # two topologies, one set
    assert ledger.expired(["e1"], {"e1"}, now=10) == []  # one killed
    assert ledger.expired([], {"e1"}, now=20) == ["e1"]  # both


def test_a_failed_build_is_reported_once_per_topology() -> None:
    record = BuildRecord()
    assert record.to_report("t1") is None  # not failed
    record.error = "boom"
    assert record.to_report("t1") == "boom"
    assert record.to_report("t1") is None
    assert record.to_report("t2") == "boom"


def test_a_failing_build_is_not_retried_while_its_topology_lives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = tmp_path / "code"
    make_wheel(code / WHEELHOUSE, "tinydep", "1.0", {"tinydep.py": "X = 1\n"})
    calls: list[Path] = []

    def failing(env: Path, wheels: Path, timeout: float | None = None, **_: object) -> None:
        calls.append(env)
        raise DependencyError("ERROR: no space left")

    monkeypatch.setattr("storm_py.deps.venv.build", failing)
    cache = EnvCache(tmp_path / "envs", cleanup_secs=0, background=False)
    for _ in range(3):
        with pytest.raises(DependencyError, match="cannot be built: ERROR: no space left"):
            cache.python_for("t1", code)
    assert len(calls) == 1
    cache.cleanup(set(), now=0)  # the topology is gone: a new submission tries again
    with pytest.raises(DependencyError):
        cache.python_for("t1", code)
    assert len(calls) == 2


def test_a_topology_without_a_wheelhouse_runs_on_the_supervisors_interpreter(tmp_path: Path) -> None:
    (tmp_path / "code").mkdir()
    assert EnvCache(tmp_path / "envs", cleanup_secs=0).python_for("t1", tmp_path / "code") is None


def test_a_building_environment_shows_on_its_topology_per_supervisor() -> None:
    metas = [("h1", {PENDING_META + "t1": "building the environment e1 of t1", "health": ""}),
             ("h2", {PENDING_META + "t2": "building the environment e2 of t2"}), ("h3", {})]
    assert environment_status("t1", metas) == ["h1: building the environment e1 of t1"]
    assert environment_status("t3", metas) == []


def test_environment_states_per_supervisor_building_ready_or_failed_with_the_reason() -> None:
    metas = [("h2", {STATE_META + "t1": "failed: the topology's environment cannot be built: bad wheel"}),
             ("h1", {STATE_META + "t1": "ready: environment e1"}),
             ("h3", {PENDING_META + "t1": "building the environment e1 of t1", STATE_META + "t1": "ready: old"}),
             ("h4", {STATE_META + "t2": "ready: environment e2"})]
    assert environment_states("t1", metas) == [
        {"host": "h1", "state": "ready", "detail": "environment e1"},
        {"host": "h2", "state": "failed", "detail": "the topology's environment cannot be built: bad wheel"},
        {"host": "h3", "state": "building", "detail": "building the environment e1 of t1"},
    ]
    assert environment_states("t3", metas) == []


# ------------------------------------------------------------------------------------------- the client side

def test_requirements_come_from_requires_dist_without_extras(tmp_path: Path) -> None:
    whl = make_wheel(tmp_path, "app", "0.1", {"app.py": ""},
                     requires=("tinydep>=1", "numpy; python_version >= '3'", "pytest; extra == 'test'"))
    assert requirements_of(whl.read_bytes(), whl.name) == "tinydep>=1\nnumpy; python_version >= '3'\n"


def test_requirements_come_from_a_directorys_requirements_txt() -> None:
    data = zip_of({"app.py": "", "requirements.txt": "# pinned\ntinydep==1.0\n"})
    assert requirements_of(data, "app.zip") == "# pinned\ntinydep==1.0\n"
    assert requirements_of(zip_of({"app.py": ""}), "app.zip") == ""


def test_a_wheel_for_another_platform_is_refused_naming_it() -> None:
    here = [Tag("cp311", "cp311", "manylinux_2_17_x86_64"), Tag("py3", "none", "any")]
    check_platforms(["a-1-py3-none-any.whl", "b-1-cp311-cp311-manylinux_2_17_x86_64.whl"], here)
    with pytest.raises(DependencyError, match=r"wheel b-1-cp311-cp311-win_amd64\.whl is built for another platform"):
        check_platforms(["a-1-py3-none-any.whl", "b-1-cp311-cp311-win_amd64.whl"], here)
    with pytest.raises(DependencyError, match="not a wheel file name"):
        check_platforms(["b.whl"], here)


def test_a_foreign_wheel_in_the_given_wheelhouse_fails_the_submit(tmp_path: Path) -> None:
    make_wheel(tmp_path / "wh", "fastlib", "1.0", {"fastlib.py": ""}, tag="cp311-cp311-win_amd64")
    data = zip_of({"app.py": "", "requirements.txt": "fastlib\n"})
    with pytest.raises(DependencyError, match=r"fastlib-1\.0-cp311-cp311-win_amd64\.whl is built for another"):
        with_dependencies(data, "app.zip", CONF, tmp_path / "wh")


def test_the_wheelhouse_is_bundled_under_its_folder_within_the_size_limit(tmp_path: Path) -> None:
    whl = make_wheel(tmp_path / "wh", "tinydep", "1.0", {"tinydep.py": "X = 1\n" + "#" * 4000})
    data = bundle(zip_of({"app.py": "", f"{WHEELHOUSE}/old-1-py3-none-any.whl": "stale"}), [whl], max_mb=1)
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert names == ["app.py", f"{WHEELHOUSE}/{whl.name}", f"{WHEELHOUSE}/{MANIFEST}"]
    listed = json.loads(zipfile.ZipFile(io.BytesIO(data)).read(f"{WHEELHOUSE}/{MANIFEST}"))
    assert listed == {"wheels": {whl.name: hashlib.sha256(whl.read_bytes()).hexdigest()}}
    with pytest.raises(DependencyError, match=r"over topology.dependencies.max.size.mb \(0.001\).*tinydep-1.0"):
        bundle(zip_of({"app.py": ""}), [whl], max_mb=0.001)
    out = tmp_path / "out"
    zipfile.ZipFile(io.BytesIO(data)).extractall(out)
    assert list(wheel_digests(out / WHEELHOUSE)) == [whl.name]


def test_storm_py_itself_is_never_uploaded() -> None:
    assert is_storm_py("storm_py-0.9.0-cp311-cp311-linux_x86_64.whl")
    assert not is_storm_py("storm_pyx-1.0-py3-none-any.whl")


def test_a_package_without_requirements_is_uploaded_unchanged() -> None:
    data = zip_of({"app.py": ""})
    assert with_dependencies(data, "app.zip", CONF) == (data, [])


@pytest.mark.slow
def test_requirements_resolve_from_the_given_wheelhouse_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    make_wheel(tmp_path / "wh", "tinydep", "1.0", {"tinydep.py": "X = 1\n"})
    make_wheel(tmp_path / "wh", "tinyapp", "2.0", {"tinyapp.py": ""}, requires=("tinydep",))
    data, wheels = with_dependencies(zip_of({"app.py": "", "requirements.txt": "tinyapp\n"}), "app.zip", CONF,
                                     tmp_path / "wh")
    assert wheels == ["tinyapp-2.0-py3-none-any.whl", "tinydep-1.0-py3-none-any.whl"]
    assert f"{WHEELHOUSE}/tinydep-1.0-py3-none-any.whl" in zipfile.ZipFile(io.BytesIO(data)).namelist()


@pytest.mark.slow
def test_an_unsatisfiable_requirement_fails_with_pips_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    with pytest.raises(DependencyError, match=r"cannot resolve.*ERROR: .*no-such-dist-for-storm-py"):
        with_dependencies(zip_of({"app.py": "", "requirements.txt": "no-such-dist-for-storm-py>=1\n"}), "app.zip",
                          CONF, None)


@pytest.mark.slow
def test_an_environment_is_built_offline_with_storm_py_linked_and_removed_when_unused(tmp_path: Path) -> None:
    import subprocess

    code = tmp_path / "code"
    make_wheel(code / WHEELHOUSE, "tinydep", "1.0", {"tinydep.py": "X = 41\n"})
    built: list[bool] = []
    cache = EnvCache(tmp_path / "envs", cleanup_secs=5, on_built=lambda: built.append(True))
    with pytest.raises(EnvBuilding):
        cache.python_for("t1", code)  # built on a thread of its own
    with pytest.raises(EnvBuilding):
        cache.python_for("t2", code)  # the same set: the same build
    assert cache.cleanup({"t1", "t2"}, now=0) == []
    wait_until(lambda: bool(built), 120, interval=0.05, what="the environment build")
    python = cache.python_for("t1", code)
    assert python is not None and python.is_relative_to(tmp_path / "envs")
    assert cache.python_for("t2", code) == python  # the same set: shared
    probe = "import tinydep, storm_py, msgpack, sys; print(tinydep.X + 1, sys.prefix)"
    out = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, check=True,
                         env={"PATH": "/usr/bin:/bin"}).stdout.split()
    assert out[0] == "42" and Path(out[1]) == python.parent.parent
    assert not any((python.parent.parent / "lib").glob("python*/site-packages/storm_py"))  # linked, not copied
    assert cache.cleanup({"t2"}, now=0) == []
    assert cache.cleanup(set(), now=1) == []
    assert cache.cleanup(set(), now=6) == [python.parent.parent.name]
    assert not python.parent.parent.exists()


def test_what_a_wheel_installs_is_read_from_its_members_with_their_digests(tmp_path: Path) -> None:
    whl = make_wheel(tmp_path, "multi", "1.0", {
        "multi.py": "A = 1\n", "multi-1.0.data/purelib/extra.py": "B = 2\n",
        "multi-1.0.data/scripts/tool": "#!python\nprint(1)\n", "multi-1.0.data/data/share/multi.txt": "data\n",
        "multi-1.0.data/headers/multi.h": "int x;\n"})
    expected = expected_of([whl])
    assert sorted(expected.site) == ["extra.py", "multi-1.0.dist-info/METADATA", "multi-1.0.dist-info/WHEEL",
                                     "multi.py"]  # RECORD is rewritten by pip; scripts and headers are not read
    assert expected.site["multi.py"] == hashlib.sha256(b"A = 1\n").hexdigest()
    assert expected.data == {"share/multi.txt": hashlib.sha256(b"data\n").hexdigest()}
    assert expected.dist_infos == {"multi-1.0.dist-info"}
