"""The columnar Kafka core: records into batches of the exact schema, the JSON translator, dead-letter batches,
the per-batch offset bookkeeping, and the columnar path's retries and dead letters (with a recording collector)."""

from __future__ import annotations

import datetime as dt
from collections import deque
from typing import Any

import pyarrow as pa
import pytest

from storm_py.kafka import KafkaConfigError, KafkaSpoutConfig
from storm_py.kafka.columnar import (
    DEAD_LETTER_SCHEMA,
    RECORD_SCHEMA,
    BatchTranslationError,
    JsonBatchTranslator,
    dead_letter_batch,
    message_id,
    on_batch_emit,
    records_batch,
    take_batches,
    translate,
)
from storm_py.kafka.columnar_spout import ColumnarPath
from storm_py.kafka.offsets import PartitionOffsets, RetryPolicy
from storm_py.kafka.spout_metrics import KafkaSpoutStats

UTC = dt.UTC


def rec(offset: int, value: bytes | None = b"{}", partition: int = 0, topic: str = "t", key: bytes | None = None,
        ts: int | None = 1_700_000_000_000, headers: Any = None) -> tuple[Any, ...]:
    return (topic, partition, offset, key, value, ts, headers)


def cfg(**kw: Any) -> KafkaSpoutConfig:
    return KafkaSpoutConfig("localhost:9092", ["t"], columnar=True, **kw)


# --------------------------------------------------------------------------------------------- batches
def test_records_become_one_batch_of_exactly_the_record_schema():
    batch = records_batch([rec(5, b"v", key=b"k", headers=[("h", b"x"), ("n", None)]), rec(6, None, ts=None)])
    assert batch.schema.equals(RECORD_SCHEMA)
    assert str(batch.schema.field("timestamp").type) == "timestamp[ms, tz=UTC]"
    assert batch.schema.field("partition").type == pa.int32()
    assert batch.to_pylist() == [
        {"topic": "t", "partition": 0, "offset": 5, "key": b"k", "value": b"v",
         "timestamp": dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC),
         "headers": [{"key": "h", "value": b"x"}, {"key": "n", "value": None}]},
        {"topic": "t", "partition": 0, "offset": 6, "key": None, "value": None, "timestamp": None, "headers": []},
    ]
    assert records_batch([]).num_rows == 0 and records_batch([]).schema.equals(RECORD_SCHEMA)


def test_a_dead_letter_batch_is_the_record_schema_plus_error():
    dead = dead_letter_batch(records_batch([rec(1), rec(2)]), "boom")
    assert dead.schema.equals(DEAD_LETTER_SCHEMA)
    assert dead.column("error").to_pylist() == ["boom", "boom"]
    assert dead.column("offset").to_pylist() == [1, 2]


# ------------------------------------------------------------------------------------------------ JSON
SCHEMA = pa.schema([("offset", pa.int64()), ("user", pa.string()), ("amount", pa.float64()),
                    ("partition", pa.int64()), ("timestamp", pa.timestamp("ms", tz="UTC"))])


def test_json_values_fill_the_schema_and_record_columns_come_from_the_record():
    batch = records_batch([rec(7, b'{"user": "ann", "amount": 2.5, "offset": 99, "extra": 1}'),
                           rec(8, b'{\n "user": "bob"\n}', partition=0)])
    out = translate(JsonBatchTranslator(SCHEMA), SCHEMA, batch)
    assert out.schema.equals(SCHEMA)
    assert out.to_pylist() == [
        {"offset": 7, "user": "ann", "amount": 2.5, "partition": 0,
         "timestamp": dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)},
        {"offset": 8, "user": "bob", "amount": None, "partition": 0,
         "timestamp": dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)},
    ]


@pytest.mark.parametrize("values, says", [
    ([b'{"user": "a"}', b"not json"], "not JSON objects"),
    ([b'{"user": "a"}', None], "no value"),
    ([b'{"user": "a"} {"user": "b"}', b'{"user": "c"}'], "exactly one"),
    ([b'{"user": "a", "amount": "lots"}'], "not JSON objects"),
])
def test_a_batch_the_json_translator_cannot_read_fails_naming_its_offsets(values, says):
    batch = records_batch([rec(10 + i, v, partition=3) for i, v in enumerate(values)])
    with pytest.raises(BatchTranslationError) as err:
        translate(JsonBatchTranslator(SCHEMA), SCHEMA, batch)
    assert says in str(err.value)
    assert f"partition 3 offsets 10..{9 + len(values)}" in str(err.value)


def test_a_callable_translator_must_return_the_declared_columns():
    schema = pa.schema([("offset", pa.int64())])
    batch = records_batch([rec(1), rec(2)])
    out = translate(lambda b: pa.table({"offset": b.column("offset")}), schema, batch)
    assert isinstance(out, pa.RecordBatch) and out.column(0).to_pylist() == [1, 2]
    with pytest.raises(BatchTranslationError, match=r"offset: int32.*offset: int64"):
        translate(lambda b: pa.table({"offset": b.column("offset").cast(pa.int32())}), schema, batch)
    with pytest.raises(BatchTranslationError, match="ZeroDivisionError"):
        translate(lambda b: 1 / 0, schema, batch)
    with pytest.raises(BatchTranslationError, match="returned list"):
        translate(lambda b: [], schema, batch)


