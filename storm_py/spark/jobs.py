"""Spark jobs as the pipeline's batch sinks: ``job(spark, df) -> DataFrame`` over newly committed txids, exactly once.

A job's output directory holds one directory per step, ``txids-<first>-<last>/`` (Parquet written by Spark),
and nothing else but ``_staging/`` and a ``_lock``.  A step reads the committed txids after the last one
processed, runs the job over them, writes the result into ``_staging/`` and renames it into place: that
rename is the step's commit, and the directory name is the checkpoint (the last txid processed), so output
and checkpoint are committed together.  A step killed before the rename left only ``_staging/``, which the next
step removes; it then processes the same txids (and any newer ones) again.  Nothing is skipped, nothing
repeated.  :func:`read_output` reads every published step; a plain Spark reader uses
``spark.read.option("recursiveFileLookup", "true").parquet(output)`` (names starting with ``_`` stay hidden).

A job run by ``--follow`` (or attached to a sink) sees the data a step at a time, so its output is the union
of per-step results: row-wise jobs and aggregations keyed by txid or by a column whose groups do not span steps
give the same rows as one run over everything; a global aggregation gives partial aggregates to combine.

:class:`TriggerPolicy` is the pure rule for a job attached to a :class:`~storm_py.spark.ParquetBatchSink`
(every K committed txids or T seconds, when anything is new); :class:`AttachedJob` runs it in a background
thread of the sink's worker, on the topology's clock.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import logging
import os
import re
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storm_py.clock import SYSTEM_CLOCK, Clock
from storm_py.errors import StormPyError
from storm_py.spark.durable import fsync_path
from storm_py.spark.layout import STAGING, DatasetLayout

log = logging.getLogger(__name__)

STEP_RE = re.compile(r"^txids-(\d{20})-(\d{20})$")
LOCK = "_lock"
Job = Callable[[Any, Any], Any]


class JobError(StormPyError):
    """A Spark job cannot be loaded or run (the job's name and the output directory are in the fields)."""

    code = "job_error"


def load_job(spec: str) -> Job:
    """The function named ``module:function``."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise JobError(f"a job is named MODULE:FUNCTION, not {spec!r}", job=spec)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise JobError(f"cannot import the job's module {module_name!r}: {exc}", job=spec) from exc
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise JobError(f"{module_name} has no function {attr!r}", job=spec)
    return fn  # type: ignore[no-any-return]


def step_name(first: int, last: int) -> str:
    return f"txids-{first:020d}-{last:020d}"


def plan_step(latest: int, done_through: int, max_txids: int | None = None) -> tuple[int, int] | None:
    """The txids the next step processes: ``(done_through, latest]``, at most ``max_txids`` of them."""
    if latest <= done_through:
        return None
    last = latest if max_txids is None else min(latest, done_through + max_txids)
    return done_through + 1, last


def check_steps(steps: list[tuple[int, int]]) -> int:
    """The last txid processed, given the published steps; they must tile ``1..last`` without gap or overlap."""
    expected = 1
    for first, last in sorted(steps):
        if first != expected or last < first:
            raise JobError(f"job output steps do not follow each other: {sorted(steps)}", steps=steps)
        expected = last + 1
    return expected - 1


@dataclass(frozen=True)
class TriggerPolicy:
    """When an attached job runs: ``every_txids`` new commits, or ``every_secs`` since its last run."""

    every_txids: int | None = None
    every_secs: float | None = None

    def due(self, pending: int, since_last: float) -> bool:
        """Whether to run now, with ``pending`` committed txids not processed and ``since_last`` seconds passed."""
        if pending <= 0:
            return False
        if self.every_txids is None and self.every_secs is None:
            return True
        if self.every_txids is not None and pending >= self.every_txids:
            return True
        return self.every_secs is not None and since_last >= self.every_secs


class JobOutput:
    """A job's output directory: its published steps, staging, and the lock held while a step runs."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.root = Path(path)
        self.staging = self.root / STAGING

    def steps(self) -> list[tuple[int, int]]:
        if not self.root.is_dir():
            return []
        return sorted((int(m.group(1)), int(m.group(2))) for m in map(STEP_RE.match, os.listdir(self.root)) if m)

    def done_through(self) -> int:
        """The checkpoint: the last txid whose output is published."""
        return check_steps(self.steps())

    def step_dirs(self) -> list[str]:
        return [str(self.root / step_name(a, b)) for a, b in self.steps()]

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the output's lock (one writer at a time; released by the kernel if the process dies)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / LOCK, "a+b") as fh:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                raise JobError(f"another job is writing {self.root}", output=str(self.root)) from exc
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def clean_staging(self) -> None:
        if self.staging.exists():
            shutil.rmtree(self.staging)


def run_step(spark: Any, job: Job, root: str | os.PathLike[str], output: str | os.PathLike[str],
             max_txids: int | None = None) -> tuple[int, int] | None:
    """Process the committed txids after the output's checkpoint once; the ``(first, last)`` done, or None."""
    from storm_py.spark import session

    if not Path(root).is_dir():
        raise JobError(f"the job's input {root} does not exist (a dataset root written by a ParquetBatchSink)",
                       input=str(root))
    out = JobOutput(output)
    with out.locked():
        out.clean_staging()
        span = plan_step(DatasetLayout(root).latest(), out.done_through(), max_txids)
        if span is None:
            return None
        first, last = span
        df = session.read_committed(spark, root, first=first, last=last)
        result = job(spark, df)
        if not session.is_dataframe(result):
            raise JobError(f"the job returned {type(result).__name__}, not a DataFrame", output=str(out.root))
        tmp = out.staging / uuid.uuid4().hex
        out.staging.mkdir(parents=True, exist_ok=True)
        session.write_parquet(result, str(tmp))
        os.rename(tmp, out.root / step_name(first, last))
        fsync_path(out.root)
        out.clean_staging()
        log.info("job output %s: txids %d..%d processed", out.root, first, last)
        return span


def follow(spark: Any, job: Job, root: str | os.PathLike[str], output: str | os.PathLike[str],
           clock: Clock = SYSTEM_CLOCK, poll_secs: float = 1.0, max_txids: int | None = None,
           stop: Callable[[], bool] = lambda: False) -> None:
    """Run steps as txids commit until ``stop()``; waits ``poll_secs`` of ``clock`` when nothing is new."""
    while not stop():
        if run_step(spark, job, root, output, max_txids) is None:
            clock.sleep(poll_secs)


def read_output(spark: Any, output: str | os.PathLike[str]) -> Any:
    """Every published step of a job's output as one DataFrame."""
    from storm_py.spark import session

    dirs = JobOutput(output).step_dirs()
    if not dirs:
        raise JobError(f"{output} holds no job output yet", output=str(output))
    return session.read_parquet(spark, dirs)


def check_job_options(job: str, output: Any, every_txids: int | None, every_secs: float | None,
                      master: str | None) -> dict[str, Any]:
    """The options of a job attached to a sink, checked."""
    if ":" not in job:
        raise JobError(f"an attached job is named MODULE:FUNCTION, not {job!r}", job=job)
    if output is None:
        raise JobError(f"job {job!r} needs job_output (its output directory)", job=job)
    if every_txids is not None and every_txids < 1:
        raise JobError(f"job_every_txids must be at least 1, not {every_txids}", job=job)
    if every_secs is not None and every_secs <= 0:
        raise JobError(f"job_every_secs must be positive, not {every_secs}", job=job)
    return {"job": job, "output": str(output), "every_txids": every_txids, "every_secs": every_secs,
            "master": master}


class AttachedJob:
    """A job run in the background as its sink commits, by :class:`TriggerPolicy`, one step at a time."""

    POLL_SECS = 0.2

    def __init__(self, root: str, options: dict[str, Any], clock: Clock) -> None:
        self.root = root
        self.options = options
        self.policy = TriggerPolicy(options["every_txids"], options["every_secs"])
        self.clock = clock
        self.committed_txid = DatasetLayout(root).latest()
        self.last_run = clock.now()
        self.runs = 0
        self._lock = threading.Lock()
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name=f"spark-job {options['job']}", daemon=True)
        self._thread.start()

    def stopping(self) -> bool:
        """Whether :meth:`stop` was called."""
        return self._stopping

    def stop(self, timeout: float = 60.0) -> None:
        """Stop the loop (a running step finishes first; an unpublished one is redone by the next runner)."""
        self._stopping = True
        self._thread.join(timeout)
        if self._thread.is_alive():
            log.warning("attached Spark job %s over %s still running after %.0f s", self.options["job"],
                        self.root, timeout)

    def committed(self, txid: int) -> None:
        """The sink committed ``txid``."""
        with self._lock:
            self.committed_txid = max(self.committed_txid, txid)

    def _loop(self) -> None:
        job: Job | None = None
        while not self._stopping:
            self.clock.sleep(self.POLL_SECS)
            if self.stopping():
                return
            try:
                out = JobOutput(self.options["output"])
                with self._lock:
                    pending = self.committed_txid - out.done_through()
                if not self.policy.due(pending, self.clock.now() - self.last_run):
                    continue
                from storm_py.spark.session import spark_session

                job = job or load_job(self.options["job"])
                run_step(spark_session(self.options["master"]), job, self.root, out.root)
                self.runs += 1
            except Exception:  # a failed step is retried when next due; its output was not published
                log.exception("attached Spark job %s over %s failed", self.options["job"], self.root)
            self.last_run = self.clock.now()


_ATTACHED: dict[tuple[str, str], AttachedJob] = {}
_ATTACHED_LOCK = threading.Lock()


def attached_trigger(root: str, options: dict[str, Any], clock: Clock | None) -> AttachedJob:
    """The process's background runner of ``options['job']`` over ``root`` (started on first use)."""
    key = (os.path.abspath(root), os.path.abspath(options["output"]))
    with _ATTACHED_LOCK:
        runner = _ATTACHED.get(key)
        if runner is None:
            runner = _ATTACHED[key] = AttachedJob(root, options, clock or SYSTEM_CLOCK)
        return runner


def stop_attached(root: str, output: str) -> None:
    """Stop the process's runner of the job writing ``output`` over ``root``, if one runs."""
    with _ATTACHED_LOCK:
        runner = _ATTACHED.pop((os.path.abspath(root), os.path.abspath(output)), None)
    if runner is not None:
        runner.stop()
