"""This module owns the bolts around a DRPC computation: Storm's ``PrepareRequest``, ``JoinResult`` and
``ReturnResults``.

* :class:`PrepareRequest` reads ``[args, return-info]`` from a ``DRPCSpout`` and gives the request a random
  64-bit request id: ``[request, args]`` on the default stream, ``[request, return]`` on ``ret`` and
  ``[request]`` on ``id`` (all anchored to the spout tuple).
* :class:`JoinResult` pairs a request's result tuple ``[request, result]`` with its ``ret`` tuple and emits
  ``[result, return-info]`` with the result as ``str`` (anchored to both; acked once joined; a half left alone
  for twice the message timeout is failed and forgotten).
* :class:`ReturnResults` sends ``[result, return-info]`` to the server the return-info names (a LocalDRPC in
  this process when its port is 0) and acks; a delivery error fails the tuple, which fails the request.
"""

from __future__ import annotations

import json
import logging
import random
import ssl
from typing import Any

from storm_py.api.components import BasicBolt, BasicOutputCollector, Bolt, OutputCollector, OutputFieldsDeclarer
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Tuple
from storm_py.config.keys import setting
from storm_py.drpc.client import DRPCInvocationsClient
from storm_py.drpc.errors import DRPCExecutionException
from storm_py.drpc.local import local_service
from storm_py.node.tls import client_context

log = logging.getLogger(__name__)

ARGS_STREAM = "default"
RETURN_STREAM = "ret"
ID_STREAM = "id"


class PrepareRequest(BasicBolt):
    """Storm's ``PrepareRequest`` (see the module docstring)."""

    def prepare(self, conf: dict[str, Any], context: TopologyContext) -> None:
        self._rng = random.Random()

    def execute(self, tup: Tuple, collector: BasicOutputCollector) -> None:
        request = self._rng.getrandbits(63)
        collector.emit([request, tup.values[0]], ARGS_STREAM)
        collector.emit([request, tup.values[1]], RETURN_STREAM)
        collector.emit([request], ID_STREAM)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["request", "args"], ARGS_STREAM)
        declarer.declare(["request", "return"], RETURN_STREAM)
        declarer.declare(["request"], ID_STREAM)


class JoinResult(Bolt):
    """Storm's ``JoinResult``: joins results with return-infos by request id (see the module docstring).

    A half that waits longer than twice the message timeout is dropped and failed: its request's tree has
    timed out by then, and the other half will never come (Storm's keeps it forever).
    """

    def __init__(self, return_component: str) -> None:
        self.return_component = return_component

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self._out = collector
        self._clock = context.clock
        self._returns: dict[Any, tuple[Tuple, float]] = {}
        self._results: dict[Any, tuple[Tuple, float]] = {}
        self._expire_after = 2.0 * float(setting(conf, "topology.message.timeout.secs"))
        self._next_sweep = self._clock.now() + self._expire_after

    def execute(self, tup: Tuple) -> None:
        now = self._clock.now()
        if now >= self._next_sweep:
            self._sweep(now)
        request = tup.values[0]
        if tup.source_component == self.return_component:
            self._returns[request] = (tup, now)
        else:
            self._results[request] = (tup, now)
        if request in self._returns and request in self._results:
            result = self._results.pop(request)[0]
            returner = self._returns.pop(request)[0]
            self._out.emit([str(result.values[1]), returner.values[1]], [result, returner])
            self._out.ack(result)
            self._out.ack(returner)

    def _sweep(self, now: float) -> None:
        self._next_sweep = now + min(self._expire_after, 1.0)
        for waiting in (self._returns, self._results):
            for request, (tup, since) in list(waiting.items()):
                if now - since > self._expire_after:
                    del waiting[request]
                    self._out.fail(tup)

    def pending(self) -> int:
        """Halves waiting for their other half."""
        return len(self._returns) + len(self._results)

    def cleanup(self) -> None:
        self._returns.clear()
        self._results.clear()

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["result", "return-info"])


def parse_return_info(text: Any) -> tuple[str, str, int]:
    """``(request id, host, port)`` of a return-info value; ``ValueError`` names what is wrong."""
    try:
        info = json.loads(text)
        request_id, host, port = str(info["id"]), str(info["host"]), int(info["port"])
    except (TypeError, ValueError, KeyError) as err:
        raise ValueError(f"not a DRPC return-info: {str(text)[:200]!r}") from err
    return request_id, host, port


class ResultSender:
    """Sends results to where return-infos point: a LocalDRPC of this process (port 0) or a DRPC server's
    invocations port, one kept-alive connection per server, authenticated with ``token``.  ``ReturnResults``
    uses it; so can any other component answering DRPC requests (a Trident DRPC stream)."""

    def __init__(self, token: str | None, tls: ssl.SSLContext | None = None) -> None:
        self.token = token
        self.tls = tls
        self._clients: dict[tuple[str, int], DRPCInvocationsClient] = {}

    def send(self, return_info: Any, result: str) -> bool:
        """Deliver ``result``; False when the server no longer waits for the request (it timed out).  Raises
        ``ValueError`` for a malformed return-info, :class:`DRPCExecutionException` when delivery failed."""
        request_id, host, port = parse_return_info(return_info)
        if port == 0:
            return local_service(host).result(request_id, result)
        client = self._clients.get((host, port))
        if client is None:
            client = self._clients[(host, port)] = DRPCInvocationsClient(host, port, self.token, tls=self.tls)
        return client.result(request_id, result)

    def close(self) -> None:
        """Close every connection."""
        for client in self._clients.values():
            client.close()
        self._clients = {}


class ReturnResults(Bolt):
    """Storm's ``ReturnResults`` (see the module docstring).  Remote servers get the topology's token."""

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self._out = collector
        token = conf.get("nimbus.auth.token")
        self._sender = ResultSender(str(token) if token else None, client_context(conf))

    def execute(self, tup: Tuple) -> None:
        result, info = tup.values[0], tup.values[1]
        if info is None:
            self._out.ack(tup)
            return
        try:
            self._sender.send(info, result if isinstance(result, str) else str(result))
        except (ValueError, DRPCExecutionException) as err:
            log.warning("could not return a DRPC result: %s", err)
            self._out.report_error(err)
            self._out.fail(tup)
            return
        self._out.ack(tup)

    def cleanup(self) -> None:
        self._sender.close()

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        pass
