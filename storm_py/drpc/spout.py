"""This module owns :class:`DRPCSpout`, Storm's spout that turns DRPC requests into tuples.

Output fields are Storm's: ``args`` (the request's argument string) and ``return-info``, a compact JSON object
``{"id": <request id>, "host": <server host>, "port": <invocations port>}`` naming where the result goes; for a
:class:`~storm_py.drpc.local.LocalDRPC` ``host`` is its service id and ``port`` is 0.  :class:`ReturnResults`
(or anything else reading the return-info) sends the result back there.

Fetching: with a LocalDRPC, ``next_tuple`` takes requests straight from it.  Otherwise a thread per server of
``drpc.servers`` (port ``drpc.invocations.port`` unless the entry names one) long-polls the server while the
spout is active and queues what it gets, waking the worker loop; the cluster token comes from the topology
conf (``nimbus.auth.token``).  Each tuple is tracked: a failed tuple tree fails the request (the client gets a
``DRPCExecutionException``); an acked one needs nothing (the result was delivered by then).  Requests fetched
but not completed when the spout closes (its topology was killed) are failed at once, so their clients learn
it then rather than at their timeout (a result that still arrives first wins).
"""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from typing import Any

from storm_py.api.components import OutputFieldsDeclarer, Spout, SpoutOutputCollector
from storm_py.api.context import TopologyContext
from storm_py.config.keys import setting
from storm_py.drpc.client import DRPCInvocationsClient
from storm_py.drpc.errors import DRPCExecutionException
from storm_py.drpc.ledger import Invocation
from storm_py.drpc.local import LocalDRPC, local_service
from storm_py.drpc.service import DRPCService, check_function
from storm_py.drpc.wire import MAX_FETCH_BATCH, parse_servers
from storm_py.errors import ConfigError
from storm_py.node.tls import client_context
from storm_py.runtime.worker_runtime import WAKE_RESOURCE

log = logging.getLogger(__name__)

#: Seconds one long poll waits for a request.
FETCH_WAIT_SECS = 1.0
#: Seconds between attempts to reach a server that did not answer.
RETRY_SECS = 1.0
#: Requests queued in the spout before its fetchers pause.
MAX_QUEUED = MAX_FETCH_BATCH


def return_info(request_id: str, host: str, port: int) -> str:
    """The ``return-info`` value of a request."""
    return json.dumps({"id": request_id, "host": host, "port": port}, separators=(",", ":"))


class _Fetcher:
    """Long-polls one server for requests of one function while the spout is active."""

    def __init__(self, spout: DRPCSpout, index: int, client: DRPCInvocationsClient) -> None:
        self.spout, self.index, self.client = spout, index, client
        self.thread = threading.Thread(target=self._run, name=f"drpc-fetch-{client.where}", daemon=True)

    def _run(self) -> None:
        spout = self.spout
        warned = False
        while not spout.stopping.is_set():
            if not spout.active.is_set() or len(spout.queue) >= MAX_QUEUED:
                spout.room.wait(FETCH_WAIT_SECS)
                spout.room.clear()
                continue
            try:
                got = self.client.fetch(spout.function, MAX_FETCH_BATCH, FETCH_WAIT_SECS)
            except DRPCExecutionException as err:
                if not warned:
                    log.warning("DRPC spout for %r: %s (retrying every %gs)", spout.function, err.message, RETRY_SECS)
                    warned = True
                spout.stopping.wait(RETRY_SECS)
                continue
            if warned:
                log.info("DRPC spout for %r reaches %s again", spout.function, self.client.where)
                warned = False
            if got:
                spout.queue.extend((self.index, inv) for inv in got)
                spout.wake()


