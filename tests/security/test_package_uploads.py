"""Hostile packages at upload and at unpack: zip bombs (a 300 kB package unpacking to 300 MB), archives over
the total size or member count, a wheelhouse holding a source package, a file it does not list or a wheel that
is itself a bomb.  Each is refused with an error naming the file or the limit's key, before anything is
unpacked or stored."""

from __future__ import annotations

import hashlib
import io
import json
import threading
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from storm_py.client import NimbusClient, NimbusRequestError
from storm_py.clock import SYSTEM_CLOCK
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.cluster_state.models import SupervisorInfo
from storm_py.deps.wheelhouse import MANIFEST, WHEELHOUSE, check_wheelhouse
from storm_py.errors import DependencyError, StormPyError, TopologyLoadError
from storm_py.nimbus.daemon import NimbusDaemon
from storm_py.packaging import package as package_module
from storm_py.packaging.package import MIB, TopologyPackage, UnpackLimits, check_archive, unpack
from tests.cluster.wheelmaker import make_wheel

pytestmark = pytest.mark.timeout(120)

TOKEN = "s3cret"
APP = '''from storm_py import BasicBolt, Spout, TopologyBuilder


class One(Spout):
    def next_tuple(self):
        pass

    def declare_output_fields(self, declarer):
        declarer.declare(["n"])


def build(conf):
    builder = TopologyBuilder()
    builder.set_spout("one", One(), 1)
    return builder.create_topology()
'''


def zipped(members: dict[str, bytes], level: int = 9) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as zf:
        for name, body in members.items():
            zf.writestr(name, body)
    return buf.getvalue()


@pytest.fixture(scope="module")
def bomb() -> bytes:
    """A topology package of about 300 kB holding a 300 MB member of zeros."""
    data = zipped({"app.py": APP.encode(), "resources/zeros.bin": bytes(300 * 1000 * 1000)})
    assert len(data) < 400 * 1000
    return data


@pytest.fixture
def nimbus(tmp_path: Path) -> Iterator[Callable[..., NimbusClient]]:
    """A leading nimbus in this process with a supervisor's slots registered; a client of it."""
    started: list[tuple[NimbusDaemon, threading.Thread]] = []

    def start(**conf: Any) -> NimbusClient:
        store = MemoryStore()
        base = {"nimbus.host": "127.0.0.1", "nimbus.thrift.port": 0, "nimbus.auth.token": TOKEN,
                "nimbus.supervisor.timeout.secs": 600, "storm.local.dir": str(tmp_path / f"nimbus-{len(started)}"),
                **conf}
        daemon = NimbusDaemon(base, MemoryStorage(store))
        daemon.start()
        thread = threading.Thread(target=daemon.run, daemon=True)
        thread.start()
        started.append((daemon, thread))
        ClusterState(store.session(), base).set_supervisor_info(
            "sup-1", SupervisorInfo("127.0.0.1", SYSTEM_CLOCK.wall(), ports=[7001, 7002]))
        return NimbusClient({**base, "nimbus.seeds": [f"127.0.0.1:{daemon.port}"], "storm.nimbus.retry.times": 20,
                             "storm.nimbus.retry.interval.millis": 100})

    yield start
    for daemon, thread in started:
        daemon.stop()
        thread.join(10)


def with_wheelhouse(wheels: dict[str, bytes], manifest: dict[str, str] | None = None) -> bytes:
    members = {"app.py": APP.encode(), **{f"{WHEELHOUSE}/{n}": b for n, b in wheels.items()}}
    if manifest is not None:
        members[f"{WHEELHOUSE}/{MANIFEST}"] = json.dumps({"wheels": manifest}).encode()
    return zipped(members)


# ------------------------------------------------------------------------------------------- at upload

def test_a_zip_bomb_is_refused_at_upload_before_anything_is_unpacked(
    nimbus: Callable[..., NimbusClient], bomb: bytes, tmp_path: Path
) -> None:
    client = nimbus()
    ratio = r"zeros\.bin.*over storm\.package\.max\.compression\.ratio \(200\)"
    with pytest.raises(TopologyLoadError, match=ratio) as err:
        client.submit("bomb", TopologyPackage(bomb, "app:build", "bomb.zip"))
    assert "directory says" not in str(err.value)  # refused from the directory, not by the validation's unpack
    # over the total: members of an ordinary ratio, more than the cluster allows (a topology's conf cannot raise it)
    client = nimbus(**{"storm.package.max.unpacked.mb": 1})
    text = b"".join(b"%d,%x\n" % (i, i * 7919) for i in range(200_000))  # ~2.6 MB, compresses a few times
    with pytest.raises(TopologyLoadError, match=r"unpacks to 2\.\d MiB, over storm\.package\.max\.unpacked\.mb \(1\)"):
        big = zipped({"app.py": APP.encode(), "data.csv": text})
        client.submit("big", TopologyPackage(big, "app:build", "big.zip"), {"storm.package.max.unpacked.mb": 10})
    client = nimbus(**{"storm.package.max.members": 50})
    many = zipped({"app.py": APP.encode(), **{f"m/{i}.txt": b"" for i in range(60)}})
    with pytest.raises(TopologyLoadError, match=r"holds 61 members, over storm\.package\.max\.members \(50\)"):
        client.submit("many", TopologyPackage(many, "app:build", "many.zip"))
    assert client.topology_summaries() == []


