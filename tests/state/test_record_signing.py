"""Storm bases and assignments are signed by the writer holding the cluster's token and refused otherwise.

Contract tests: both backends (the in-memory twin and a real ZooKeeper).
"""

from __future__ import annotations

import json

import pytest

from storm_py.cluster_state import znodes
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.models import Assignment, StormBase
from storm_py.cluster_state.signing import SIGNATURE_FIELD, RecordSigner, record_key

from .conftest import Backend

NIMBUS = {"nimbus.auth.token": "the-cluster-token-0123456789"}
BASE = StormBase(name="wc", status="active", launch_time=1.0, num_workers=2)
ASSIGNMENT = Assignment(node_host={"s1": "127.0.0.1"}, executor_node_port={(1, 1): ("s1", 6700)})


def test_a_signed_record_round_trips_and_carries_its_signature(backend: Backend) -> None:
    nimbus = ClusterState(backend.session(), NIMBUS)
    reader = ClusterState(backend.session(), NIMBUS)
    nimbus.set_storm_base("t-1", BASE)
    nimbus.set_assignment("t-1", ASSIGNMENT)
    assert reader.storm_base("t-1") == BASE and reader.storm_bases() == {"t-1": BASE}
    assert reader.assignment("t-1") == ASSIGNMENT and reader.assignments() == {"t-1": ASSIGNMENT}
    raw = reader.storage.get(znodes.storm(reader.root, "t-1"))
    assert raw is not None and SIGNATURE_FIELD in json.loads(raw)
    assert reader.refused == 0


@pytest.mark.parametrize("writer_conf", [{}, {"nimbus.auth.token": "a-guessed-token-0123456789"}],
                         ids=["unsigned", "other-token"])  # fmt: skip
def test_an_unsigned_or_foreign_record_reads_as_absent_and_is_counted(
    backend: Backend, writer_conf: dict[str, str]
) -> None:
    forger = ClusterState(backend.session(), writer_conf)
    reader = ClusterState(backend.session(), NIMBUS)
    forger.set_storm_base("evil-1", BASE)
    forger.set_assignment("evil-1", ASSIGNMENT)
    assert reader.storm_base("evil-1") is None
    assert reader.assignment("evil-1") is None
    assert reader.storm_bases() == {} and reader.assignments() == {}
    assert reader.refused == 4
    assert reader.active_topology_ids() == ["evil-1"]  # the node is there; its content is not believed


def test_an_altered_or_moved_record_is_refused(backend: Backend) -> None:
    nimbus = ClusterState(backend.session(), NIMBUS)
    nimbus.set_storm_base("t-1", BASE)
    nimbus.set_assignment("t-1", ASSIGNMENT)
    storage = backend.session()
    base_path = znodes.storm(nimbus.root, "t-1")
    raw = storage.get(base_path)
    assert raw is not None
    altered = json.loads(raw)
    altered["num_workers"] = 9
    storage.set(base_path, json.dumps(altered).encode())
    assignment_raw = storage.get(znodes.assignment(nimbus.root, "t-1"))
    assert assignment_raw is not None
    storage.set(znodes.assignment(nimbus.root, "t-2"), assignment_raw)  # a signed record copied elsewhere
    reader = ClusterState(backend.session(), NIMBUS)
    assert reader.storm_base("t-1") is None
    assert reader.assignment("t-2") is None
    assert reader.assignment("t-1") == ASSIGNMENT
    assert reader.refused == 2


def test_without_a_token_nothing_is_signed_or_checked(backend: Backend) -> None:
    plain = ClusterState(backend.session(), {})
    plain.set_storm_base("t-1", BASE)
    assert ClusterState(backend.session(), {}).storm_base("t-1") == BASE


def test_the_signer_checks_its_inputs() -> None:
    key = record_key(NIMBUS)
    assert key is not None and record_key({}) is None
    signer = RecordSigner(key)
    signed = signer.sign("/storm/storms/t", {"a": 1})
    assert signer.verify("/storm/storms/t", signed) == {"a": 1}
    assert signer.verify("/storm/storms/t", {**signed, SIGNATURE_FIELD: 7}) is None
    assert signer.verify("/storm/storms/t", {"a": 1}) is None
    with pytest.raises(ValueError, match="16 bytes"):
        RecordSigner(b"short")