class DRPCSpout(Spout):
    """Storm's ``DRPCSpout(function, drpc=None)`` (see the module docstring)."""

    def __init__(self, function: str, drpc: LocalDRPC | None = None) -> None:
        self.function = check_function(function)
        self.local_id = drpc.get_service_id() if drpc is not None else None
        self._reset()

    def _reset(self) -> None:
        self.queue: deque[tuple[int, Invocation]] = deque()
        self.stopping = threading.Event()
        self.active = threading.Event()
        self.room = threading.Event()
        self._local: DRPCService | None = None
        self._servers: list[tuple[str, int]] = []
        self._clients: list[DRPCInvocationsClient] = []
        self._fetchers: list[_Fetcher] = []
        self._wake: threading.Event | None = None
        self._collector: SpoutOutputCollector | None = None
        self._in_flight: set[tuple[Any, str]] = set()

    def __deepcopy__(self, memo: dict[int, Any]) -> DRPCSpout:
        copy = DRPCSpout.__new__(DRPCSpout)
        copy.function, copy.local_id = self.function, self.local_id
        copy._reset()
        return copy

    def __getstate__(self) -> dict[str, Any]:
        return {"function": self.function, "local_id": self.local_id}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.function, self.local_id = state["function"], state["local_id"]
        self._reset()

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["args", "return-info"])

    def open(self, conf: dict[str, Any], context: TopologyContext, collector: SpoutOutputCollector) -> None:
        self._collector = collector
        self._wake = context.get_resource(WAKE_RESOURCE)
        if self.local_id is not None:
            self._local = local_service(self.local_id)
            if self._wake is not None:
                self._local.add_waker(self._wake)
            return
        port = int(setting(conf, "drpc.invocations.port"))
        self._servers = parse_servers(conf.get("drpc.servers"), port)
        if not self._servers:
            raise ConfigError(
                f"DRPC spout for {self.function!r} has no server: set drpc.servers in the topology or cluster conf",
                key="drpc.servers",
            )
        token = conf.get("nimbus.auth.token")
        tls = client_context(conf)
        self._clients = [DRPCInvocationsClient(h, p, str(token) if token else None, tls=tls) for h, p in self._servers]
        self._fetchers = [_Fetcher(self, i, c) for i, c in enumerate(self._clients)]
        for f in self._fetchers:
            f.thread.start()

    def activate(self) -> None:
        self.active.set()
        self.room.set()

    def deactivate(self) -> None:
        self.active.clear()

    def wake(self) -> None:
        """Have the worker loop call ``next_tuple`` soon."""
        if self._wake is not None:
            self._wake.set()

    def next_tuple(self) -> None:
        collector = self._collector
        assert collector is not None, "DRPCSpout used before open"
        if self._local is not None:
            for inv in self._local.fetch(self.function, MAX_FETCH_BATCH):
                self._in_flight.add(("local", inv.id))
                collector.emit([inv.args, return_info(inv.id, self.local_id or "", 0)], ("local", inv.id))
            return
        queue = self.queue
        if not queue:
            return
        while queue:
            index, inv = queue.popleft()
            host, port = self._servers[index]
            self._in_flight.add((index, inv.id))
            collector.emit([inv.args, return_info(inv.id, host, port)], (index, inv.id))
        self.room.set()

    def ack(self, msg_id: Any) -> None:
        """The request's tree completed: its result was delivered."""
        self._in_flight.discard(msg_id)

    def fail(self, msg_id: Any) -> None:
        self._in_flight.discard(msg_id)
        self._fail(msg_id, "its tuple tree failed or timed out in the topology")

    def _fail(self, msg_id: Any, message: str) -> None:
        index, request_id = msg_id
        try:
            if index == "local":
                if self._local is not None:
                    self._local.fail(request_id, message)
            else:
                self._clients[index].fail(request_id, message)
        except DRPCExecutionException as err:
            log.warning("could not fail DRPC request %s: %s", request_id, err.message)

    def close(self) -> None:
        if self._local is not None and self._wake is not None:
            self._local.remove_waker(self._wake)
        self.stopping.set()
        self.room.set()
        for f in self._fetchers:
            f.thread.join(FETCH_WAIT_SECS + 5.0)
        while self.queue:
            index, inv = self.queue.popleft()
            self._fail((index, inv.id), "the DRPC spout serving it stopped before running it")
        for msg_id in sorted(self._in_flight, key=str):
            self._fail(msg_id, "the DRPC spout serving it stopped before it completed (topology killed?)")
        self._in_flight.clear()
        for c in self._clients:
            c.close()
