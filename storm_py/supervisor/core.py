"""This module owns the supervisor's core: it registers its slots and keeps one worker per assigned slot.

No thread of its own: :meth:`Supervisor.sync` does one round (the daemon calls it from its loop; LocalCluster
directly).  How a worker is started is the launcher's business (a thread in LocalCluster, a process otherwise).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from storm_py.clock import Clock
from storm_py.cluster_state.cluster_state import ClusterState
from storm_py.cluster_state.models import SupervisorInfo
from storm_py.config.keys import setting
from storm_py.deps.envcache import PENDING_META, STATE_META
from storm_py.errors import ConfigError, DependencyError, StormPyError
from storm_py.node.launch_report import LAUNCH_FAILED_META
from storm_py.scheduler.resource_aware import supervisor_resources
from storm_py.supervisor.cgroups import kernel_enforces_memory
from storm_py.supervisor.launcher import EnvErrorReport, Launcher, LaunchPending, WorkerHandle, WorkerIsolation
from storm_py.supervisor.slots import (
    MEMORY_LIMIT_KEY,
    RestartBackoff,
    RunningSlot,
    WantedSlot,
    memory_error,
    reconcile,
)
from storm_py.version import __version__

log = logging.getLogger(__name__)


class Supervisor:
    """One host's slots."""

    def __init__(
        self,
        conf: Mapping[str, Any],
        state: ClusterState,
        launcher: Launcher,
        clock: Clock,
        supervisor_id: str,
        hostname: str = "127.0.0.1",
        ports: list[int] | None = None,
        report_error: EnvErrorReport | None = None,
        isolation: WorkerIsolation | None = None,
    ) -> None:
        """``report_error(topology id, port, executors, text)``: puts a worker's failure on its topology's errors;
        ``isolation``: what releases a stopped worker's cgroup and tells whether the kernel killed it."""
        self.conf = dict(conf)
        self.isolation = isolation
        self.report_error = report_error
        self.state = state
        self.launcher = launcher
        self.clock = clock
        self.id = supervisor_id
        self.hostname = hostname
        self.ports = list(ports if ports is not None else setting(conf, "supervisor.slots.ports"))
        #: what this supervisor offers the resource aware scheduler (memory, CPU, generic resources)
        self.resources = supervisor_resources(conf)
        self.workers: dict[int, WorkerHandle] = {}
        self.started = clock.now()
        #: ports whose last launch failed, and why (reported in the heartbeat until a launch there succeeds)
        self.launch_failures: dict[int, str] = {}
        #: ports whose worker waits for something being prepared (its topology's environment), and what
        self.launch_pending: dict[int, str] = {}
        #: ports whose topology's environment is built ("ready: ...") or failed ("failed: ..."): topology id, state
        self.env_states: dict[int, tuple[str, str]] = {}
        self.backoff = RestartBackoff(
            float(setting(conf, "supervisor.worker.restart.min.uptime.secs")),
            float(setting(conf, "supervisor.worker.restart.backoff.secs")),
            float(setting(conf, "supervisor.worker.restart.backoff.max.secs")),
        )
        self._launched: dict[int, WantedSlot] = {}  # what each port was last launched for
        self.logviewer_port = 0  # set by the daemon that serves this host's worker logs
        #: why the last health check failed (empty: healthy); while it fails, no slot is offered
        self.health_failures: list[str] = []

    def heartbeat(self) -> None:
        """Register or refresh this supervisor in the cluster state."""
        info = SupervisorInfo(
            hostname=self.hostname,
            time_secs=self.clock.wall(),
            uptime_secs=self.clock.now() - self.started,
            ports=[] if self.health_failures else list(self.ports),
            used_ports=sorted(self.workers),
            version=__version__,
            logviewer_port=self.logviewer_port,
            resources=dict(self.resources),
            scheduler_meta={**({"health": "; ".join(self.health_failures)} if self.health_failures else {}),
                            **self._pending_meta()},
        )
        self.state.set_supervisor_info(self.id, info)

    def _pending_meta(self) -> dict[str, str]:
        """``{PENDING_META + topology id: reason}`` of the workers waiting to start (an environment building), the
        environments' states, and ``{LAUNCH_FAILED_META + topology id: error}`` of the workers that failed to start."""
        out: dict[str, str] = {}
        for port, error in sorted(self.launch_failures.items()):
            want = self._launched.get(port)
            if want is not None:
                out[LAUNCH_FAILED_META + want.topology_id] = error
        for port, reason in sorted(self.launch_pending.items()):
            want = self._launched.get(port)
            if want is not None:
                out[PENDING_META + want.topology_id] = reason
        for topology_id, state in sorted(self.env_states.values()):
            out[STATE_META + topology_id] = state
        return out

    def _env_state(self, port: int, topology_id: str, err: BaseException | None) -> None:
        """Remember what the launch on ``port`` says of its topology's environment (none: nothing)."""
        envs = getattr(self.launcher, "envs", None)
        if isinstance(err, DependencyError):
            self.env_states[port] = (topology_id, f"failed: {err.message}")
        elif err is None and envs is not None and topology_id in envs.envs:
            self.env_states[port] = (topology_id, f"ready: environment {envs.envs[topology_id]}")
        else:
            self.env_states.pop(port, None)

    def wanted(self) -> dict[int, WantedSlot]:
        """The slots the assignments give this supervisor."""
        out: dict[int, WantedSlot] = {}
        for tid, assignment in self.state.assignments().items():
            for port, executors in assignment.slots_on(self.id).items():
                out[port] = WantedSlot(tid, tuple(executors))
        return out

    def sync(self) -> None:
        """One round: heartbeat, stop workers no longer wanted, launch missing ones, refresh the rest."""
        self.heartbeat()
        wanted = self.wanted()
        for port in [p for p, (tid, _) in self.env_states.items() if p not in wanted or wanted[p].topology_id != tid]:
            del self.env_states[port]  # its topology is gone from this slot
        for port in [p for p in self.launch_failures if p not in wanted or wanted[p] != self._launched.get(p)]:
            del self.launch_failures[port]  # the slot is no longer wanted for what failed
        running: dict[int, RunningSlot] = {}
        limits = self.memory_limits({w.topology_id for w in self.workers.values()})
        for port, w in self.workers.items():
            alive = w.alive and w.refresh()
            rss = self.launcher.resident_mb(w) if alive and w.topology_id in limits else None
            running[port] = RunningSlot(w.topology_id, tuple(w.executors), alive, w.silent_secs(), rss)
        timeout = float(setting(self.conf, "supervisor.worker.timeout.secs"))
        actions = reconcile(wanted, running, timeout, limits)
        now = self.clock.now()
        for port in actions.stop:
            worker = self.workers.pop(port)
            log.info("supervisor %s stopping worker %s:%d of %s", self.id, self.id, port, worker.topology_id)
            worker.stop()
            killed = self.isolation.ended(worker) if self.isolation is not None else None
            if killed is not None:
                self._report(worker, port, killed)
            elif port in actions.over_memory:
                self._report(worker, port, memory_error(port, running[port].rss_mb or 0.0,
                                                        limits[worker.topology_id]))
            if port in actions.dead:  # else stopped on purpose: the assignment moved
                self._died(port, worker.topology_id, now)
        for port in actions.launch:
            want = wanted[port]
            if self._launched.get(port) != want:
                self.backoff.forget(port)
            if not self.backoff.may_launch(port, now):
                continue
            self._launched[port] = want
            try:
                self.workers[port] = self.launcher.launch(self.id, want.topology_id, port, list(want.executors))
                self.backoff.launched(port, now)
                self.launch_failures.pop(port, None)
                self.launch_pending.pop(port, None)
                self._env_state(port, want.topology_id, None)
            except LaunchPending as err:  # not a death: no backoff; launched in a later round
                self.env_states.pop(port, None)
                if self.launch_pending.get(port) != err.message:
                    log.info("supervisor %s: worker of %s on port %d waits: %s", self.id, want.topology_id, port,
                             err.message)
                self.launch_pending[port] = err.message
            except Exception as err:  # a broken topology must not take the supervisor down
                self.launch_pending.pop(port, None)
                self._env_state(port, want.topology_id, err)
                self.launch_failures[port] = str(err)
                log.error("supervisor %s could not launch %s on port %d: %s", self.id, want.topology_id, port, err)
                if isinstance(err, ConfigError) and self.report_error is not None:  # its user can fix this
                    self.report_error(want.topology_id, port, list(want.executors), f"cannot start a worker on port "
                                      f"{port}: {err.message}")
                self._died(port, want.topology_id, now)

    def _report(self, worker: WorkerHandle, port: int, text: str) -> None:
        """Log a worker's death for its memory and put it on its topology's errors."""
        log.warning("supervisor %s: %s (topology %s)", self.id, text, worker.topology_id)
        if self.report_error is not None:
            self.report_error(worker.topology_id, port, list(worker.executors), text)

    def memory_limits(self, topology_ids: set[str]) -> dict[str, float]:
        """``topology.worker.max.heap.size.mb`` of each of ``topology_ids`` that sets one (none when the workers'
        cgroups hold their memory: the kernel enforces it)."""
        out: dict[str, float] = {}
        if kernel_enforces_memory(self.conf):
            return out
        for tid in sorted(topology_ids):
            base = self.state.storm_base(tid)
            limit = base.topology_conf.get(MEMORY_LIMIT_KEY) if base is not None else None
            if isinstance(limit, (int, float)) and not isinstance(limit, bool) and limit > 0:
                out[tid] = float(limit)
        return out

    def _died(self, port: int, topology_id: str, now: float) -> None:
        delay = self.backoff.ended(port, now)
        if delay > 0:
            log.warning(
                "supervisor %s: workers of %s on port %d keep dying young; next launch in %.0f s",
                self.id, topology_id, port, delay,
            )

    def shutdown(self) -> None:
        """Stop every worker and leave the cluster."""
        for worker in self.workers.values():
            worker.stop()
            if self.isolation is not None:
                self.isolation.ended(worker)
        self.workers.clear()
        try:
            self.state.remove_supervisor(self.id)
        except StormPyError:
            log.debug("supervisor %s already unregistered", self.id)
