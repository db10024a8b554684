"""Topology credentials in LocalCluster (Storm's ``uploadNewCredentials``): every listening spout and bolt task is
handed each upload through ``set_credentials`` on its worker's loop, an upload replaces the last, a listener that
raises is reported as the topology's error, and bad input is refused."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from storm_py import (
    BaseStatefulBolt,
    BaseWindowedBolt,
    BasicBolt,
    Count,
    CredentialsListener,
    Fields,
    NotAliveException,
    TopologyBuilder,
)
from storm_py.clock import wait_until
from storm_py.local import LocalCluster
from storm_py.node.http_api import BadRequestError
from storm_py.testing import FeederSpout
from storm_py.testing.registry import Shared


class Seen(Shared):
    """What each task was handed, by (component, task)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_task: dict[tuple[str, int], list[dict[str, str]]] = {}

    def add(self, component: str, task: int, creds: dict[str, str]) -> None:
        with self.lock:
            self.by_task.setdefault((component, task), []).append(creds)

    def last(self) -> dict[tuple[str, int], dict[str, str]]:
        with self.lock:
            return {k: v[-1] for k, v in self.by_task.items()}


class Listening(FeederSpout):
    def __init__(self, seen: Seen) -> None:
        super().__init__(Fields("v"))
        self.seen = seen

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        super().open(conf, context, collector)
        self.task = context.get_this_task_id()

    def set_credentials(self, creds: dict[str, str]) -> None:
        self.seen.add("feed", self.task, creds)


class Holder(BasicBolt, CredentialsListener):
    def __init__(self, seen: Seen, broken: bool = False) -> None:
        self.seen, self.broken = seen, broken

    def prepare(self, conf: Any, context: Any) -> None:
        self.task = context.get_this_task_id()
        self.component = context.get_this_component_id()

    def set_credentials(self, creds: dict[str, str]) -> None:
        if self.broken:
            raise RuntimeError("cannot log in with these credentials")
        self.seen.add(self.component, self.task, creds)

    def execute(self, tup: Any, collector: Any) -> None:
        pass


class Deaf(BasicBolt):
    def execute(self, tup: Any, collector: Any) -> None:
        pass


def test_uploads_reach_every_listening_task_and_replace_the_last() -> None:
    seen = Seen()
    builder = TopologyBuilder()
    builder.set_spout("feed", Listening(seen), 1)
    builder.set_bolt("holder", Holder(seen), 3).shuffle_grouping("feed")
    builder.set_bolt("deaf", Deaf(), 1).shuffle_grouping("feed")
    builder.set_bolt("broken", Holder(seen, broken=True), 1).shuffle_grouping("feed")
    with LocalCluster(supervisors=2, ports_per_supervisor=2) as cluster:
        cluster.submit_topology("creds", {"topology.workers": 2}, builder.create_topology())
        assert seen.last() == {}
        cluster.upload_credentials("creds", {"user": "alice"})
        wait_until(lambda: len(seen.last()) == 4, 30, what="the spout and the three holder tasks")
        assert list(seen.last().values()) == [{"user": "alice"}] * 4
        assert {component for component, _ in seen.last()} == {"feed", "holder"}
        cluster.upload_credentials("creds", {"token": "t2"})
        wait_until(lambda: all(c == {"token": "t2"} for c in seen.last().values()), 30, what="the second upload")
        errors = cluster.nimbus.state.topology_errors(cluster.get_topology_id("creds") or "")
        assert "cannot log in" in errors["broken"][0].error

        with pytest.raises(NotAliveException, match="nope"):
            cluster.upload_credentials("nope", {"k": "v"})
        with pytest.raises(BadRequestError, match="'k' must be a string"):
            cluster.upload_credentials("creds", {"k": 1})  # type: ignore[dict-item]


class WindowedHolder(BaseWindowedBolt):
    """A windowed bolt listening for credentials: the runtime runs it inside its window executor."""

    def __init__(self, seen: Seen) -> None:
        super().__init__()
        self.seen = seen

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.task = context.get_this_task_id()

    def set_credentials(self, creds: dict[str, str]) -> None:
        self.seen.add("windowed", self.task, creds)

    def execute(self, window: Any) -> None:
        pass


class StatefulHolder(BaseStatefulBolt):
    """A stateful bolt listening for credentials: the runtime runs it inside managed state's executor."""

    def __init__(self, seen: Seen) -> None:
        self.seen = seen

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.task, self.collector = context.get_this_task_id(), collector

    def init_state(self, state: Any) -> None:
        pass

    def set_credentials(self, creds: dict[str, str]) -> None:
        self.seen.add("stateful", self.task, creds)

    def execute(self, tup: Any) -> None:
        self.collector.ack(tup)


def test_windowed_and_stateful_bolts_get_credentials_through_the_runtimes_wrappers() -> None:
    seen = Seen()
    builder = TopologyBuilder()
    builder.set_spout("feed", FeederSpout(Fields("v")), 1)
    builder.set_bolt("windowed", WindowedHolder(seen).with_tumbling_window(Count.of(2)), 1).shuffle_grouping("feed")
    builder.set_bolt("stateful", StatefulHolder(seen), 2).shuffle_grouping("feed")
    with LocalCluster() as cluster:
        cluster.submit_topology("wrapped-creds", {}, builder.create_topology())
        cluster.upload_credentials("wrapped-creds", {"user": "bob"})
        wait_until(lambda: len(seen.last()) == 3, 30, what="the windowed task and both stateful tasks")
        assert {component for component, _ in seen.last()} == {"windowed", "stateful"}
        assert list(seen.last().values()) == [{"user": "bob"}] * 3
