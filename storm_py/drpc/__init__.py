"""storm_py.drpc: Storm's distributed RPC — the DRPC server, its clients, and the topology side.

A client sends ``execute(function, args)`` to a DRPC server (or a :class:`LocalDRPC` in-process); a topology
whose :class:`DRPCSpout` serves ``function`` fetches the request, computes, and :class:`ReturnResults` sends
the result back; the client gets it as a string, or a :class:`DRPCExecutionException` when the request
failed, timed out or was refused.  :class:`LinearDRPCTopologyBuilder` builds such a topology from a chain of
bolts with Storm's request-id and ``finish_batch`` semantics.

The pieces: the pure ledger in :mod:`~storm_py.drpc.ledger`, the thread-safe service in
:mod:`~storm_py.drpc.service`, the server daemon in :mod:`~storm_py.drpc.server` and its wire format in
:mod:`~storm_py.drpc.wire`; the spout's ``return-info`` format is described in :mod:`~storm_py.drpc.spout`,
and :class:`ResultSender` delivers a result to where a return-info points (what ``ReturnResults`` does per tuple).
"""

from storm_py.drpc.bolts import JoinResult, PrepareRequest, ResultSender, ReturnResults
from storm_py.drpc.client import DRPCClient, DRPCInvocationsClient
from storm_py.drpc.errors import DRPCExecutionException
from storm_py.drpc.linear import LinearDRPCInputDeclarer, LinearDRPCTopologyBuilder
from storm_py.drpc.local import LocalDRPC
from storm_py.drpc.spout import DRPCSpout

__all__ = [
    "DRPCClient",
    "DRPCExecutionException",
    "DRPCInvocationsClient",
    "DRPCSpout",
    "JoinResult",
    "LinearDRPCInputDeclarer",
    "LinearDRPCTopologyBuilder",
    "LocalDRPC",
    "PrepareRequest",
    "ResultSender",
    "ReturnResults",
]
