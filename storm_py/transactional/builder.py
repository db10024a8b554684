"""TransactionalTopologyBuilder: turns a transactional spout and batch bolts into an ordinary topology.

It generates:

* ``<spout_id>/coordinator`` — :class:`TransactionalSpoutCoordinator`, one task;
* ``<spout_id>`` — the emitter, a coordinated bolt (``spout_parallelism`` tasks) on the coordinator's batch
  stream (and commit stream, for committer spouts such as opaque ones);
* one coordinated bolt per user bolt, subscribed as declared plus (all grouping) to the count reports of
  every component it reads from; committers also read the coordinator's commit stream.

``id`` keys the persisted state under ``/transactional/<id>/``: two live topologies must never share it.
"""

from __future__ import annotations

import logging
from typing import Any

from storm_py.api.components import BasicBolt
from storm_py.api.topology import (
    ALL,
    CUSTOM,
    DIRECT,
    FIELDS,
    GLOBAL,
    LOCAL_OR_SHUFFLE,
    NONE,
    PARTIAL_KEY,
    SHUFFLE,
    BoltDeclarer,
    ComponentSpec,
    Grouping,
    SpoutDeclarer,
    StormTopology,
    TopologyBuilder,
)
from storm_py.errors import InvalidTopologyException
from storm_py.transactional.batch import (
    BasicBoltExecutor,
    BatchBoltExecutor,
    Committer,
    is_batch_bolt,
    is_batch_executor,
)
from storm_py.transactional.coordinated import CoordinatedBolt
from storm_py.transactional.coordinator import TransactionalSpoutCoordinator
from storm_py.transactional.emitter import TransactionalSpoutBatchExecutor
from storm_py.transactional.partitioned import (
    OpaquePartitionedTransactionalSpoutExecutor,
    PartitionedTransactionalSpoutExecutor,
)
from storm_py.transactional.spouts import (
    CommitterTransactionalSpout,
    OpaquePartitionedTransactionalSpout,
    PartitionedTransactionalSpout,
    TransactionalSpout,
)
from storm_py.transactional.streams import BATCH_STREAM, COMMIT_STREAM, COORD_STREAM

log = logging.getLogger(__name__)

AnySpout = TransactionalSpout | PartitionedTransactionalSpout | OpaquePartitionedTransactionalSpout


def coordinator_id(spout_id: str) -> str:
    """The component id of the coordinator spout of emitter ``spout_id``."""
    return f"{spout_id}/coordinator"


class _BoltEntry:
    def __init__(self, spec: ComponentSpec, committer: bool) -> None:
        self.spec = spec
        self.committer = committer