def test_pretty_printed_values_are_read_across_the_json_readers_blocks():
    n = 40_000  # about 2 MB: more than one of the reader's 1 MB blocks
    batch = records_batch([rec(i, b'{\n  "user": "u%d",\n  "amount": 1.5\n}' % i) for i in range(n)])
    out = translate(JsonBatchTranslator(SCHEMA), SCHEMA, batch)
    assert out.num_rows == n and out.column("user")[n - 1].as_py() == f"u{n - 1}"


def test_an_empty_batch_translates_to_an_empty_batch_of_the_schema():
    out = translate(JsonBatchTranslator(SCHEMA), SCHEMA, records_batch([]))
    assert out.num_rows == 0 and out.schema.equals(SCHEMA)


# ---------------------------------------------------------------------------------------------- config
@pytest.mark.parametrize("kw, names", [
    ({"translator": lambda r: [r.value], "translator_fields": ["v"]}, "translator"),
    ({"translator_fields": ["v"]}, "translator_fields"),
    ({"records_per_tree": 4}, "records_per_tree"),
])
def test_columnar_with_a_per_record_option_is_refused_naming_both(kw, names):
    with pytest.raises(KafkaConfigError) as err:
        cfg(**kw)
    assert "columnar=True" in str(err.value) and names in str(err.value)


def test_batch_options_are_checked():
    with pytest.raises(KafkaConfigError, match="batch_schema"):
        cfg(batch_translator="json")
    with pytest.raises(KafkaConfigError, match=r"pyarrow\.Schema"):
        cfg(batch_translator="json", batch_schema=["a"])
    with pytest.raises(KafkaConfigError, match="'xml'"):
        cfg(batch_translator="xml", batch_schema=SCHEMA)
    with pytest.raises(KafkaConfigError, match="columnar=True"):
        KafkaSpoutConfig("localhost:9092", ["t"], batch_translator="json", batch_schema=SCHEMA)
    assert cfg().stream_schema().equals(RECORD_SCHEMA)
    assert cfg(batch_translator="json", batch_schema=SCHEMA).stream_schema().equals(SCHEMA)


# ----------------------------------------------------------------------------------------- bookkeeping
def manager(committed: int = 0, max_uncommitted: int = 100, max_retries: int | None = None) -> PartitionOffsets:
    return PartitionOffsets(committed, max_uncommitted, RetryPolicy(0.0, 2.0, 10.0, max_retries))


def test_waiting_records_go_out_as_one_run_per_partition():
    managers = {("t", 0): manager(), ("t", 1): manager()}
    waiting = deque([rec(0), rec(0, partition=1), rec(1), rec(5, partition=9), rec(1, partition=1), rec(2)])
    runs = take_batches(waiting, managers, 100, tracked=True)
    assert [(tp, [r[2] for r in rs]) for tp, rs in runs] == [(("t", 0), [0, 1, 2]), (("t", 1), [0, 1])]
    assert not waiting
    # a budget in records, and records already emitted are dropped
    on_batch_emit(managers[("t", 0)], runs[0][1])
    waiting = deque([rec(1), rec(2), rec(3), rec(4), rec(5)])
    runs = take_batches(waiting, managers, 2, tracked=True)
    assert [[r[2] for r in rs] for _, rs in runs] == [[3, 4]] and len(waiting) == 1


def test_a_batch_is_pending_as_a_whole_and_the_commit_moves_past_it_once_acked():
    m = manager(committed=10, max_uncommitted=5)
    first = [rec(10), rec(11), rec(12)]
    second = [rec(13), rec(14)]
    on_batch_emit(m, first)
    assert message_id(("t", 0), first) == ("t", 0, 10, 12)
    assert m.uncommitted == 3 and m.pollable()
    on_batch_emit(m, second)
    assert m.uncommitted == 5 and not m.pollable()  # max_uncommitted_offsets counts records
    assert m.commit_offset() is None
    assert m.on_ack(13)  # the later batch first: nothing to commit yet
    assert m.commit_offset() is None
    assert m.on_ack(10)
    assert m.commit_offset() == 15
    m.committed_to(15)
    assert m.pollable()


def test_a_failed_batch_is_retried_whole_with_backoff():
    m = manager()
    m.retry = RetryPolicy(1.0, 2.0, 10.0, None)
    on_batch_emit(m, [rec(0), rec(1), rec(2)])
    assert m.on_fail(0, now=100.0) == "retry"
    assert m.due_retries(100.5) == [] and m.due_retries(101.0) == [0]
    assert [r[2] for r in m.pending[0]] == [0, 1, 2]
    assert m.commit_offset() is None


class Recorder:
    def __init__(self) -> None:
        self.emits: list[tuple[Any, Any, str]] = []

    def emit(self, values: Any, msg_id: Any = None, stream: str = "default") -> list[int]:
        self.emits.append((values, msg_id, stream))
        return [1]


