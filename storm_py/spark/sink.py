"""ParquetBatchSink: the committer bolt that lands each committed txid exactly once as Parquet, and its writer core.

:class:`DatasetWriter` does one task's part of a commit: check the rows against the schema, apply the commit
rule of :mod:`storm_py.spark.layout` (publish ``N = _LATEST + 1``, replace a replayed ``N = _LATEST`` beside its
old files and switch its manifest, skip an older N),
write the files into ``_staging/``, rename them into their ``txid=N`` directories, write the task's part
manifest and, once every task of the sink wrote its part *for this attempt*, N's manifest and then
``_LATEST``.  (Parts of an earlier attempt do not count: a replay may deal rows to the tasks differently.)  Its janitor
runs once per process and task before the first commit.

:class:`ParquetBatchSink` is the thin bolt around it: rows are collected while the batch is processed, written
in the commit phase, and the rows that do not fit go to stream ``"errors"`` as ``[attempt, values, reason]``.
A Spark job can be attached (``job=``): it runs in the background every ``job_every_txids`` commits or
``job_every_secs`` seconds (see :mod:`storm_py.spark.jobs`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from storm_py.api.components import OutputFieldsDeclarer
from storm_py.api.tuple import Tuple
from storm_py.spark.durable import fsync_round, in_background
from storm_py.spark.janitor import clean_up
from storm_py.spark.layout import (
    CommitAction,
    DatasetLayout,
    Manifest,
    merge_parts,
    partition_dir,
    plan_commit,
    source_ranges,
)
from storm_py.spark.resolve import coerce_schema, is_arrow_data
from storm_py.spark.schema import Schema
from storm_py.transactional.attempt import TransactionAttempt
from storm_py.transactional.batch import BaseTransactionalBolt, BatchOutputCollector, Committer

if TYPE_CHECKING:
    from storm_py.api.context import TopologyContext

log = logging.getLogger(__name__)

ERROR_STREAM = "errors"
ERROR_FIELDS = ["attempt", "values", "reason"]
#: the values of a batch input tuple: ``[attempt, batch]``
BATCH_INPUT_WIDTH = 2
#: called at named points with the attempt being committed; may raise FailedException (fault injection)
FaultHook = Callable[[str, TransactionAttempt], None]


@dataclass
class WriterOptions:
    """How files are cut: at most ``max_rows_per_file`` rows per file, row groups of ``row_group_rows``."""

    max_rows_per_file: int = 1_000_000
    row_group_rows: int = 128 * 1024
    compression: str = "zstd"
    fsync: bool = True

    def __post_init__(self) -> None:
        if self.max_rows_per_file < 1 or self.row_group_rows < 1:
            raise ValueError(f"max_rows_per_file and row_group_rows must be positive: {self}")


@dataclass
class CommitResult:
    """What one task's commit of a txid did."""

    action: CommitAction
    rows: int = 0
    bad: list[tuple[Sequence[Any], str]] = field(default_factory=list)
    committed: bool = False  # this task completed the txid (wrote its manifest and _LATEST)