def test_a_wheelhouse_with_a_source_package_or_a_bomb_is_refused_at_upload_naming_the_file(
    nimbus: Callable[..., NimbusClient], tmp_path: Path
) -> None:
    client = nimbus()
    sdist = with_wheelhouse({"evil-1.0.tar.gz": b"\x1f\x8b not built here"})
    with pytest.raises(NimbusRequestError, match=r"\.storm-wheelhouse/evil-1\.0\.tar\.gz, a source package") as err:
        client.submit("sdist", TopologyPackage(sdist, "app:build", "sdist.zip"))
    assert err.value.code == DependencyError.code
    bomb_wheel = zipped({"bombwheel/zeros.bin": bytes(50 * MIB), "bombwheel-1.0.dist-info/METADATA": b""})
    bombed = with_wheelhouse({"bombwheel-1.0-py3-none-any.whl": bomb_wheel})
    with pytest.raises(TopologyLoadError,
                       match=r"wheel \.storm-wheelhouse/bombwheel-1\.0-py3-none-any\.whl: member 'bombwheel/zeros\.bin'"
                             r".*storm\.package\.max\.compression\.ratio"):
        client.submit("bombwheel", TopologyPackage(bombed, "app:build", "bombed.zip"))
    garbage = with_wheelhouse({"garbage-1.0-py3-none-any.whl": b"not a zip"})
    with pytest.raises(TopologyLoadError, match=r"garbage-1\.0-py3-none-any\.whl is not a wheel or zip archive"):
        client.submit("garbage", TopologyPackage(garbage, "app:build", "garbage.zip"))
    assert client.topology_summaries() == []


def test_a_wheelhouse_must_hold_exactly_the_wheels_it_lists_with_their_digests(tmp_path: Path) -> None:
    good = make_wheel(tmp_path, "tinydep", "1.0", {"tinydep.py": "X = 1\n"}).read_bytes()
    name = "tinydep-1.0-py3-none-any.whl"
    digest = hashlib.sha256(good).hexdigest()
    limits = UnpackLimits.from_conf({})
    assert check_wheelhouse(with_wheelhouse({name: good}, {name: digest}), limits) == [name]
    assert check_wheelhouse(with_wheelhouse({name: good}), limits) == [name]  # built by hand: no list
    with pytest.raises(DependencyError, match=r"not listed: extra-1\.0-py3-none-any\.whl"):
        check_wheelhouse(with_wheelhouse({name: good, "extra-1.0-py3-none-any.whl": good}, {name: digest}), limits)
    with pytest.raises(DependencyError, match=r"missing: tinydep-1\.0-py3-none-any\.whl"):
        check_wheelhouse(with_wheelhouse({}, {name: digest}), limits)
    with pytest.raises(DependencyError, match=r"wheel tinydep-1\.0-py3-none-any\.whl does not match the digest"):
        check_wheelhouse(with_wheelhouse({name: good}, {name: "0" * 64}), limits)
    with pytest.raises(DependencyError, match=r"\.storm-wheelhouse/sub/tinydep-1\.0-py3-none-any\.whl, not a wheel"):
        check_wheelhouse(with_wheelhouse({f"sub/{name}": good}), limits)
    with pytest.raises(DependencyError, match=r"wheels\.json is not a wheelhouse manifest"):
        check_wheelhouse(zipped({f"{WHEELHOUSE}/{MANIFEST}": b"[1"}), limits)


# ------------------------------------------------------------------------------------------- at unpack

def test_a_zip_bomb_is_refused_before_unpacking_on_the_supervisor(bomb: bytes, tmp_path: Path) -> None:
    dest = tmp_path / "stormdist" / "t1" / "code"
    with pytest.raises(TopologyLoadError, match=r"over storm\.package\.max\.compression\.ratio"):
        unpack(bomb, dest)
    assert not (tmp_path / "stormdist").exists()  # refused from the directory: nothing written
    with pytest.raises(TopologyLoadError, match=r"over storm\.package\.max\.unpacked\.mb \(100\)"):
        check_archive(bomb, "bomb.zip", UnpackLimits(100 * MIB, 10_000, 100))


def test_unpacking_stops_at_the_limits_even_when_the_directory_understates_them(
    bomb: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(package_module, "check_directory", lambda infos, what, limits: None)  # a lying directory
    dest = tmp_path / "code"
    with pytest.raises(TopologyLoadError, match=r"zeros\.bin.*compression\.ratio.*more than its directory says"):
        unpack(bomb, dest)
    assert not dest.exists() and list(tmp_path.iterdir()) == []
    with pytest.raises(TopologyLoadError, match=r"over storm\.package\.max\.unpacked\.mb \(10\) at member 'resources"):
        unpack(bomb, dest, UnpackLimits(10 * MIB, 10_000, 100))
    assert list(tmp_path.iterdir()) == []


def test_a_package_within_the_limits_unpacks_whole(tmp_path: Path) -> None:
    data = zipped({"app.py": APP.encode(), "resources/": b"", "resources/table.txt": b"a" * (2 * MIB)})
    with pytest.raises(StormPyError):  # 2 MiB of one byte: far over the ratio
        unpack(data, tmp_path / "code")
    unpack(data, tmp_path / "code", UnpackLimits(10 * MIB, 10_000, 100))
    assert (tmp_path / "code" / "resources" / "table.txt").read_bytes() == b"a" * (2 * MIB)
    assert (tmp_path / "code" / "app.py").read_text(encoding="utf-8") == APP
