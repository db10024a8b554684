"""A dev cluster with ``storm.messaging.encryption: curve``: word count across four workers is exact, and a peer
without the topology's CURVE key connecting to a worker's port gets nothing through (refused and counted)."""

from __future__ import annotations

from collections import Counter

import pytest

from examples.word_count import SENTENCES
from storm_py.clock import wait_until
from storm_py.transport.zmq import ZmqTransport

from .test_word_count import final_counts

pytestmark = [pytest.mark.cluster, pytest.mark.slow, pytest.mark.timeout(300)]


def test_word_count_is_exact_over_curve_and_a_keyless_peer_is_refused(dev_cluster, wheels) -> None:
    cluster = dev_cluster(supervisors=2, conf={"storm.messaging.encryption": "curve"})
    sentences = 2000
    cluster.cli("submit", str(wheels["wordcount"]), "examples.word_count:build", "--name", "wordcount",
                "-c", "topology.workers=4", "-c", f"wordcount.sentences={sentences}")  # fmt: skip
    client = cluster.client()
    wait_until(lambda: int(client.topology("wordcount")["spouts"][0]["acked"]) == sentences, 120, interval=0.25,
               what=f"{sentences} sentences acked")  # fmt: skip
    page = client.topology("wordcount")
    assert page["spouts"][0]["failed"] == 0
    assert sum(int(w["transfer"].get("frames_received", 0)) for w in page["workers"]) > 0  # traffic crossed

    target = page["workers"][0]
    intruder = ZmqTransport()  # no CURVE key: the handshake fails, nothing it sends is received
    try:
        sender = intruder.connect(f"tcp://{target['host']}:{target['port']}")
        sender.send(b"\x01 anything", block=False)

        def refused() -> int:
            for w in client.topology("wordcount")["workers"]:
                if w["port"] == target["port"]:
                    return int(w["transfer"].get("peers_refused", 0))
            return 0

        wait_until(lambda: refused() >= 1, 30, interval=0.2, what="the worker to count a refused peer")
    finally:
        intruder.close()
    for w in client.topology("wordcount")["workers"]:
        assert int(w["transfer"].get("frames_rejected", 0)) == 0  # nothing of the intruder was even decoded
        assert int(w["transfer"].get("frames_unauthenticated", 0)) == 0

    tid = page["id"]
    cluster.cli("kill", "wordcount", "-w", "1")
    expected = Counter(w for i in range(sentences) for w in SENTENCES[i % len(SENTENCES)].split())
    wait_until(lambda: final_counts(cluster.artifacts(tid)) == expected, 90, interval=0.25,
               what="the count bolts' final counts")
