"""Launching workers: on a thread of this process (LocalCluster) — the process launcher lives with the CLI."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from storm_py.clock import Clock
from storm_py.daemons.code_store import CodeStore
from storm_py.daemons.worker import Worker, WorkerTransport
from storm_py.state.cluster_state import ClusterState


class ThreadLauncher:
    """Runs each worker in this process on its own loop thread."""

    def __init__(
        self,
        conf: Mapping[str, Any],
        state: ClusterState,
        code_store: CodeStore,
        transport: WorkerTransport,
        clock: Clock,
    ) -> None:
        self.conf = dict(conf)
        self.state = state
        self.code_store = code_store
        self.transport = transport
        self.clock = clock
        self.launched: list[Worker] = []

    def launch(self, supervisor_id: str, topology_id: str, port: int, executors: list[tuple[int, int]]) -> Worker:
        worker = Worker(
            conf=self.conf,
            state=self.state,
            code_store=self.code_store,
            transport=self.transport,
            clock=self.clock,
            topology_id=topology_id,
            supervisor_id=supervisor_id,
            port=port,
        )
        worker.start()
        self.launched.append(worker)
        return worker
