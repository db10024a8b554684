"""A Kafka partition's log as Kafka's read_committed readers see it, decided from the log's own transaction markers.

The dev broker (tansu) writes the COMMIT and ABORT control records of transactions into the log, as Kafka does,
but its fetch responses list no aborted transactions, which is what a Kafka client's read_committed mode filters
by.  So a read_committed consumer reads aborted records there.  This reader fetches the raw log (Fetch v4,
read_uncommitted), parses its record batches (format v2) and applies Kafka's transaction rules itself:

* a non-transactional batch is visible at once;
* the records of a transactional batch wait, per producer id, for that producer's next control record: COMMIT makes
  them visible, ABORT drops them;
* a batch of a newer epoch of the same producer id ends the older epoch's transaction: Kafka's coordinator aborts it
  (writing an ABORT marker) before it lets the new epoch write, so those records are dropped (and counted in
  ``fenced``, as the markers the broker did not write);
* a transaction still open at the end of the log is not visible (it lies beyond the last stable offset).
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass, field

FETCH, FETCH_VERSION = 1, 4
TRANSACTIONAL, CONTROL, CODEC = 0x10, 0x20, 0x07
ABORT, COMMIT = 0, 1


@dataclass
class PartitionLog:
    """What one partition's log holds, as a read_committed reader sees it."""

    committed: list[tuple[bytes | None, bytes | None]] = field(default_factory=list)
    aborted: int = 0  # records of transactions ended by an ABORT marker
    fenced: int = 0  # records of transactions a newer epoch ended without a marker in the log
    open: int = 0  # records of transactions still open at the end of the log
    commits: int = 0  # COMMIT markers
    aborts: int = 0  # ABORT markers


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return int(value)

    def raw(self, n: int) -> bytes:
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def string(self) -> str:
        return self.raw(self.take(">h")).decode()

    def varint(self) -> int:
        shift = result = 0
        while True:
            byte = self.data[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return (result >> 1) ^ -(result & 1)  # zigzag
            shift += 7

    def blob(self) -> bytes | None:
        n = self.varint()
        return None if n < 0 else self.raw(n)


def _fetch(bootstrap: str, topic: str, partition: int, offset: int) -> tuple[int, bytes]:
    """One Fetch (read_uncommitted) from ``offset``: the high watermark and the raw record batches."""
    host, port = bootstrap.rsplit(":", 1)
    name = topic.encode()
    body = struct.pack(">iiiib", -1, 500, 1, 64 << 20, 0)  # replica, max wait, min bytes, max bytes, isolation
    body += struct.pack(">ih", 1, len(name)) + name + struct.pack(">iiqi", 1, partition, offset, 64 << 20)
    client = b"txn-log"
    header = struct.pack(">hhih", FETCH, FETCH_VERSION, 7, len(client)) + client
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        request = header + body
        sock.sendall(struct.pack(">i", len(request)) + request)
        size = struct.unpack(">i", _read_exactly(sock, 4))[0]
        r = _Reader(_read_exactly(sock, size))
    assert r.take(">i") == 7, "correlation id"
    r.take(">i")  # throttle
    assert r.take(">i") == 1 and r.string() == topic and r.take(">i") == 1
    assert r.take(">i") == partition
    error = r.take(">h")
    assert error == 0, f"fetch of {topic}/{partition} failed with error code {error}"
    high_watermark = r.take(">q")
    r.take(">q")  # last stable offset
    aborted = r.take(">i")
    for _ in range(max(aborted, 0)):
        r.raw(16)
    size = r.take(">i")
    return high_watermark, (r.raw(size) if size > 0 else b"")


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        assert chunk, "the broker closed the connection"
        out += chunk
    return bytes(out)


def read_partition(bootstrap: str, topic: str, partition: int) -> PartitionLog:
    """The whole partition, as a read_committed reader sees it (see the module's rules)."""
    log = PartitionLog()
    pending: dict[int, tuple[int, list[tuple[bytes | None, bytes | None]]]] = {}  # producer id -> epoch, records
    offset, high_watermark = 0, 1
    while offset < high_watermark:
        high_watermark, data = _fetch(bootstrap, topic, partition, offset)
        r = _Reader(data)
        progressed = False
        while r.pos + 12 <= len(data):
            base_offset, length = r.take(">q"), r.take(">i")
            if r.pos + length > len(data):
                break  # a partial batch at the end of the response: fetched again from its offset
            batch = _Reader(r.raw(length))
            batch.take(">i")  # leader epoch
            assert batch.take(">b") == 2, "record batch format v2"
            batch.take(">I")  # crc
            attributes = batch.take(">h")
            assert attributes & CODEC == 0, "compressed batches are not read here"
            last_delta = batch.take(">i")
            batch.raw(16)  # timestamps
            producer, epoch = batch.take(">q"), batch.take(">h")
            batch.take(">i")  # base sequence
            records = []
            for _ in range(batch.take(">i")):
                batch.varint()  # length
                batch.take(">b")
                batch.varint()
                batch.varint()
                key, value = batch.blob(), batch.blob()
                for _ in range(batch.varint()):
                    batch.blob()
                    batch.blob()
                records.append((key, value))
            next_offset = base_offset + last_delta + 1
            if next_offset <= offset:
                continue  # a batch before the fetch offset
            offset, progressed = next_offset, True
            if not attributes & TRANSACTIONAL:
                log.committed.extend(records)
                continue
            held_epoch, held = pending.get(producer, (epoch, []))
            if held and held_epoch < epoch:
                log.fenced += len(held)  # a newer epoch: the old transaction was aborted by the coordinator
                held = []
            if attributes & CONTROL:
                marker = struct.unpack(">hh", records[0][0] or b"\0\0\0\0")[1]
                if marker == COMMIT:
                    log.committed.extend(held)
                    log.commits += 1
                else:
                    log.aborted += len(held)
                    log.aborts += 1
                pending.pop(producer, None)
            else:
                pending[producer] = (epoch, held + records)
        if not progressed:
            break
    log.open = sum(len(records) for _, records in pending.values())
    return log
