"""Topology credentials' pure parts: the properties file and KEY VALUE pairs of ``upload-credentials``, the upload
body's checks, when stored credentials are news to a worker, their delivery to listening components, and their
record in the cluster state (signed, readable by the topology's own workers only)."""

from __future__ import annotations

from typing import Any

import click
import pytest

from storm_py import CredentialsListener
from storm_py.cli.credentials import pairs, read_properties
from storm_py.cluster_state import acl as acls
from storm_py.cluster_state import znodes
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.memory import MemoryStorage, MemoryStore
from storm_py.cluster_state.models import Credentials
from storm_py.errors import StateError
from storm_py.nimbus.credentials_api import MAX_KEY_CHARS, parse_credentials
from storm_py.node.http_api import BadRequestError
from storm_py.runtime.credentials import CredentialsInbox, CredentialsWatch, deliver_credentials

SECRET = "storm:credentials-cluster-secret"
TOKEN = "credentials-token-0123456789"


def test_properties_file_forms() -> None:
    text = "# a comment\n! another\n\na=1\nb : two words \nc  3\nlone\nd=x=y\ne=con\\\n   tinued\nf=back\\\\\n"
    assert read_properties(text) == {"a": "1", "b": "two words", "c": "3", "lone": "", "d": "x=y",
                                     "e": "continued", "f": "back\\\\"}  # fmt: skip


def test_pairs_need_an_even_count() -> None:
    assert pairs(("k1", "v1", "k2", "v2")) == {"k1": "v1", "k2": "v2"}
    assert pairs(()) == {}
    with pytest.raises(click.UsageError, match="'k2' has no value"):
        pairs(("k1", "v1", "k2"))


def test_upload_body_checks_name_what_is_wrong() -> None:
    assert parse_credentials({"credentials": {"user": "alice", "pass": ""}}) == {"user": "alice", "pass": ""}
    for body, why in [
        ([], "must be"), ({"creds": {}}, "must be"), ({"credentials": ["a"]}, "must be"),
        ({"credentials": {"": "x"}}, "non-empty"), ({"credentials": {"n": 1}}, "'n' must be a string, not int"),
        ({"credentials": {"k" * (MAX_KEY_CHARS + 1): "x"}}, "over 256"),
    ]:  # fmt: skip
        with pytest.raises(BadRequestError, match=why):
            parse_credentials(body)


def test_a_worker_hears_of_credentials_present_at_start_and_of_every_change() -> None:
    watch = CredentialsWatch()
    assert watch.changed(None) is None  # none at start: nothing to say
    assert watch.changed({}) is None
    assert watch.changed({"a": "1"}) == {"a": "1"}
    assert watch.changed({"a": "1"}) is None
    assert watch.changed({"a": "2"}) == {"a": "2"}
    assert watch.changed(None) == {}  # removed: the tasks learn they have none
    assert watch.changed(None) is None
    late = CredentialsWatch()
    assert late.changed({"a": "1"}) == {"a": "1"}  # a worker started after the upload


def test_the_inbox_keeps_the_latest_offer_until_taken() -> None:
    inbox = CredentialsInbox()
    assert not inbox.pending and inbox.take() is None
    inbox.offer({"a": "1"})
    inbox.offer({"a": "2"})
    assert inbox.pending and inbox.take() == {"a": "2"} and not inbox.pending


class Listening:
    def __init__(self) -> None:
        self.got: list[dict[str, str]] = []

    def set_credentials(self, creds: dict[str, str]) -> None:
        self.got.append(creds)
        creds["mutated"] = "by the component"


class Broken:
    def set_credentials(self, creds: dict[str, str]) -> None:
        raise RuntimeError("cannot log in")


class Executor:
    """An executor's component objects by task, as the runtime's executors declare them."""

    def __init__(self, component_id: str, **components: dict[int, Any]) -> None:
        self.component_id = component_id
        self.by_task = {task: c for by_task in components.values() for task, c in by_task.items()}

    def components(self) -> dict[int, Any]:
        return self.by_task


def test_every_listening_spout_and_bolt_gets_its_own_copy_and_a_failure_is_reported() -> None:
    spout, bolt_a, bolt_b, broken = Listening(), Listening(), Listening(), Broken()
    executors = [Executor("spout", spouts={1: spout}), Executor("count", bolts={2: bolt_a, 3: bolt_b, 4: object()}),
                 Executor("login", bolts={5: broken}), Executor("__acker")]  # fmt: skip
    reported: list[tuple[str, int, str]] = []
    creds = {"token": "t1"}
    called = deliver_credentials(executors, creds, lambda c, t, e: reported.append((c, t, str(e))))
    assert called == 4
    assert spout.got[0]["token"] == bolt_a.got[0]["token"] == bolt_b.got[0]["token"] == "t1"
    assert creds == {"token": "t1"}  # each listener had a copy
    assert reported == [("login", 5, "cannot log in")]
    assert isinstance(spout, CredentialsListener) and not isinstance(object(), CredentialsListener)


def open_state(store: MemoryStore, conf: dict[str, Any]) -> ClusterState:
    return ClusterState(MemoryStorage(store, acls.policy_from_conf(conf)), conf)


def test_stored_credentials_are_signed_and_only_the_topology_s_workers_read_them() -> None:
    store = MemoryStore()
    nimbus = open_state(store, {"storm.zookeeper.auth.payload": SECRET, "nimbus.auth.token": TOKEN})
    nimbus.set_credentials("t-1-1", Credentials({"user": "alice", "password": "s3cret"}))
    assert nimbus.credentials("t-1-1") == Credentials({"user": "alice", "password": "s3cret"})
    assert nimbus.credentials("t-2-2") is None

    own = open_state(store, {**acls.worker_auth({"storm.zookeeper.auth.payload": SECRET}, "t-1-1"),
                             "nimbus.auth.token": TOKEN})  # fmt: skip
    assert own.credentials("t-1-1") == Credentials({"user": "alice", "password": "s3cret"})
    with pytest.raises(StateError):  # read-only to the topology
        own.set_credentials("t-1-1", Credentials({"user": "mallory"}))
    other = open_state(store, {**acls.worker_auth({"storm.zookeeper.auth.payload": SECRET}, "t-2-2"),
                               "nimbus.auth.token": TOKEN})  # fmt: skip
    with pytest.raises(StateError) as refused:
        other.credentials("t-1-1")
    assert refused.value.fields["reason"] == "no_auth"

    # written with the stolen digest but without the token: unsigned, so read as absent
    thief = open_state(store, {"storm.zookeeper.auth.payload": SECRET})
    thief.set_credentials("t-1-1", Credentials({"user": "mallory"}))
    assert nimbus.credentials("t-1-1") is None and nimbus.refused == 1

    nimbus.set_credentials("t-1-1", Credentials({"user": "alice"}))
    nimbus.remove_topology("t-1-1")
    assert not store_has(nimbus, znodes.credentials(nimbus.root, "t-1-1"))


def store_has(state: ClusterState, path: str) -> bool:
    return state.storage.exists(path)
