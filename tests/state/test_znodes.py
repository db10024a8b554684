"""The znode layout: pure path functions, and the rule that no other module builds znode paths."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from storm_py.cluster_state import znodes
from storm_py.errors import StateError

PACKAGE = Path(__file__).resolve().parents[2] / "storm_py"


def test_storm_layout() -> None:
    root = "/storm"
    assert znodes.storm(root, "wc-1-1700000000") == "/storm/storms/wc-1-1700000000"
    assert znodes.assignment(root, "t") == "/storm/assignments/t"
    assert znodes.supervisor(root, "sup-1") == "/storm/supervisors/sup-1"
    assert znodes.workerbeat(root, "t", "sup-1", 6700) == "/storm/workerbeats/t/sup-1-6700"
    assert znodes.component_errors(root, "t", "split") == "/storm/errors/t/split"
    assert znodes.error_prefix(root, "t", "split") == "/storm/errors/t/split/e"
    assert znodes.error(root, "t", "split", "e0000000003") == "/storm/errors/t/split/e0000000003"
    assert znodes.nimbus(root, "host-a", 6627) == "/storm/nimbuses/host-a:6627"
    assert znodes.leader_lock(root) == "/storm/leader-lock"
    assert znodes.blob(root, "wc-1-stormjar.whl") == "/storm/blobstore/wc-1-stormjar.whl"
    assert znodes.blob_holder(root, "k", "host-a:6627") == "/storm/blobstore/k/host-a:6627"


def test_other_roots() -> None:
    assert znodes.storm("/", "t") == "/storms/t"
    assert znodes.storm("/apps/storm/", "t") == "/apps/storm/storms/t"


def test_transactional_layout() -> None:
    tx = "/transactional"
    assert znodes.tx_current(tx, "my-tx") == "/transactional/my-tx/coordinator/currtx"
    assert znodes.tx_meta(tx, "my-tx", 7) == "/transactional/my-tx/coordinator/meta/7"
    assert znodes.tx_meta_dir(tx, "my-tx") == "/transactional/my-tx/coordinator/meta"
    assert znodes.tx_user(tx, "my-tx", 2, 7) == "/transactional/my-tx/user/2/7"
    assert znodes.tx_user_dir(tx, "my-tx", 2) == "/transactional/my-tx/user/2"
    assert znodes.transactional(tx, "my-tx", "a", "b") == "/transactional/my-tx/a/b"


def test_free_text_names_are_encoded() -> None:
    path = znodes.component_errors("/storm", "t", "a/b c")
    assert path.count("/") == 4
    assert znodes.decode_name(znodes.basename(path)) == "a/b c"
    for text in [".", "..", "%", "日本", "x/../y"]:
        encoded = znodes.encode_name(text)
        assert znodes.validate_name(encoded) == encoded
        assert znodes.decode_name(encoded) == text


def test_invalid_ids_are_rejected() -> None:
    for bad in ["", "a/b", ".", ".."]:
        with pytest.raises(StateError):
            znodes.storm("/storm", bad)
    with pytest.raises(StateError):
        znodes.join("relative", "x")
    with pytest.raises(StateError):
        znodes.encode_name("")


def test_worker_names_round_trip() -> None:
    name = znodes.worker_name("5f3c-uuid-like-id", 6701)
    assert znodes.parse_worker_name(name) == ("5f3c-uuid-like-id", 6701)
    with pytest.raises(StateError):
        znodes.parse_worker_name("no-port-here")


def test_path_helpers() -> None:
    assert znodes.normalize("/a/b/") == "/a/b"
    assert znodes.parent("/a/b") == "/a"
    assert znodes.parent("/a") == "/"
    assert znodes.parent("/") == "/"
    assert znodes.basename("/a/b") == "b"
    assert znodes.ancestors("/a/b/c") == ["/a", "/a/b"]
    assert znodes.is_within("/a/b", "/a")
    assert not znodes.is_within("/ab", "/a")
    assert znodes.relative_to("/c/x/y", "/c") == "/x/y"
    assert znodes.relative_to("/c", "/c") == "/"
    assert znodes.under("/c", "/") == "/c"
    assert znodes.under("/c", "/x") == "/c/x"
    assert znodes.under("/", "/x") == "/x"
    assert znodes.sequence_of("n-0000000042") == 42
    assert znodes.sequence_of("plain") is None
    assert znodes.sequential_name("n-", 42) == "n-0000000042"


# Literals that look like a znode of Storm's layout: "/storm/...", "storms/", ".../workerbeats", etc.
_SEGMENTS = "storms|assignments|supervisors|workerbeats|nimbuses|leader-lock|blobstore|coordinator/currtx"
_ZNODE_LITERAL = re.compile(
    rf"""["'][^"'\n]*/(?:{_SEGMENTS})(?:/|["'])|["'](?:{_SEGMENTS})/|["']/(?:storm|transactional)/"""
)


def test_no_znode_path_literals_outside_znodes_module() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "znodes.py" and path.parent.name == "state":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _ZNODE_LITERAL.search(line):
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}")
    assert not offenders, "znode paths belong in storm_py/cluster_state/znodes.py:\n" + "\n".join(offenders)


@pytest.mark.parametrize(
    "line",
    [
        'path = "/storm/assignments/" + topology_id',
        "root + '/supervisors/' + sid",
        'f"{root}/workerbeats/{tid}"',
        'root + "/leader-lock"',
        '"storms/%s" % tid',
        '"/transactional/" + tx_id',
    ],
)
def test_the_literal_check_catches_hand_built_paths(line: str) -> None:
    assert _ZNODE_LITERAL.search(line)


@pytest.mark.parametrize(
    "line",
    [
        '"storm.zookeeper.root"',
        "'logs/workers-artifacts'",
        '"/api/v1/supervisor/summary"',
        '{"supervisors": []}',
    ],
)
def test_the_literal_check_ignores_other_strings(line: str) -> None:
    assert not _ZNODE_LITERAL.search(line)
