"""``topology.kryo.register``: classes named in the conf cross workers; an unregistered one fails its tuple."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from storm_py import Bolt, Fields, TopologyBuilder
from storm_py.clock import wait_until
from storm_py.errors import ConfigError, TopologyLoadError
from storm_py.local import LocalCluster
from storm_py.nimbus.topology_check import check_package
from storm_py.packaging.package import read_package
from storm_py.protocol import registration
from storm_py.protocol.codec import decode, encode, unregister_ext
from storm_py.testing import AckFailMapTracker, FeederSpout
from storm_py.testing.registry import Shared

HERE = __name__


class Point:
    """Carried by its fields (Storm's field serializer)."""

    def __init__(self, x: int, y: int) -> None:
        self.x, self.y = x, y

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Point) and (other.x, other.y) == (self.x, self.y)


class Unregistered:
    pass


class Slotted:
    __slots__ = ("v",)


class Money:
    """Carried by its own to_bytes / from_bytes."""

    def __init__(self, cents: int) -> None:
        self.cents = cents

    def to_bytes(self) -> bytes:
        return str(self.cents).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Money:
        return cls(int(data))


class Received(Shared):
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.values: list[Any] = []


class Record(Bolt):
    def __init__(self, received: Received) -> None:
        self.received = received

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        with self.received.lock:
            self.received.values.append(tup.values[0])
        self.collector.ack(tup)


@pytest.fixture()
def clean_codec() -> Any:
    yield
    for code in range(registration.FIRST_CODE, registration.FIRST_CODE + 8):
        unregister_ext(code)


def test_a_registered_class_crosses_workers_and_an_unregistered_one_fails_naming_its_class(clean_codec: Any) -> None:
    tracker = AckFailMapTracker()
    spout = FeederSpout(Fields("value"))
    spout.set_ack_fail_delegate(tracker)
    received = Received()
    builder = TopologyBuilder()
    builder.set_spout("feeder", spout)
    builder.set_bolt("record", Record(received), 2).all_grouping("feeder")  # a task on each worker
    conf = {"topology.workers": 2, "topology.testing.always.try.serialize": True,
            "topology.kryo.register": [f"{HERE}:Point"]}
    with LocalCluster(supervisors=1, ports_per_supervisor=2) as cluster:
        cluster.submit_topology("kryo", conf, builder.create_topology())
        tid = cluster.get_topology_id("kryo")
        assert tid is not None and len(cluster.workers(tid)) == 2
        spout.feed([Point(1, 2)], 1)
        wait_until(lambda: tracker.is_acked(1), 10, what="the registered class to be acked")
        assert received.values == [Point(1, 2), Point(1, 2)]  # the remote task got a Point back, not a dict
        spout.feed([Unregistered()], 2)
        wait_until(lambda: tracker.is_failed(2), 10, what="the unregistered class to fail")
        errors = [e.error for e in cluster.state.errors(tid, "feeder")]
        assert any(f"{HERE}.Unregistered" in e and "topology.kryo.register" in e for e in errors), errors


def test_own_methods_a_serializer_and_the_alias_key(clean_codec: Any) -> None:
    regs = registration.apply({"topology.codec.register": [f"{HERE}:Money", {f"{HERE}:Point": f"{HERE}:PointSer"}]})
    assert [(r.name, r.code) for r in regs] == [(f"{HERE}:Money", registration.FIRST_CODE),
                                                 (f"{HERE}:Point", registration.FIRST_CODE + 1)]
    assert decode(encode([Money(250)]))[0].cents == 250
    assert decode(encode(Point(3, 4))) == Point(4, 3)  # through PointSer, which swaps


class PointSer:
    def to_bytes(self, p: Point) -> bytes:
        return encode([p.y, p.x])

    def from_bytes(self, data: bytes) -> Point:
        x, y = decode(data)
        return Point(x, y)


@pytest.mark.parametrize(("conf", "says"), [
    ({"topology.kryo.register": ["no_such_module_xyz:Thing"]}, "unknown class 'no_such_module_xyz:Thing'"),
    ({"topology.kryo.register": [f"{HERE}:Nope"]}, f"unknown class '{HERE}:Nope'"),
    ({"topology.kryo.register": [f"{HERE}:Slotted"]}, f"the codec cannot carry '{HERE}:Slotted'"),
    ({"topology.kryo.register": ["Point"]}, "'Point' is not a class name"),
    ({"topology.kryo.register": [3]}, "entry 3 is neither"),
    ({"topology.fall.back.on.java.serialization": True}, "never pickles"),
])
def test_bad_registrations_are_refused_by_name(conf: dict[str, Any], says: str, clean_codec: Any) -> None:
    with pytest.raises(ConfigError) as err:
        registration.apply(conf)
    assert says in str(err.value)


def test_a_class_the_codec_carries_natively_is_refused(clean_codec: Any) -> None:
    with pytest.raises(ConfigError, match="the codec cannot carry 'collections:OrderedDict'"):
        registration.apply({"topology.kryo.register": ["collections:OrderedDict"]})


def test_local_cluster_refuses_an_unknown_class_at_submit() -> None:
    builder = TopologyBuilder()
    builder.set_spout("feeder", FeederSpout(Fields("value")))
    with LocalCluster() as cluster, pytest.raises(ConfigError, match="unknown class 'nowhere_xyz:Thing'"):
        cluster.submit_topology("refused", {"topology.kryo.register": ["nowhere_xyz:Thing"]}, builder.create_topology())


SKIP_TOPOLOGY = '''
from storm_py import TopologyBuilder
from storm_py.testing import TestWordSpout


def build():
    builder = TopologyBuilder()
    builder.set_spout("words", TestWordSpout())
    return builder.create_topology()
'''


def test_the_submit_check_skips_a_class_that_does_not_import_when_asked(tmp_path: Any) -> None:
    """A cluster's submit-time check (in its own process) refuses a registration that does not import, naming it,
    and passes the topology with ``topology.skip.missing.kryo.registrations`` (Storm's skip, with a warning)."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "skip_topology.py").write_text(SKIP_TOPOLOGY, encoding="utf-8")
    package = tmp_path / "topology.zip"
    package.write_bytes(read_package(tmp_path / "src")[0])
    conf = {"topology.kryo.register": ["nowhere_xyz:Thing"]}
    with pytest.raises(TopologyLoadError, match="unknown class 'nowhere_xyz:Thing'"):
        check_package(package, "skip_topology:build", conf, timeout=60)
    skip = {**conf, "topology.skip.missing.kryo.registrations": True}
    skeleton = check_package(package, "skip_topology:build", skip, timeout=60)
    assert set(skeleton.spouts) == {"words"}
