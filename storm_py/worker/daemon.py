"""This module owns the worker process: it runs one :class:`Worker` over ZooKeeper and ZeroMQ until told to stop.

Started by a supervisor as ``storm-py worker TOPOLOGY_ID SUPERVISOR_ID PORT ...``.  It builds its executors
from the assignment, binds its slot port, loads the topology from the unpacked package, writes a local
heartbeat file for its supervisor every ``worker.heartbeat.frequency.secs`` and a heartbeat to the cluster
state (the worker's own rhythm).  It exits cleanly (spouts closed, bolts cleaned up) on SIGTERM or SIGINT,
when its slot is no longer assigned to it, and when its supervisor process is gone.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import signal
import threading
from collections.abc import Mapping
from pathlib import Path
from types import FrameType
from typing import Any

from storm_py.clock import SYSTEM_CLOCK, Clock
from storm_py.cluster_state.acl import WORKER_AUTH_ENV
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.config.keys import setting
from storm_py.errors import StormPyError
from storm_py.node.local_state import stormdist_dir, worker_heartbeat_path, write_json
from storm_py.node.session import local_hostname, open_storage
from storm_py.packaging.code_store import DistCodeStore
from storm_py.runtime.eventlogger import EVENTS_LOGGER
from storm_py.runtime.transfer.auth import FrameAuth, topology_curve_seed, topology_frame_key
from storm_py.runtime.transfer.socket_transfer import SocketTransfer
from storm_py.transport import open_transport
from storm_py.worker.core import Worker

log = logging.getLogger(__name__)

#: Exit codes of the worker process.
EXIT_OK = 0
EXIT_START_FAILED = 2
EXIT_CRASHED = 3


def configure_logging(log_file: Path | None, level: str = "INFO") -> None:
    """Log to the worker's ``worker.log`` (stderr when no file is given); the event logger's lines go to
    ``events.log`` beside it (Storm's file of debug-sampled emits, read through the log viewer)."""
    handler: logging.Handler
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(log_file, encoding="utf-8")
        events = logging.FileHandler(log_file.parent / "events.log", encoding="utf-8", delay=True)
        events.setFormatter(logging.Formatter("%(message)s"))
        events_logger = logging.getLogger(EVENTS_LOGGER)
        events_logger.handlers[:] = [events]
        events_logger.setLevel(logging.INFO)
        events_logger.propagate = False
    else:
        handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s [%(threadName)s]: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def run_worker(
    conf: Mapping[str, Any],
    topology_id: str,
    supervisor_id: str,
    port: int,
    worker_id: str,
    supervisor_pid: int | None = None,
) -> int:
    """Run the worker until it should stop; returns the process exit code."""
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("worker of %s on port %d got signal %d; stopping", topology_id, port, signum)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    conf = with_worker_auth(conf)
    host = local_hostname(conf)
    heartbeat_file = worker_heartbeat_path(conf, worker_id)
    try:
        state = ClusterState(open_storage(conf, wait_secs=0), conf)  # its supervisor restarts it
    except StormPyError as err:
        log.error("worker of %s on port %d cannot reach the cluster state: %s", topology_id, port, err.message)
        return EXIT_START_FAILED
    holder: list[Worker] = []
    transfer = SocketTransfer(
        open_transport(
            "zmq",
            hwm=int(setting(conf, "zmq.hwm")),
            max_message_size=int(setting(conf, "zmq.max.message.bytes")),
            buffer_bytes=int(setting(conf, "zmq.socket.buffer.bytes") or 0),
            curve_seed=topology_curve_seed(conf, topology_id),
        ),
        host,
        resolve=lambda node: holder[0].node_host.get(node) if holder else None,
        auth=FrameAuth(key) if (key := topology_frame_key(conf, topology_id)) is not None else None,
    )
    worker = Worker(
        conf=conf,
        state=state,
        code_store=DistCodeStore(stormdist_dir(conf, topology_id)),
        transport=transfer,
        clock=Clock(),
        topology_id=topology_id,
        supervisor_id=supervisor_id,
        port=port,
        host=host,
    )
    holder.append(worker)
    code = EXIT_OK
    try:
        try:
            worker.start()
        except StormPyError as err:
            log.error("worker of %s on port %d cannot start: %s", topology_id, port, err.message)
            code = EXIT_START_FAILED
            return code
        log.info("worker %s of %s running executors %s on port %d", worker_id, topology_id, worker.executors, port)
        gc.freeze()  # what exists now (code, topology, executors) lives as long as the process
        # every tuple makes short-lived objects, and CPython's default threshold (700) runs the collector
        # thousands of times a second (docs/DESIGN.md, "Garbage collection")
        gc.set_threshold(int(setting(conf, "worker.gc.threshold0")), *gc.get_threshold()[1:])
        freq = float(setting(conf, "worker.heartbeat.frequency.secs"))
        beats = threading.Thread(
            target=_local_heartbeats, args=(worker, heartbeat_file, freq, stop), name="local-heartbeat", daemon=True
        )
        beats.start()
        code = _loop(worker, transfer, freq, supervisor_pid, stop)
        stop.set()
    finally:
        worker.stop()
        transfer.close()
        state.close()
        heartbeat_file.unlink(missing_ok=True)
        log.info("worker %s of %s on port %d exited (code %d)", worker_id, topology_id, port, code)
        # The worker is done: a SIGTERM arriving while the interpreter shuts down must not turn a clean exit
        # into death by signal (Python restores the default handlers during finalization).
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return code


def with_worker_auth(conf: Mapping[str, Any]) -> dict[str, Any]:
    """``conf`` plus the ZooKeeper identities the supervisor handed this worker (``WORKER_AUTH_ENV``)."""
    raw = os.environ.get(WORKER_AUTH_ENV)
    if not raw:
        return dict(conf)
    try:
        given = json.loads(raw)
    except ValueError:
        log.error("ignoring a malformed %s", WORKER_AUTH_ENV)
        return dict(conf)
    return {**conf, **{str(k): str(v) for k, v in dict(given).items()}}


def _local_heartbeats(worker: Worker, path: Path, freq: float, stop: threading.Event) -> None:
    """Tell the supervisor when the executor loop last made a pass, whatever the cluster state does (a ZooKeeper
    outage blocks reads of the state for seconds; it must not get healthy workers restarted).

    The time written is the loop's last pass, not this thread's: a component stuck in a call freezes it, the
    supervisor restarts the worker after ``supervisor.worker.timeout.secs``, and the stuck component with its
    stack is reported to the topology's errors once it has been stuck for half that time.
    """
    stuck_after = float(setting(worker.conf, "supervisor.worker.timeout.secs")) / 2
    reported = False
    while not stop.is_set() and worker.alive:
        silent = worker.silent_secs()
        try:
            write_json(path, {"time": SYSTEM_CLOCK.wall() - silent, "pid": os.getpid(),
                              "topology_id": worker.topology_id, "port": worker.port})  # fmt: skip
        except StormPyError as err:
            log.warning("worker %s cannot write its local heartbeat: %s", worker.key, err.message)
        if silent > stuck_after and not reported:
            reported = True
            worker.report_stuck(silent)
        elif silent <= stuck_after:
            reported = False
        stop.wait(freq)


def _loop(
    worker: Worker, transfer: SocketTransfer, freq: float, supervisor_pid: int | None, stop: threading.Event
) -> int:
    """Follow the assignment until the worker should exit; returns the exit code."""
    while not stop.is_set():
        if not worker.alive:
            log.error("the executor loop of worker %s died; exiting so the supervisor restarts it", worker.key)
            return EXIT_CRASHED
        if supervisor_pid is not None and os.getppid() != supervisor_pid:
            log.warning("supervisor (pid %d) of worker %s is gone; exiting", supervisor_pid, worker.key)
            return EXIT_OK
        try:
            if not worker.refresh():
                log.info("worker %s is no longer assigned its executors; exiting", worker.key)
                return EXIT_OK
            if worker.runtime is not None:
                transfer.prune(set(worker.runtime.task_to_worker.values()))
        except StormPyError as err:
            log.warning("worker %s cannot read the cluster state (keeps running): %s", worker.key, err.message)
        stop.wait(freq)
    return EXIT_OK
