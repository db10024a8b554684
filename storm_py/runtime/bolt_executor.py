"""This module owns the bolt executor: it runs input batches through a bolt's tasks and sends their acks.

A bolt that raises fails its input and the batch goes on; a :class:`~storm_py.api.components.BasicBolt` has its
emits anchored to the input and the input acked (or failed) for it; a wrapper that runs as a basic bolt once
prepared (:class:`~storm_py.runtime.contracts.RunsAsBasic`) has that one run in its place.  A bolt whose work
also arrives from outside its inputs (a shell bolt's process:
:class:`~storm_py.runtime.contracts.BackgroundWork`) is handed the worker loop's wake-up before ``prepare`` and
has ``background_step`` called on every pass, on the loop's thread, so what it emits, acks and fails there goes
out like the rest.  Such a bolt may also bound its inputs (:class:`~storm_py.runtime.contracts.BoundedInbox`):
the executor hands it no more tuples than its ``room()`` and keeps the rest in its inbox (still counted in the
worker's backlog, which pauses the spouts), while the loop goes on with other executors.  A step runs its inbox
for at most :data:`STEP_SECS` (between batches), so a slow bolt with a long inbox never holds the worker's loop, nor
its liveness, for longer.
Acks of consecutive inputs of one tree are XORed into one ack row
(:class:`~storm_py.runtime.bolt_collectors.SentAcks`, the collectors' one ack path); acks held and released in
bulk (a stateful bolt's at a commit) go out a bounded number a step (:meth:`BoltExecutor.ack_held`).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import Any, Final

from mypy_extensions import mypyc_attr

from storm_py.api.components import BasicBolt
from storm_py.api.tuple import Tuple, make_tick_tuple
from storm_py.errors import FailedException, ReportedFailedException
from storm_py.runtime.acker import ACK
from storm_py.runtime.bolt_collectors import BasicCollector, BoltCollector, HeldAcks, SentAcks
from storm_py.runtime.contracts import BackgroundWork, BoundedInbox, RunsAsBasic, TakesBatches
from storm_py.runtime.executor import Executor, ExecutorHost
from storm_py.runtime.hooks import cleanup_task_hooks, timed_runner
from storm_py.runtime.taps import watch
from storm_py.vector.rows import row_tuples

log = logging.getLogger(__name__)

#: how many released ack rows a step sends (see :meth:`BoltExecutor.ack_held`)
RELEASED_ROWS_PER_STEP: Final = 4096
#: how long a step runs its inbox's batches before it leaves the rest for the loop's next pass (checked between
#: batches): the worker's other executors, its timers and the pass count its liveness is judged by go on while a
#: slow bolt works through a long inbox
STEP_SECS: Final = 0.1


# the asyncio bolts' executor (runtime/async_executor.py) is an interpreted subclass: its overrides must be called
@mypyc_attr(allow_interpreted_subclasses=True)
class BoltExecutor(Executor):
    """Executes input tuples on the bolt tasks; a bolt that raises fails the input and processing goes on."""

    def __init__(self, rt: ExecutorHost, component_id: str, task_ids: list[int]) -> None:
        super().__init__(rt, component_id, task_ids)
        #: the tasks' acks, merged by run (see :class:`~storm_py.runtime.bolt_collectors.AckRuns`)
        self.acks = SentAcks(self.outbuf, self.acker_tasks)
        #: held acks released and not all sent yet, oldest first (see :meth:`ack_held`)
        self.releasing: deque[HeldAcks] = deque()
        #: rows of ``releasing[0]`` sent already
        self.released_rows = 0
        self.bolts: dict[int, Any] = {}
        self.collectors: dict[int, BoltCollector] = {}
        self.runners: dict[int, Any] = {}
        #: id of a sampled input -> when its batch started (first input of each batch of a plain bolt's task;
        #: the collector's ``ack`` takes it out); a basic bolt's tasks are not sampled: its process time is execute time
        self.process_samples: dict[int, float] = {}
        self.sampled_tasks: set[int] = set()
        #: ``background_step`` of the tasks' bolts that have one, and their ``room`` (see the module's docstring)
        self.background: list[Callable[[float], bool]] = []
        self.rooms: dict[int, Callable[[], int]] = {}

    def components(self) -> dict[int, Any]:
        return self.bolts

    def prepare(self) -> None:
        conf = self.rt.component_conf(self.component_id)
        for t in self.task_ids:
            bolt = self.instantiate(t)
            collector = BoltCollector(self, t)
            self.bolts[t] = bolt
            self.collectors[t] = collector
            if isinstance(bolt, BackgroundWork):
                bolt.bind_wake(self.rt.wake.set)
                self.background.append(bolt.background_step)
                if isinstance(bolt, BoundedInbox):
                    self.rooms[t] = bolt.room
            try:
                if isinstance(bolt, BasicBolt):
                    bolt.prepare(conf, self.context_for(t))
                else:
                    bolt.prepare(conf, self.context_for(t), collector)
                # a wrapper may run as a basic bolt once prepared
                basic: BasicBolt | None = None
                if isinstance(bolt, BasicBolt):
                    basic = bolt
                elif isinstance(bolt, RunsAsBasic):
                    basic = bolt.basic_bolt
                if basic is not None:
                    self.runners[t] = self._basic_runner(basic, collector)
                else:
                    self.runners[t] = self._runner(bolt.execute, t)
                    self.sampled_tasks.add(t)
                watch(self, t)  # its emits: tapped for hooks and topology.debug, else left alone
                hooks = self.context_for(t).hooks
                if hooks:  # only a task with hooks runs hook code per tuple
                    collector._hooks = hooks
                    if basic is not None:
                        self.runners[t] = self._basic_runner(basic, collector)
                    self.runners[t] = timed_runner(self.runners[t], t, hooks, self.clock)
                tracer = self.rt.tracer
                if tracer is not None and not self.component_id.startswith("__"):
                    self.runners[t] = tracer.bolt_runner(self.runners[t], self.component_id, t, self.outbuf)
                columnar = self.context_for(t).get_columnar_sources()
                if columnar and not (isinstance(bolt, TakesBatches) and bolt.takes_batches()):  # rows as tuples
                    self.runners[t] = self._rows_runner(self.runners[t], columnar, collector)
            except Exception as exc:
                # As in Storm, a task that cannot prepare takes its worker down (the supervisor restarts it with
                # backoff); the error is reported as itself first, so the topology's errors show the cause.
                log.exception("bolt %s task %d failed in prepare", self.component_id, t)
                self.report_error(t, exc)
                raise

    def instantiate(self, task: int) -> Any:
        """The component object of ``task`` (a private copy)."""
        return self.rt.instantiate(self.component_id, task)

    def _runner(self, execute: Callable[[Tuple], None], task: int) -> Callable[[list[Tuple]], None]:
        """Run a batch through a bolt's ``execute``; one that raises fails its input and the batch goes on."""
        on_error = self._on_error

        def run(batch: list[Tuple]) -> None:
            for tup in batch:
                try:
                    execute(tup)
                except Exception as exc:
                    on_error(task, tup, exc)

        return run

    def _rows_runner(self, run: Callable[[list[Tuple]], None], columnar: frozenset[tuple[str, str]],
                     collector: BoltCollector) -> Callable[[list[Tuple]], None]:
        """Run a batch through ``run`` with each batch tuple of a ``columnar`` input replaced by its rows, each a
        tuple anchored to the batch tuple (which is acked here: its tree then waits for its rows)."""
        ids = self.rt.ids if collector._acking else None
        ack = collector.ack

        def rows_run(batch: list[Tuple]) -> None:
            out: list[Tuple] = []
            for tup in batch:
                if (tup.source_component, tup.source_stream) in columnar:
                    out.extend(row_tuples(tup, ids))
                    ack(tup)
                else:
                    out.append(tup)
            run(out)

        return rows_run

    def _basic_runner(self, bolt: BasicBolt, collector: BoltCollector) -> Callable[[list[Tuple]], None]:
        """Run a batch through a :class:`BasicBolt`: anchor its emits to the input, ack or fail the input."""
        basic = BasicCollector(self, collector._task, collector)
        execute = bolt.execute
        fail = collector.fail
        report = self.report_error
        on_error = self._on_error
        task = collector._task
        each = bool(collector._hooks)  # hooks see each ack before the next input runs (Storm's order)

        def run(batch: list[Tuple]) -> None:
            done: list[Tuple] = []  # else acked together after the batch: one count, no call per input
            for tup in batch:
                basic.input = tup
                try:
                    execute(tup, basic)
                except ReportedFailedException as exc:
                    report(task, exc)
                    fail(tup)
                    continue
                except FailedException:
                    fail(tup)
                    continue
                except Exception as exc:
                    on_error(task, tup, exc)
                    continue
                if each:
                    collector.ack(tup)
                else:
                    done.append(tup)
            if done:
                collector.ack_all(done)

        return run

    def step(self, now: float) -> bool:
        inbox = self.inbox
        did = False
        if inbox:
            did = True
            runners = self.runners
            inputs = self.stats.inputs
            clock = self.clock
            n = 0
            start = clock.now()
            step_ends = start + STEP_SECS
            samples = self.process_samples
            sampled = self.sampled_tasks
            rooms = self.rooms
            while inbox:
                task, batch = inbox.popleft()
                if rooms:
                    room = rooms[task]() if task in rooms else len(batch)
                    if room < len(batch):  # the bolt takes no more now: the rest waits in the inbox
                        if room <= 0:
                            inbox.appendleft((task, batch))
                            break
                        inbox.appendleft((task, batch[room:]))
                        batch = batch[:room]
                n += len(batch)
                if task in sampled and batch:
                    if len(samples) >= 64:  # inputs never acked (failed, timed out): forget old samples
                        samples.clear()
                    samples[id(batch[0])] = start
                runners[task](batch)
                # execute time and count per input stream, measured per batch (no per-tuple cost); a batch
                # usually holds one stream: its first and last tuples tell, otherwise it is split by tuple
                end = clock.now()
                secs = end - start
                start = end
                if not batch:
                    continue
                first = batch[0]
                last = batch[-1]
                if first.source_stream == last.source_stream and first.source_component == last.source_component:
                    key = (first.source_component, first.source_stream)
                    entry = inputs.get(key)
                    if entry is None:
                        entry = inputs[key] = [0, 0.0]
                    entry[0] += len(batch)
                    entry[1] += secs
                else:
                    self._count_mixed(batch, secs)
                if end > step_ends:  # the rest waits for the next pass
                    break
            self.stats.executed += n
            self.rt.backlog -= n
            did = n > 0 or not rooms  # inputs held back for room are no work done (the loop may wait)
        if now >= self.next_tick:
            did = True
            self.next_tick = now + (self.tick_freq or 0.0)
            tick = make_tick_tuple(self.tick_freq or 0)
            for run in self.runners.values():
                run([tick])
        for background in self.background:
            if background(now):
                did = True
        if self.releasing:
            did = True
            self._send_released()
        self.acks.close()  # the step's last run of acks
        return did

    def ack_held(self, held: HeldAcks) -> None:
        """Send the ack rows of ``held`` (closed), ``RELEASED_ROWS_PER_STEP`` a step from the end of this one on.

        A stateful bolt releases a checkpoint interval of held acks at once (tens of thousands of trees with
        checkpoints every second).  Sent in one step, their rows and the acker's answers were as many live tuples
        at once: each release started a collection walking a hundred thousand of them, and they spread over
        memory the caches do not hold.  A few thousand a step stay within the caches and the collector's threshold;
        the trees complete a few passes later instead, the spout's pending limit bounds them meanwhile.
        """
        self.releasing.append(held)

    def _send_released(self) -> None:
        """Send the next ``RELEASED_ROWS_PER_STEP`` released ack rows, each as it is: a held row is a run of one
        tree already (see :class:`HeldAcks`), so it goes straight into its acker's out-buffer, without the run
        merge's comparison with the run before it (the step's own open run goes out first)."""
        acks = self.acks
        acks.close()
        releasing = self.releasing
        budget = RELEASED_ROWS_PER_STEP
        ackers = self.acker_tasks
        while releasing and budget > 0:
            held = releasing[0]
            roots = held.roots
            vals = held.vals
            start = self.released_rows
            end = min(len(roots), start + budget)
            budget -= end - start
            if len(ackers) == 1:  # one acker: one out-buffer list for every row
                out = self.outbuf[ackers[0]]
                for i in range(start, end):
                    out.append((ACK, roots[i], vals[i]))
            else:
                for i in range(start, end):
                    acks.row(roots[i], vals[i])
            if end == len(roots):
                releasing.popleft()
                end = 0
            self.released_rows = end

    def _count_mixed(self, batch: list[Tuple], secs: float) -> None:
        """Share a batch of several input streams and its execute time out per stream."""
        counts: dict[tuple[str, str], int] = {}
        for tup in batch:
            key = (tup.source_component, tup.source_stream)
            counts[key] = counts.get(key, 0) + 1
        inputs = self.stats.inputs
        for key, count in counts.items():
            entry = inputs.get(key)
            if entry is None:
                entry = inputs[key] = [0, 0.0]
            entry[0] += count
            entry[1] += secs * count / len(batch)

    def _on_error(self, task: int, tup: Tuple, exc: Exception) -> None:
        log.error("bolt %s task %d raised on %r: %s", self.component_id, task, tup, exc)
        self.report_error(task, exc)
        self.collectors[task].fail(tup)

    def shutdown(self) -> None:
        self.background = []
        for t, bolt in self.bolts.items():
            try:
                bolt.cleanup()
            except Exception as exc:
                self.report_error(t, exc)
        for context in self.contexts.values():
            cleanup_task_hooks(context)