class DatasetWriter:
    """One sink task's writer over a dataset root (``task`` of ``ntasks`` writing parts of each txid)."""

    def __init__(self, root: str | os.PathLike[str], schema: Any, partition_by: Sequence[str] | None = None,
                 task: int = 0, ntasks: int = 1, options: WriterOptions | None = None) -> None:
        self.layout = DatasetLayout(root)
        self.schema: Schema = coerce_schema(schema)
        self.partition_by = self.schema.check_partition_by(partition_by or ())
        self.task = task
        self.ntasks = ntasks
        self.options = options or WriterOptions()
        self.fingerprint = self.schema.fingerprint()
        self._started = False
        self._lock = threading.Lock()
        self._published: dict[int, list[Path]] = {}  # files this process published for uncommitted txids
        # a single task's last committed txid, known after its start-up and each commit it made; dropped when a
        # commit fails (it may have gone through): then read from the dataset again
        self._latest: int | None = None

    def start(self) -> list[str]:
        """Create the layout and run the janitor (once); what it removed."""
        with self._lock:
            if self._started:
                return []
            self.layout.ensure()
            removed = clean_up(self.layout, self.task, self.ntasks)
            self._latest = self.layout.latest() if self.ntasks == 1 else None
            if removed:
                log.info("dataset %s: removed leftovers of task %d: %s", self.layout.root, self.task, removed)
            self._started = True
            return removed

    def commit(self, txid: int, attempt: int, rows: Sequence[Sequence[Any]],
               source: dict[str, Any] | None = None, hook: Callable[[str], None] | None = None,
               tables: Sequence[Any] = ()) -> CommitResult:
        """Publish this task's ``rows`` and the rows of ``tables`` (pyarrow tables of the schema's fields, as
        :func:`storm_py.spark.arrow.batch_table` makes them) of ``txid`` (replacing an earlier attempt's); skip a
        published txid."""
        self.start()
        latest = self.layout.latest() if self._latest is None else self._latest
        self._latest = None
        action = plan_commit(latest, txid)
        # a single task publishing N creates N's pending manifest and directory on an I/O thread while the rows
        # are checked and encoded here: file creates cost as much as the encoding of a small batch
        pending: list[Future[int]] = []
        if action is CommitAction.PUBLISH and self.ntasks == 1:
            data_dir = None if self.partition_by else self.layout.root / partition_dir((), (), txid)
            pending.append(in_background(self.layout.open_pending, txid, data_dir))
        fds: list[int] = []
        try:
            good, bad, columns = self.schema.check_batch(rows)
            if action is CommitAction.SKIP:
                self._latest = latest if self.ntasks == 1 else None
                return CommitResult(action, 0, bad)
            result = self._commit(txid, attempt, good, bad, columns, action, source, hook, fds, pending, tables)
        finally:
            for fd in fds:
                os.close(fd)
            for unused in pending:  # the commit failed before publishing: recover() removes the empty file
                with contextlib.suppress(Exception):
                    os.close(unused.result())
        if self.ntasks == 1 and result.committed:
            self._latest = txid
        return result

    def _commit(self, txid: int, attempt: int, good: list[Sequence[Any]], bad: list[tuple[Sequence[Any], str]],
                columns: list[list[Any]], action: CommitAction, source: dict[str, Any] | None,
                hook: Callable[[str], None] | None, fds: list[int], pending: list[Future[int]],
                tables: Sequence[Any] = ()) -> CommitResult:
        current = self.layout.read_manifest(txid) if action is CommitAction.REPLACE else None
        self._remove_earlier_attempt(txid, {f.path for f in current.files} if current else set())
        if hook is not None:
            hook("before-publish")
        from storm_py.spark.arrow import write_txid_files

        o = self.options
        token = uuid.uuid4().hex[:12]
        prefix = f"{txid:020d}-{self.task:05d}-{token}"
        written = write_txid_files(self.layout.staging, prefix, self.schema, columns, self.partition_by, txid,
                                   self.task, token, max_rows_per_file=o.max_rows_per_file,
                                   row_group_rows=o.row_group_rows, compression=o.compression, fsync=False,
                                   keep=fds if o.fsync and self.ntasks == 1 and current is None else None,
                                   tables=tables)
        pending_fd = pending.pop().result() if pending else None
        if pending_fd is not None and not written and not self.partition_by:  # every row was bad: no directory
            with contextlib.suppress(OSError):
                (self.layout.root / partition_dir((), (), txid)).rmdir()
        targets: set[Path] = set()
        published = self._published.setdefault(txid, [])
        for entry, staged in written:
            target = self.layout.root / entry.path
            if target.parent not in targets:
                target.parent.mkdir(parents=True, exist_ok=True)
                targets.add(target.parent)
            os.rename(staged, target)
            published.append(target)
        # fsynced after the renames, all at once (with the manifest and the pointer when this task commits N)
        # N's directories, and those holding their names (up to the root): a new directory's entry is durable
        # only once its parent is fsynced
        holders = {p for d in targets for p in d.parents if p == self.layout.root or self.layout.root in p.parents}
        files: list[Path | int] = [*(fds or published[len(published) - len(written):])] if o.fsync else []
        dirs: list[Path | int] = [*targets, *holders] if o.fsync else []
        part = Manifest(txid, attempt, [entry for entry, _ in written], self.schema.to_dict(), self.fingerprint,
                        source or {}, len(bad), [self.task])
        if self.ntasks == 1 and current is None:  # the common case: one task publishes N
            if hook is not None:
                hook("before-latest")
            self.layout.publish_latest(part, files, dirs, o.fsync, hook, pending_fd)
            self._published.pop(txid, None)
            return CommitResult(action, len(good) + sum(t.num_rows for t in tables), bad, True)
        fsync_round(files, dirs)
        if self.ntasks == 1:
            parts = [part]
        else:  # only parts of this attempt: a grouping may deal the replayed batch's rows to tasks differently
            self.layout.write_part(part, self.task, o.fsync)
            parts = [p for p in self.layout.read_parts(txid) if p.attempt == attempt]
        committed = len({t for p in parts for t in p.tasks}) >= self.ntasks
        if committed and current is not None:  # N stays committed: its manifest switches to the new content
            if hook is not None:
                hook("before-latest")
            self.layout.replace_manifest(current, merge_parts(parts), o.fsync)
            self._published.pop(txid, None)
        elif committed:
            if hook is not None:
                hook("before-latest")
            self.layout.write_manifest(merge_parts(parts), o.fsync)  # N's manifest in place: N is committed
            self.layout.set_latest(txid, o.fsync)  # the hint, and the fsync that makes the manifest's rename durable
            self._published.pop(txid, None)
        return CommitResult(action, len(good) + sum(t.num_rows for t in tables), bad, committed)

    def _remove_earlier_attempt(self, txid: int, keep: set[str]) -> None:
        """Delete what this task published for ``txid`` before (in this process, or as its part manifest says),
        except the committed files in ``keep`` (relative paths: a replaced N's current content)."""
        paths = set(self._published.pop(txid, []))
        if self.ntasks > 1:  # a single task writes no part manifests
            for part in self.layout.read_parts(txid):
                if self.task in part.tasks:
                    paths.update(self.layout.root / f.path for f in part.files)
            with contextlib.suppress(FileNotFoundError):
                (self.layout.parts_dir(txid) / f"task-{self.task:05d}.json").unlink()
        for path in paths:
            if path.relative_to(self.layout.root).as_posix() not in keep:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()