def path(config: KafkaSpoutConfig, tracked: bool = True) -> tuple[ColumnarPath, Recorder, dict[Any, Any],
                                                                     list[str]]:
    collector = Recorder()
    managers = {("t", 0): manager(max_retries=config.max_retries)}
    reports: list[str] = []
    p = ColumnarPath(config, collector, managers, KafkaSpoutStats(),  # type: ignore[arg-type]
                     lambda kind, err, now: reports.append(str(err)), tracked)
    return p, collector, managers, reports


def test_past_max_retries_a_batch_goes_to_the_dead_letter_stream_as_one_batch_and_is_done():
    p, collector, managers, _ = path(cfg(max_retries=1))
    p.emit_waiting(deque([rec(0), rec(1)]), 0.0, 100)
    (batch, mid, stream), = collector.emits
    assert (mid, stream, batch.num_rows) == (("t", 0, 0, 1), "default", 2)
    p.fail(mid, 1.0)
    assert p.emit_retries(1.0, 100) == 2 and collector.emits[-1][1] == mid
    p.fail(mid, 2.0)
    dead, dead_mid, dead_stream = collector.emits[-1]
    assert (dead_mid, dead_stream) == (None, "dead_letter")
    assert dead.schema.equals(DEAD_LETTER_SCHEMA) and dead.column("offset").to_pylist() == [0, 1]
    assert "2 times, max_retries=1" in dead.column("error")[0].as_py()
    assert managers[("t", 0)].commit_offset() == 2


def test_a_batch_the_translator_cannot_handle_is_retried_then_dead_lettered():
    schema = pa.schema([("n", pa.int64())])
    p, collector, managers, reports = path(cfg(max_retries=1, batch_translator="json", batch_schema=schema))
    p.emit_waiting(deque([rec(4, b'{"n": 1}'), rec(5, b"oops")]), 0.0, 100)
    assert collector.emits == [] and "partition 0 offsets 4..5" in reports[0]
    assert p.emit_retries(0.0, 100) == 2  # retried at once (no backoff configured), failing again
    dead, _, stream = collector.emits[-1]
    assert stream == "dead_letter" and dead.column("value").to_pylist() == [b'{"n": 1}', b"oops"]
    assert "not JSON objects" in dead.column("error")[0].as_py()
    assert managers[("t", 0)].commit_offset() == 6


def test_untracked_a_batch_the_translator_cannot_handle_is_dead_lettered_at_once():
    schema = pa.schema([("n", pa.int64())])
    p, collector, managers, _ = path(cfg(batch_translator="json", batch_schema=schema), tracked=False)
    p.emit_waiting(deque([rec(0, b"{"), rec(1, b'{"n": 2}')]), 0.0, 100)
    (dead, mid, stream), = collector.emits
    assert (mid, stream, dead.num_rows) == (None, "dead_letter", 2)
    assert not managers[("t", 0)].has_pending()


# ------------------------------------------------------------------------------------ transactional spouts
class TxCollector:
    def __init__(self) -> None:
        self.emitted: list[list[Any]] = []
        self.errors: list[BaseException] = []

    def emit(self, values: list[Any], stream: str = "default") -> None:
        self.emitted.append(values)

    def report_error(self, exc: BaseException) -> None:
        self.errors.append(exc)


def test_a_columnar_transactional_spout_emits_a_partitions_records_as_one_attempt_batch_tuple():
    from storm_py.api.components import OutputFieldsDeclarer
    from storm_py.errors import FailedException
    from storm_py.kafka import KafkaRecord, TransactionalKafkaSpout
    from storm_py.kafka.transactional import _KafkaBatches
    from storm_py.transactional.attempt import TransactionAttempt

    schema = pa.schema([("offset", pa.int64()), ("user", pa.string())])
    config = cfg(batch_translator="json", batch_schema=schema)
    declarer = OutputFieldsDeclarer()
    TransactionalKafkaSpout(config).declare_output_fields(declarer)
    assert declarer.streams["default"][0].to_list() == ["attempt", "batch"]
    batches = _KafkaBatches(config, None)  # type: ignore[arg-type]
    try:
        tx = TransactionAttempt(3, 1)
        collector = TxCollector()
        records = [KafkaRecord("t", 0, 8, None, b'{"user": "a"}', 1), KafkaRecord("t", 0, 9, None, b'{"user": "b"}')]
        batches.emit(tx, collector, records)  # type: ignore[arg-type]
        [(attempt, batch)] = collector.emitted
        assert attempt is tx and batch.schema.equals(schema)
        assert batch.to_pylist() == [{"offset": 8, "user": "a"}, {"offset": 9, "user": "b"}]
        batches.emit(tx, collector, [])  # type: ignore[arg-type]
        assert len(collector.emitted) == 1, "no tuple for a partition without records"
        with pytest.raises(FailedException, match=r"offsets 8\.\.9"):
            batches.emit(tx, collector, [records[0], KafkaRecord("t", 0, 9, None, b"{")])  # type: ignore[arg-type]
        assert collector.errors and len(collector.emitted) == 1
    finally:
        batches.close()
