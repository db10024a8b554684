"""This module owns the Kafka client: the only import of ``confluent_kafka`` in storm_py.

It wraps librdkafka's consumer and producer in the few calls the spouts and the bolt make (manual assignment,
poll, pause/resume, committed/commit with metadata, watermarks, offsets for a time; produce with a delivery
callback), turns the client's messages into :class:`KafkaRecord` objects and its errors into
:class:`KafkaClientError` / :class:`PollError` values naming topic and partition.  Nothing here keeps spout
state: callers decide, this module only talks to the broker.  Every call that waits takes a timeout.

confluent-kafka was chosen over kafka-python by measurement (``bench/kafka_perf.py``; docs/DESIGN.md).

Length: every call into confluent_kafka lives here (the one-owner rule), the transactional producer's included.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import confluent_kafka as ck
import confluent_kafka.admin as ck_admin

from storm_py.clock import SYSTEM_CLOCK
from storm_py.errors import StormPyError

log = logging.getLogger(__name__)
#: librdkafka's own log lines go to this logger (not to stderr)
client_log = logging.getLogger("storm_py.kafka.librdkafka")
#: the consumer's ``fetch.queue.backoff.ms`` (see :class:`KafkaConsumerClient`; ``consumer_options`` may change it)
FETCH_QUEUE_BACKOFF_MS = 10

TopicPartition = tuple[str, int]
#: a record as the spout's per-record path carries it: ``(topic, partition, offset, key, value, timestamp)``
RawRecord = tuple[str, int, int, bytes | None, bytes | None, int | None]
#: a record's headers as the client gives them: ``(key, value)`` pairs, or None when it has none
Headers = list[tuple[str, bytes | None]] | None
#: a record with its headers (a client made with ``headers=True``): ``(*RawRecord, headers)``
HeaderedRecord = tuple[str, int, int, bytes | None, bytes | None, int | None, Headers]
#: logical offsets for :meth:`KafkaConsumerClient.assign`
BEGINNING = ck.OFFSET_BEGINNING
END = ck.OFFSET_END

#: how long a synchronous commit waits for the broker's answer
COMMIT_TIMEOUT = 5.0
_PARTITION_EOF = ck.KafkaError._PARTITION_EOF
_AUTO_OFFSET_RESET = ck.KafkaError._AUTO_OFFSET_RESET
_UNKNOWN_TOPIC = {ck.KafkaError._UNKNOWN_TOPIC, ck.KafkaError.UNKNOWN_TOPIC_OR_PART, ck.KafkaError._UNKNOWN_PARTITION}
_CONNECTION = {ck.KafkaError._TRANSPORT, ck.KafkaError._ALL_BROKERS_DOWN, ck.KafkaError._RESOLVE,
               ck.KafkaError._TIMED_OUT, ck.KafkaError._MSG_TIMED_OUT}


class KafkaClientError(StormPyError):
    """A call to the Kafka broker failed (the message names the call, and topic/partition when known)."""

    code = "kafka_client_error"


class CommitPending(KafkaClientError):
    """A transaction's commit got no answer in time and may still complete: call the commit again (aborting it
    now could follow a commit the broker made, and the transaction's records would be written again)."""

    code = "kafka_commit_pending"