class _Writers:
    """The process's writers, one per (root, task): the janitor runs once per process and task."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[tuple[str, int], DatasetWriter] = {}

    def get(self, sink: ParquetBatchSink, task: int, ntasks: int) -> DatasetWriter:
        key = (os.path.abspath(sink.root), task)
        with self._lock:
            writer = self._by_key.get(key)
            if writer is None or writer.ntasks != ntasks or writer.fingerprint != sink.schema.fingerprint():
                writer = DatasetWriter(sink.root, sink.schema, sink.partition_by, task, ntasks, sink.options)
                self._by_key[key] = writer
            return writer


WRITERS = _Writers()


class ParquetBatchSink(BaseTransactionalBolt, Committer):
    """A committer batch bolt landing each txid atomically under ``root``.

    Input tuples are ``[attempt, *values]`` in schema order, or ``[attempt, batch]`` whose batch is a
    ``pyarrow.RecordBatch`` or ``Table``: its columns are matched to the schema's fields by name and cast safely
    (other columns are ignored), and a batch that lacks a field or cannot be cast goes to ``"errors"`` whole as
    ``[attempt, batch, reason]``.  Options: ``max_rows_per_file``,
    ``row_group_rows``, ``compression`` (pyarrow's names, default zstd), ``fsync``; ``source_fields=(partition,
    offset)`` names two fields whose per-partition ``[first, last]`` go into the manifest (e.g. Kafka offsets);
    ``job``/``job_output``/``job_every_txids``/``job_every_secs``/``job_master`` attach a Spark job;
    ``fault_hook(point, attempt)`` is called at ``sink.execute``, ``sink.before-publish``,
    ``sink.before-latest`` (before N's manifest), ``sink.before-fsync``, ``sink.before-rename`` and
    ``sink.before-hint`` (inside a single task's commit) and ``sink.after-commit`` (for fault-injection tests).
    """

    def __init__(self, root: str | os.PathLike[str], schema: Any, partition_by: Sequence[str] | None = None,
                 *, max_rows_per_file: int = 1_000_000, row_group_rows: int = 128 * 1024,
                 compression: str = "zstd", fsync: bool = True, source_fields: Sequence[str] | None = None,
                 job: str | None = None, job_output: str | os.PathLike[str] | None = None,
                 job_every_txids: int | None = None, job_every_secs: float | None = None,
                 job_master: str | None = None, fault_hook: FaultHook | None = None) -> None:
        self.root = str(root)
        self.schema = coerce_schema(schema)
        self.partition_by = self.schema.check_partition_by(partition_by or ())
        self.options = WriterOptions(max_rows_per_file, row_group_rows, compression, fsync)
        self.source_index: tuple[int, int] | None = None
        if source_fields is not None:
            a, b = source_fields
            self.source_index = (self.schema.names.index(self.schema.field(a).name),
                                 self.schema.names.index(self.schema.field(b).name))
        self.job: dict[str, Any] | None = None
        if job is not None:
            from storm_py.spark.jobs import check_job_options

            self.job = check_job_options(job, job_output, job_every_txids, job_every_secs, job_master)
        self.fault_hook = fault_hook

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: BatchOutputCollector,
                id: Any) -> None:
        self.collector = collector
        self.attempt: TransactionAttempt = id
        self.context = context
        tasks = context.get_component_tasks(context.get_this_component_id()) if context is not None else []
        self.writer = WRITERS.get(self, context.get_this_task_index() if context is not None else 0,
                                  max(1, len(tasks)))
        self.rows: list[Sequence[Any]] = []
        #: batch inputs of this txid, cast to the schema (pyarrow tables), and those that did not fit
        self.tables: list[Any] = []
        self.bad_batches: list[tuple[Any, str]] = []

    def execute(self, tup: Tuple) -> None:
        if self.fault_hook is not None:
            self.fault_hook("sink.execute", self.attempt)
        values = tup.values
        if len(values) == BATCH_INPUT_WIDTH and is_arrow_data(values[1]):
            from storm_py.spark.arrow import batch_table

            table, reason = batch_table(self.schema, values[1])
            if table is None:
                self.bad_batches.append((values[1], f"batch from {tup.source_component!r}: {reason}"))
            else:
                self.tables.append(table)
            return
        self.rows.append(values[1:])

    def finish_batch(self) -> None:
        attempt = self.attempt
        hook = self.fault_hook
        source = None
        if self.source_index is not None:
            i, j = self.source_index
            pairs = [(r[i], r[j]) for r in self.rows if len(r) > max(i, j)]
            if self.tables:
                from storm_py.spark.arrow import source_pairs

                names = self.schema.names
                for table in self.tables:
                    pairs.extend(source_pairs(table, names[i], names[j]))
            source = source_ranges(pairs)
        result = self.writer.commit(
            attempt.transaction_id, attempt.attempt_id, self.rows, source,
            None if hook is None else (lambda point: hook(f"sink.{point}", attempt)), self.tables)
        if result.action is CommitAction.SKIP:
            log.info("txid %d is already committed under %s: replay skipped", attempt.transaction_id, self.root)
        if hook is not None:
            hook("sink.after-commit", attempt)
        for values, reason in result.bad:
            self.collector.emit([attempt, list(values), reason], ERROR_STREAM)
        for batch, reason in self.bad_batches:
            self.collector.emit([attempt, batch, reason], ERROR_STREAM)
        if self.job is not None and self.writer.task == 0:
            from storm_py.spark.jobs import attached_trigger

            clock = self.context.clock if self.context is not None else None
            attached_trigger(self.root, self.job, clock).committed(attempt.transaction_id)

    def cleanup(self) -> None:
        """Stop the attached job's background runner (the bolt shuts down: topology killed, worker stopped)."""
        if self.job is not None:
            from storm_py.spark.jobs import stop_attached

            stop_attached(self.root, self.job["output"])

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare_stream(ERROR_STREAM, ERROR_FIELDS)
