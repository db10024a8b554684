"""Trident's DRPC answers: where a DRPC stream ends and the processor that sends each request its results.

``TridentTopology.new_drpc_stream`` (:mod:`storm_py.trident.stream`) takes the requests of one function from
``storm_py.drpc``'s ``DRPCSpout`` (fields ``args``, ``return-info``) as a Trident spout, one request per batch.
When the topology is built, the last operation declared downstream of it (:func:`last_descendant`) and the
request's ``return-info`` meet in one task per batch (both ``batch_global``, Storm's ``completeDRPC``) in a
:class:`ReturnProcessor`: when the batch completes its tuples are sent back as one compact JSON list
(``"[[6]]"``) through ``storm_py.drpc``'s ``ReturnResults``.
"""

from __future__ import annotations

import json
from typing import Any

from storm_py.api.tuple import Fields, Tuple
from storm_py.trident.graph import Node
from storm_py.trident.processors import Processor
from storm_py.trident.task import BatchRun, TaskScope
from storm_py.trident.tuple import Schema

RETURN_INFO = "return-info"
RESULT_FIELDS = Fields(["result", RETURN_INFO])


def last_descendant(nodes: list[Node], spout_node: Node) -> Node:
    """The last node declared downstream of ``spout_node`` (itself when nothing reads it): what a DRPC stream's
    requests are answered with."""
    last = spout_node
    for node in nodes:
        if node.id > last.id and _descends(node, spout_node):
            last = node
    return last


def _descends(node: Node, ancestor: Node) -> bool:
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