@dataclass(slots=True)
class KafkaRecord:
    """One consumed record (Storm's ``ConsumerRecord``); key and value are bytes or None."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int | None = None
    headers: Headers = None


@dataclass(frozen=True, slots=True)
class PollError:
    """An error event returned by a poll: ``kind`` is ``"offset_reset"``, ``"unknown_topic"``,
    ``"connection"`` or ``"other"``; topic and partition are set when the event names them."""

    kind: str
    message: str
    topic: str | None = None
    partition: int | None = None


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """A partition of a topic and its leader broker (storm-kafka's znode JSON records the leader)."""

    topic: str
    partition: int
    leader_host: str
    leader_port: int


def _error_kind(code: int) -> str:
    if code == _AUTO_OFFSET_RESET:
        return "offset_reset"
    if code in _UNKNOWN_TOPIC:
        return "unknown_topic"
    if code in _CONNECTION:
        return "connection"
    return "other"


def _client_error(what: str, err: BaseException) -> KafkaClientError:
    return KafkaClientError(f"{what} failed: {err}")


def consumer_config(bootstrap_servers: str, group_id: str, options: Mapping[str, Any] | None,
                    auto_offset_reset: str) -> dict[str, Any]:
    """The librdkafka properties of :class:`KafkaConsumerClient`: ``options`` over its defaults, and offsets
    never committed or stored by the client on its own."""
    return {
        "bootstrap.servers": bootstrap_servers,
        "group.id": group_id,
        "fetch.wait.max.ms": 100,
        # librdkafka stops fetching a partition for this long once its prefetch queue is full (1 s by default):
        # a spout that drains the queue faster then polls nothing until the pause ends
        "fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS,
        "socket.connection.setup.timeout.ms": 5000,
        "reconnect.backoff.max.ms": 2000,
        **(options or {}),
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": False,
        "auto.offset.reset": auto_offset_reset,
    }


class KafkaConsumerClient:
    """A consumer with manual assignment; no consumer-group membership (commits only use the group id).

    Args:
        bootstrap_servers: ``"host:port,..."``.
        group_id: the group the offsets are committed under.
        options: more librdkafka consumer properties (``enable.auto.commit`` is always off).
        auto_offset_reset: where a partition restarts when its position is out of range.
    """

    def __init__(self, bootstrap_servers: str, group_id: str, options: Mapping[str, Any] | None = None,
                 auto_offset_reset: str = "earliest", timestamps: bool = True, headers: bool = False) -> None:
        #: whether records carry their timestamp (False: None, one call per record saved when nobody reads it)
        self.timestamps = timestamps
        #: whether each record carries its headers as a seventh element (:data:`HeaderedRecord`; the columnar
        #: spout reads them, the per-record path does not)
        self.headers = headers
        self.commit_results: list[tuple[TopicPartition, int, str | None]] = []
        conf = {**consumer_config(bootstrap_servers, group_id, options, auto_offset_reset),
                "on_commit": self._on_commit, "logger": client_log}
        try:
            self._consumer = ck.Consumer(conf)
        except ck.KafkaException as err:
            raise _client_error("creating a Kafka consumer", err) from err
        self.bootstrap_servers = bootstrap_servers
        self._stash_records: list[RawRecord] = []
        self._stash_errors: list[PollError] = []
        self._assigned: set[TopicPartition] = set()
        self._leaders: dict[TopicPartition, tuple[str, int]] = {}

    # ------------------------------------------------------------------------------------------ metadata
    def topic_partitions(self, timeout: float, topic: str | None = None) -> dict[str, list[PartitionInfo]]:
        """Every topic (or the one named) with its partitions; unknown or failed topics are left out.

        Raises:
            KafkaClientError: the broker did not answer within ``timeout``.
        """
        try:
            md = self._consumer.list_topics(topic, timeout=timeout)
        except ck.KafkaException as err:
            raise _client_error(f"listing topics on {self.bootstrap_servers}", err) from err
        brokers = {bid: (b.host, b.port) for bid, b in md.brokers.items()}
        out: dict[str, list[PartitionInfo]] = {}
        for name, meta in md.topics.items():
            if meta.error is not None or not meta.partitions:
                continue
            infos = []
            for pid, pmeta in sorted(meta.partitions.items()):
                host, port = brokers.get(pmeta.leader, ("", -1))
                infos.append(PartitionInfo(name, pid, host, port))
                self._leaders[(name, pid)] = (host, port)
            out[name] = infos
        return out

    def leader_of(self, tp: TopicPartition) -> tuple[str, int]:
        """The last known leader ``(host, port)`` of a partition (``("", -1)`` when unknown)."""
        return self._leaders.get(tp, ("", -1))

    # --------------------------------------------------------------------------------------- assignment
    def assign(self, positions: Mapping[TopicPartition, int]) -> None:
        """Own exactly these partitions, each fetched from its offset (or :data:`BEGINNING` / :data:`END`)."""
        try:
            self._consumer.assign([ck.TopicPartition(t, p, int(o)) for (t, p), o in sorted(positions.items())])
        except ck.KafkaException as err:
            raise _client_error("assigning partitions", err) from err
        self._assigned = set(positions)

    @property
    def assigned(self) -> set[TopicPartition]:
        """The partitions assigned now."""
        return set(self._assigned)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        """Fetch ``tp`` from ``offset`` next (re-assigning keeps the other partitions' positions)."""
        try:
            self._consumer.seek(ck.TopicPartition(tp[0], tp[1], int(offset)))
        except ck.KafkaException as err:
            raise _client_error(f"seeking {tp[0]}/{tp[1]} to {offset}", err) from err

    def pause(self, tps: Iterable[TopicPartition]) -> None:
        """Stop fetching these partitions (their position stays)."""
        items = [ck.TopicPartition(t, p) for t, p in tps]
        if items:
            self._consumer.pause(items)

    def resume(self, tps: Iterable[TopicPartition]) -> None:
        """Fetch these paused partitions again."""
        items = [ck.TopicPartition(t, p) for t, p in tps]
        if items:
            self._consumer.resume(items)

    def position(self, tp: TopicPartition) -> int | None:
        """The next offset the consumer fetches for ``tp`` (None when not known yet)."""
        try:
            (res,) = self._consumer.position([ck.TopicPartition(tp[0], tp[1])])
        except ck.KafkaException as err:
            raise _client_error(f"reading the position of {tp[0]}/{tp[1]}", err) from err
        return int(res.offset) if res.offset >= 0 else None

    # --------------------------------------------------------------------------------------------- poll
    def poll(self, max_records: int, timeout: float) -> tuple[list[KafkaRecord], list[PollError]]:
        """Up to ``max_records`` records fetched within ``timeout`` seconds, and the error events seen."""
        raw, errors = self.poll_raw(max_records, timeout)
        return [KafkaRecord(*r) for r in raw], errors

    def poll_raw(self, max_records: int, timeout: float) -> tuple[list[RawRecord], list[PollError]]:
        """:meth:`poll` with each record as a plain :data:`RawRecord` tuple (three times cheaper to build)."""
        if self._stash_records or self._stash_errors:  # fetched while a commit waited for its outcome
            records, self._stash_records = self._stash_records, []
            errors, self._stash_errors = self._stash_errors, []
            return records, errors
        return self._consume(max_records, timeout)

    def _consume(self, max_records: int, timeout: float) -> tuple[list[RawRecord], list[PollError]]:
        try:
            messages = self._consumer.consume(max_records, timeout)
        except ck.KafkaException as err:
            return [], [PollError("other", f"poll failed: {err}")]
        records: list[RawRecord] = []
        errors: list[PollError] = []
        append = records.append
        timestamps = self.timestamps
        headers = self.headers
        for m in messages:
            failure = m.error()
            if failure is None:
                if headers:
                    ts = m.timestamp()
                    append((m.topic(), m.partition(), m.offset(), m.key(), m.value(),  # type: ignore[arg-type]
                            ts[1] if ts[0] else None, m.headers()))
                elif timestamps:
                    ts = m.timestamp()
                    append((m.topic(), m.partition(), m.offset(), m.key(), m.value(),  # type: ignore[arg-type]
                            ts[1] if ts[0] else None))
                else:
                    append((m.topic(), m.partition(), m.offset(), m.key(), m.value(), None))  # type: ignore[arg-type]
            elif failure.code() != _PARTITION_EOF:
                errors.append(PollError(_error_kind(failure.code()), failure.str(), m.topic(), m.partition()))
        return records, errors

    # ------------------------------------------------------------------------------------------ offsets
    def committed(self, tps: Iterable[TopicPartition], timeout: float) -> dict[TopicPartition, tuple[int, str | None]]:
        """The committed offset and metadata of each partition that has a commit."""
        items = [ck.TopicPartition(t, p) for t, p in tps]
        if not items:
            return {}
        try:
            res = self._consumer.committed(items, timeout=timeout)
        except ck.KafkaException as err:
            raise _client_error("reading committed offsets", err) from err
        return {(r.topic, r.partition): (int(r.offset), getattr(r, "metadata", None))
                for r in res if r.offset >= 0}

    def commit(self, offsets: Mapping[TopicPartition, int], metadata: str, sync: bool) -> None:
        """Commit ``offsets`` (the next offset to consume per partition) with ``metadata``.

        A synchronous commit waits at most :data:`COMMIT_TIMEOUT` for the outcome and raises
        :class:`KafkaClientError` on failure or timeout; an asynchronous one reports its outcome in
        :attr:`commit_results` during a later :meth:`poll`.
        """
        if not offsets:
            return
        what = "committing offsets " + ", ".join(f"{t}/{p}@{o}" for (t, p), o in sorted(offsets.items()))
        items = [ck.TopicPartition(t, p, int(o), metadata=metadata) for (t, p), o in sorted(offsets.items())]
        seen = len(self.commit_results)
        try:
            # always asynchronous: librdkafka's synchronous commit waits without bound for an absent broker
            self._consumer.commit(offsets=items, asynchronous=True)
        except ck.KafkaException as err:
            raise _client_error(what, err) from err
        if not sync:
            return
        want = dict(offsets)
        deadline = SYSTEM_CLOCK.now() + COMMIT_TIMEOUT
        while want and SYSTEM_CLOCK.now() < deadline:
            raw, errors = self._consume(500, 0.05)  # serves the commit callback; records are kept for later
            self._stash_records.extend(raw)
            self._stash_errors.extend(errors)
            for tp, offset, error in self.commit_results[seen:]:
                if want.get(tp) == offset:
                    if error is not None:
                        raise KafkaClientError(f"{what} failed: {error}")
                    del want[tp]
            seen = len(self.commit_results)
        if want:
            raise KafkaClientError(f"{what}: not confirmed within {COMMIT_TIMEOUT:g}s")

    def _on_commit(self, err: Any, partitions: list[Any]) -> None:
        for tp in partitions:
            error = str(err) if err is not None else (str(tp.error) if tp.error is not None else None)
            self.commit_results.append(((tp.topic, tp.partition), int(tp.offset), error))

    def take_commit_results(self) -> list[tuple[TopicPartition, int, str | None]]:
        """Outcomes of asynchronous commits since the last call: ``(partition, offset, error or None)``."""
        out, self.commit_results = self.commit_results, []
        return out

    def watermarks(self, tp: TopicPartition, timeout: float, cached: bool = False) -> tuple[int, int] | None:
        """``(low, high)`` offsets of ``tp``; ``cached``: from the last fetch, without asking the broker."""
        try:
            low, high = self._consumer.get_watermark_offsets(ck.TopicPartition(tp[0], tp[1]),
                                                             timeout=timeout, cached=cached)
        except ck.KafkaException as err:
            if cached:
                return None
            raise _client_error(f"reading the offsets of {tp[0]}/{tp[1]}", err) from err
        if low < 0 or high < 0:
            return None
        return int(low), int(high)

    def offset_for_time(self, tp: TopicPartition, timestamp_ms: int, timeout: float) -> int | None:
        """The first offset of ``tp`` whose timestamp is at least ``timestamp_ms`` (None: past the end)."""
        try:
            (res,) = self._consumer.offsets_for_times([ck.TopicPartition(tp[0], tp[1], int(timestamp_ms))],
                                                     timeout=timeout)
        except ck.KafkaException as err:
            raise _client_error(f"looking up offsets by time on {tp[0]}/{tp[1]}", err) from err
        return int(res.offset) if res.offset >= 0 else None

    def close(self) -> None:
        """Leave and release the client (no commit happens here)."""
        try:
            self._consumer.close()
        except (ck.KafkaException, RuntimeError) as err:
            log.debug("closing the Kafka consumer: %s", err)


class KafkaProducerClient:
    """A producer whose delivery callbacks run inside :meth:`poll` / :meth:`flush` (the caller's thread)."""

    def __init__(self, bootstrap_servers: str, options: Mapping[str, Any] | None = None) -> None:
        conf: dict[str, Any] = {
            "bootstrap.servers": bootstrap_servers,
            "linger.ms": 5,
            "socket.connection.setup.timeout.ms": 5000,
            **(options or {}),
            "logger": client_log,
        }
        try:
            self._producer = ck.Producer(conf)
        except ck.KafkaException as err:
            raise _client_error("creating a Kafka producer", err) from err

    def produce(self, topic: str, key: bytes | None, value: bytes | None,
                on_delivery: Callable[[str | None, str, int, int], None]) -> None:
        """Queue one record; ``on_delivery(error or None, topic, partition, offset)`` runs in a later poll.

        Raises:
            KafkaClientError: the record cannot be queued (bad topic name, record too large ...).
        """

        def delivered(err: Any, msg: Any) -> None:
            on_delivery(None if err is None else str(err), msg.topic() or topic,
                        msg.partition() if msg.partition() is not None else -1,
                        msg.offset() if msg.offset() is not None else -1)

        while True:
            try:
                self._producer.produce(topic, value=value, key=key, on_delivery=delivered)
                return
            except BufferError:
                self._producer.poll(0.05)  # the local queue is full: serve deliveries, then try again
            except (ck.KafkaException, TypeError, ValueError) as err:
                raise _client_error(f"producing to topic {topic!r}", err) from err

    def poll(self, timeout: float = 0.0) -> int:
        """Serve delivery callbacks; the number served."""
        return int(self._producer.poll(timeout))

    def flush(self, timeout: float) -> int:
        """Wait up to ``timeout`` for queued records; how many are still undelivered."""
        return int(self._producer.flush(timeout))

    def __len__(self) -> int:
        return len(self._producer)


class KafkaTransactionalProducer(KafkaProducerClient):
    """A producer with a ``transactional.id``: :meth:`init_transactions` fences an earlier producer of the same id
    (and aborts its open transaction); :meth:`send_marker` adds a *marker* to the open transaction, an offset
    committed for consumer group ``marker_group`` on one partition (what :meth:`marker` reads back), and
    :meth:`complete_commit` commits them together."""

    def __init__(self, bootstrap_servers: str, transactional_id: str, options: Mapping[str, Any] | None = None,
                 marker_group: str | None = None) -> None:
        # librdkafka's property names as keywords (as KafkaBolt takes producer options): "transactional" would
        # read as the first segment of a storm_py config key
        props = {k.replace("_", "."): v for k, v in
                 {"transactional_id": transactional_id, "enable_idempotence": True}.items()}
        super().__init__(bootstrap_servers, {**(options or {}), **props})
        self.transactional_id = transactional_id
        try:
            self._marker = ck.Consumer({"bootstrap.servers": bootstrap_servers,
                                        "group.id": marker_group or transactional_id,
                                        "enable.auto.commit": False, "logger": client_log})
        except ck.KafkaException as err:
            raise _client_error("creating the marker consumer", err) from err

    def _call(self, what: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except ck.KafkaException as err:
            raise _client_error(f"{what} of transactional id {self.transactional_id!r}", err) from err

    def init_transactions(self, timeout: float) -> None:
        self._call("init_transactions", lambda: self._producer.init_transactions(timeout))

    def begin(self) -> None:
        self._call("begin_transaction", self._producer.begin_transaction)

    def send_marker(self, marker: tuple[str, int, int], timeout: float) -> None:
        """Add the marker ``(topic, partition, value)`` to the open transaction (committed with it)."""
        topic, partition, value = marker
        meta = self._marker.consumer_group_metadata()
        self._call("send_offsets_to_transaction", lambda: self._producer.send_offsets_to_transaction(
            [ck.TopicPartition(topic, partition, value)], meta, timeout))

    def complete_commit(self, timeout: float) -> None:
        """Commit the open transaction; after :class:`CommitPending` call it again: the commit goes on from where
        it was.

        Raises:
            CommitPending: no answer within ``timeout``; the commit may still complete.
            KafkaClientError: the transaction cannot commit (abort it).
        """
        try:
            self._producer.commit_transaction(timeout)
        except ck.KafkaException as err:
            error = err.args[0] if err.args else None
            if isinstance(error, ck.KafkaError) and error.retriable() and not error.txn_requires_abort():
                raise CommitPending(f"commit_transaction of transactional id {self.transactional_id!r} is not "
                                    f"confirmed yet: {err}") from err
            raise _client_error(f"commit_transaction of transactional id {self.transactional_id!r}", err) from err

    def abort(self, timeout: float) -> None:
        self._call("abort_transaction", lambda: self._producer.abort_transaction(timeout))

    def marker(self, topic: str, partition: int, timeout: float) -> int | None:
        """The marker committed last (``None``: none)."""
        [tp] = self._call("reading the marker", lambda: self._marker.committed(
            [ck.TopicPartition(topic, partition)], timeout))
        return None if tp.offset < 0 else int(tp.offset)

    def reset_marker(self, topic: str, partition: int, value: int) -> None:
        """Set the marker outside a transaction (a task whose state starts empty)."""
        self._call("resetting the marker", lambda: self._marker.commit(
            offsets=[ck.TopicPartition(topic, partition, value)], asynchronous=False))

    def close(self) -> None:
        self._marker.close()


class KafkaAdmin:
    """Topic administration for the dev broker, tests and benchmarks."""

    def __init__(self, bootstrap_servers: str) -> None:
        conf: dict[str, Any] = {"bootstrap.servers": bootstrap_servers, "logger": client_log}
        self._admin = ck_admin.AdminClient(conf)

    def create_topic(self, name: str, partitions: int, timeout: float = 10.0) -> None:
        """Create ``name`` with ``partitions`` partitions (replication 1)."""
        if not re.fullmatch(r"[A-Za-z0-9._-]{1,249}", name):
            raise KafkaClientError(f"invalid topic name {name!r}")
        futures = self._admin.create_topics([ck_admin.NewTopic(name, partitions, 1)])  # type: ignore[attr-defined]
        try:
            for fut in futures.values():
                fut.result(timeout)
        except ck.KafkaException as err:
            raise _client_error(f"creating topic {name!r}", err) from err

    def delete_topic(self, name: str, timeout: float = 10.0) -> None:
        """Delete ``name``."""
        try:
            for fut in self._admin.delete_topics([name]).values():
                fut.result(timeout)
        except ck.KafkaException as err:
            raise _client_error(f"deleting topic {name!r}", err) from err
