"""Trident's DRPC streams: each request becomes a batch, answered with the tuples the stream ends with.

``new_drpc_stream`` takes the requests of one function from ``storm_py.drpc``'s ``DRPCSpout`` (fields
``args``, ``return-info``) as a Trident spout, one request per batch.  When the topology is built, the last
operation declared downstream of it and the request's ``return-info`` meet in one task per batch (both
``batch_global``, Storm's ``completeDRPC``); when the batch completes its tuples are sent back as one compact
JSON list (``"[[6]]"``) through ``storm_py.drpc``'s ``ReturnResults``.

DRPC is resolved when a DRPC stream is declared, so Trident works without it; ``drpc_stream`` takes the
two building blocks directly.
"""

from __future__ import annotations

import importlib
import json
from typing import TYPE_CHECKING, Any

from storm_py.api.tuple import Fields, Tuple
from storm_py.errors import InvalidTopologyException
from storm_py.trident.processors import BatchRun, Processor
from storm_py.trident.rich import RichSpoutBatch
from storm_py.trident.tuple import Schema

if TYPE_CHECKING:
    from storm_py.trident.bolt import TaskScope
    from storm_py.trident.stream import Stream, TridentTopology

RETURN_INFO = "return-info"
RESULT_FIELDS = Fields(["result", RETURN_INFO])


def new_drpc_stream(topology: TridentTopology, function: str, local_drpc: Any = None) -> Stream:
    """A stream of the DRPC requests of ``function`` (from ``local_drpc``, or the servers of ``drpc.servers``)."""
    try:
        drpc = importlib.import_module("storm_py.drpc")
    except ImportError as exc:
        raise InvalidTopologyException(f"new_drpc_stream({function!r}): storm_py.drpc is not available") from exc
    return drpc_stream(topology, function, drpc.DRPCSpout(function, local_drpc), drpc.ReturnResults)


def drpc_stream(topology: TridentTopology, function: str, spout: Any, return_results: Any) -> Stream:
    """A DRPC stream over ``spout`` (a rich spout of ``args``/``return-info`` tuples); ``return_results()``
    makes the bolt that answers a ``[result, return-info]`` tuple."""
    if not isinstance(function, str) or not function:
        raise InvalidTopologyException(f"new_drpc_stream: function must be a non-empty string, got {function!r}")
    batches = RichSpoutBatch(spout, max_batch_size=1)
    if RETURN_INFO not in batches.get_output_fields():
        raise InvalidTopologyException(f"new_drpc_stream: {type(spout).__name__} emits no {RETURN_INFO!r} field")
    stream = topology.new_stream(f"drpc-{function}", batches)
    topology.drpc_returns.append((stream.node, return_results))
    return stream


def complete_drpc(topology: TridentTopology) -> None:
    """Join every DRPC stream's last operation with its requests' return info (once per topology)."""
    from storm_py.trident.stream import Stream

    for spout_node, return_results in topology.drpc_returns:
        last = spout_node
        for node in topology.nodes:
            if node.id > last.id and _descends(node, spout_node):
                last = node
        requests = Stream(topology, spout_node).project([RETURN_INFO]).batch_global()
        results = Stream(topology, last).batch_global()
        proc = ReturnProcessor(Schema([]), return_results)
        node = topology.add("processor", proc.schema, [requests.node, results.node])
        node.proc = proc
    topology.drpc_returns = []


def _descends(node: Any, ancestor: Any) -> bool:
    todo = list(node.parents)
    while todo:
        parent = todo.pop()
        if parent is ancestor:
            return True
        todo.extend(parent.parents)
    return False


class _NoAcks:
    """The output collector of the answering bolt: it answers through DRPC, there is nothing to ack."""

    def emit(self, *args: Any, **kwargs: Any) -> list[int]:
        return []

    def emit_direct(self, *args: Any, **kwargs: Any) -> None:
        pass

    def ack(self, tup: Any) -> None:
        pass

    def fail(self, tup: Any) -> None:
        pass

    def reset_timeout(self, tup: Any) -> None:
        pass

    def report_error(self, exc: BaseException) -> None:
        pass


class ReturnProcessor(Processor):
    """Storm's ``ReturnResultsReducer``: parent 0 brings the batch's return info, parent 1 its results."""

    kind = "return"

    def __init__(self, schema: Schema, return_results: Any) -> None:
        super().__init__(schema)
        self.return_results = return_results
        self.bolt: Any = None

    def prepare(self, task: TaskScope) -> None:
        self.bolt = self.return_results()
        self.bolt.prepare(task.conf, task.context, _NoAcks())

    def cleanup(self) -> None:
        if self.bolt is not None:
            self.bolt.cleanup()

    def start(self, run: BatchRun) -> Any:
        return ([], [])

    def execute(self, run: BatchRun, parent: int, values: list[Any]) -> None:
        infos, results = run.states[self.slot]
        if parent == 0:
            infos.append(values[0])
        else:
            results.append(values)

    def finish(self, run: BatchRun) -> None:
        infos, results = run.states[self.slot]
        if not infos:
            return
        answer = json.dumps(results, separators=(",", ":"), default=str)
        for info in infos:
            tup = Tuple([answer, info], RESULT_FIELDS, "__trident_drpc", "default", -1, None)
            self.bolt.execute(tup)