class TransactionalTopologyBuilder:
    """Storm's ``TransactionalTopologyBuilder``.

    Args:
        id: the transactional id, keying the persisted state (``/transactional/<id>/``).
        spout_id: the emitter's component id (user bolts subscribe to it).
        spout: a :class:`TransactionalSpout`, :class:`PartitionedTransactionalSpout` or
            :class:`OpaquePartitionedTransactionalSpout`.
        spout_parallelism: emitter tasks.
    """

    def __init__(self, id: str, spout_id: str, spout: AnySpout, spout_parallelism: int = 1) -> None:
        if not isinstance(id, str) or not id or "/" in id:
            raise InvalidTopologyException(f"transactional id must be a non-empty string without '/', got {id!r}")
        self.id = id
        self.spout_id = spout_id
        self.source = spout
        self.spout: TransactionalSpout
        if isinstance(spout, PartitionedTransactionalSpout):
            self.spout = PartitionedTransactionalSpoutExecutor(spout, id)
        elif isinstance(spout, OpaquePartitionedTransactionalSpout):
            self.spout = OpaquePartitionedTransactionalSpoutExecutor(spout, id)
        elif isinstance(spout, TransactionalSpout):
            self.spout = spout
        else:
            raise InvalidTopologyException(
                f"spout {spout_id!r} is not a transactional spout: {type(spout).__name__}", component=spout_id
            )
        self.spout_parallelism = spout_parallelism
        self._spout_spec = ComponentSpec(coordinator_id(spout_id), None, 1, True)
        self._bolts: dict[str, _BoltEntry] = {}

    def get_spout_declarer(self) -> SpoutDeclarer:
        """Configuration for the coordinator spout (e.g. ``set_max_spout_pending``)."""
        return SpoutDeclarer(self._spout_spec)

    def set_bolt(self, id: str, bolt: Any, parallelism: int = 1) -> BoltDeclarer:
        """Add a batch bolt (a committer if it is a :class:`Committer`), a batch executor or a basic bolt."""
        return self._add(id, bolt, parallelism, isinstance(bolt, Committer))

    def set_committer_bolt(self, id: str, bolt: Any, parallelism: int = 1) -> BoltDeclarer:
        """Add a batch bolt whose ``finish_batch`` runs in the commit phase, in txid order."""
        if not (is_batch_bolt(bolt) or is_batch_executor(bolt)):
            raise InvalidTopologyException(
                f"committer {id!r} must be a batch bolt (with finish_batch), got {type(bolt).__name__}", component=id
            )
        return self._add(id, bolt, parallelism, True)

    def _add(self, cid: str, bolt: Any, parallelism: int, committer: bool) -> BoltDeclarer:
        if not isinstance(cid, str) or not cid:
            raise InvalidTopologyException(f"component id must be a non-empty string, got {cid!r}")
        if cid in self._bolts or cid in (self.spout_id, coordinator_id(self.spout_id)):
            raise InvalidTopologyException(f"topology already has a component with id {cid!r}", component=cid)
        if not (is_batch_bolt(bolt) or is_batch_executor(bolt) or isinstance(bolt, BasicBolt)):
            raise InvalidTopologyException(
                f"bolt {cid!r} of a transactional topology must be a batch bolt or a BasicBolt, "
                f"got {type(bolt).__name__}",
                component=cid,
            )
        if committer and isinstance(bolt, BasicBolt):
            raise InvalidTopologyException(f"committer {cid!r} must be a batch bolt, not a BasicBolt", component=cid)
        spec = ComponentSpec(cid, bolt, parallelism, False)
        self._bolts[cid] = _BoltEntry(spec, committer)
        return BoltDeclarer(spec)

    # -------------------------------------------------------------------------------------------- building

    def _commit_phase(self) -> set[str]:
        """Components whose batches finish in the commit phase: committers and everything downstream of one."""
        phase: set[str] = {cid for cid, e in self._bolts.items() if e.committer}
        changed = True
        while changed:
            changed = False
            for cid, entry in self._bolts.items():
                if cid not in phase and any(src in phase for src, _ in entry.spec.inputs):
                    phase.add(cid)
                    changed = True
        return phase

    def build_topology_builder(self) -> TopologyBuilder:
        """A :class:`TopologyBuilder` holding the generated topology (more components may be added to it)."""
        coord = coordinator_id(self.spout_id)
        builder = TopologyBuilder()
        spout_decl = builder.set_spout(coord, TransactionalSpoutCoordinator(self.spout, self.id, self.source))
        spout_decl.add_configurations(self._spout_spec.conf)
        spout_decl.add_configuration("topology.transactional.id", self.id)
        committer_spout = isinstance(self.spout, CommitterTransactionalSpout)
        emitter = CoordinatedBolt(
            TransactionalSpoutBatchExecutor(self.spout),
            untracked=frozenset({(coord, COMMIT_STREAM)}) if committer_spout else frozenset(),
        )
        emitter_decl = builder.set_bolt(self.spout_id, emitter, self.spout_parallelism)
        emitter_decl.all_grouping(coord, BATCH_STREAM)
        emitter_decl.add_configuration("topology.transactional.id", self.id)
        if committer_spout:
            emitter_decl.all_grouping(coord, COMMIT_STREAM)
        commit_phase = self._commit_phase()
        for cid, entry in self._bolts.items():
            spec = entry.spec
            sources = sorted({src for src, _ in spec.inputs})
            delegate: Any
            if is_batch_executor(spec.obj):
                delegate = spec.obj  # already runs every batch of its task (e.g. a Trident bolt)
            elif is_batch_bolt(spec.obj):
                delegate = BatchBoltExecutor(spec.obj)
            else:
                delegate = BasicBoltExecutor(spec.obj)
            late = frozenset(s for s in sources if s in commit_phase)
            hold: frozenset[str] | None = None
            if not entry.committer and late and len(late) < len(sources):
                hold = late
            bolt = CoordinatedBolt(
                delegate,
                dict.fromkeys(sources, False),
                (coord, COMMIT_STREAM) if entry.committer else None,
                hold_reports_from=hold,
            )
            decl = builder.set_bolt(cid, bolt, spec.parallelism)
            decl.add_configurations(spec.conf)
            for (src, stream), grouping in spec.inputs.items():
                _subscribe(decl, src, stream, grouping)
            for src in sources:
                decl.all_grouping(src, COORD_STREAM)
            if entry.committer:
                decl.all_grouping(coord, COMMIT_STREAM)
        return builder

    def build_topology(self) -> StormTopology:
        """The generated topology."""
        return self.build_topology_builder().create_topology()


def _subscribe(decl: BoltDeclarer, src: str, stream: str, grouping: Grouping) -> None:
    kind = grouping.kind
    if kind in (FIELDS, PARTIAL_KEY):
        assert grouping.fields is not None
        if kind == FIELDS:
            decl.fields_grouping(src, grouping.fields, stream)
        else:
            decl.partial_key_grouping(src, grouping.fields, stream)
    elif kind == CUSTOM:
        assert grouping.custom is not None
        decl.custom_grouping(src, grouping.custom, stream)
    else:
        simple = {
            SHUFFLE: decl.shuffle_grouping,
            ALL: decl.all_grouping,
            GLOBAL: decl.global_grouping,
            NONE: decl.none_grouping,
            DIRECT: decl.direct_grouping,
            LOCAL_OR_SHUFFLE: decl.local_or_shuffle_grouping,
        }
        method = simple.get(kind)
        if method is None:
            raise InvalidTopologyException(f"unknown grouping {kind!r} from {src!r}", component=src)
        method(src, stream)
