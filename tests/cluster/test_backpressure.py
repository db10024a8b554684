"""Backpressure across worker processes: a slow bolt holds back its senders; nothing is lost or timed out."""

from __future__ import annotations

import pytest

from storm_py.clock import wait_until
from tests.cluster.conftest import zk_root_conf
from tests.cluster.harness import Ledger

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.zookeeper, pytest.mark.timeout(300)]

IDS = 6_000


def test_a_slow_bolt_makes_its_senders_wait_without_failures(dev_cluster, wheels, zookeeper, request, tmp_path):
    # one frame per peer queued in ZeroMQ and small kernel socket buffers: a few frames of slack per peer, so the
    # senders must find full queues however the machine paces the spout against the sinks
    cluster = dev_cluster(zookeeper=zookeeper.connect_string,
                          conf={**zk_root_conf(request), "zmq.hwm": 1, "zmq.socket.buffer.bytes": 131072})
    ledger = Ledger(tmp_path / "ledger.db", IDS)
    cluster.cli(
        "submit", str(wheels["ackcheck"]), "ackcheck.topology:build", "--name", "slow",
        "-c", "topology.workers=4", "-c", f"ackcheck.db={ledger.path}", "-c", "ackcheck.parallelism=2",
        "-c", "ackcheck.sink.sleep.ms=2",  # the sinks take ~2 ms a tuple: far slower than the spout
        "-c", "ackcheck.payload.bytes=20000",  # 120 MB in all: more than socket buffers can hide
        "-c", "topology.executor.receive.buffer.size=100",  # small receive budgets: backpressure sets in early
        "-c", "topology.max.spout.pending=null",  # nothing but backpressure holds the spout back
        "-c", "topology.message.timeout.secs=300",  # so that a lost tuple would show as a missing ack
    )
    ledger.wait_all_acked(240)
    client = cluster.client()
    # the counters travel with the workers' heartbeats: wait for the last ones
    wait_until(lambda: client.topology("slow")["spouts"][0]["acked"] == IDS, 30, interval=0.2,
               what="the spout's counters")
    page = client.topology("slow")
    spout = page["spouts"][0]
    assert spout["failed"] == 0
    transfer = [w["transfer"] for w in page["workers"]]
    # receivers held back (bounded queues) and the spout waited: its worker's queued work (with the frames its
    # peers refused) stayed over the budget.  How many frames a peer refused (send_blocked) depends on where the
    # scheduler puts the slow sinks: one beside the spout throttles it before a socket fills, so it is printed
    # below, not required
    assert sum(t.get("receive_waits", 0) for t in transfer) > 0, transfer
    assert spout["skippedBackpressureMs"] > 0, spout
    assert sum(t.get("dropped_no_peer", 0) + t.get("dropped_pruned", 0) for t in transfer) == 0
    assert ledger.replays() == 0
    totals = {k: sum(t.get(k, 0) for t in transfer) for k in ("receive_waits", "send_blocked", "overflow_max")}
    print(f"backpressure counters over the workers: {totals}")
    cluster.cli("kill", "slow", "-w", "0")
