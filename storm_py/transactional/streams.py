"""Stream ids and fields of transactional topologies: the coordinator's batch and commit streams, and the
coordinated bolts' count-report stream."""

from __future__ import annotations

#: coordinator -> emitter tasks (all grouping): ``[tx, tx-meta, committed-txid]``, msg id = the attempt
BATCH_STREAM = "transactional/batch"
BATCH_FIELDS = ("tx", "tx-meta", "committed-txid")

#: coordinator -> committers (and committer emitters), all grouping: ``[tx]``, msg id = the attempt
COMMIT_STREAM = "transactional/commit"
COMMIT_FIELDS = ("tx",)

#: every coordinated bolt -> the coordinated bolts it feeds (all grouping): ``[id, {task: tuples sent}]``,
#: sent once a task finished a batch; a task missing from the counts received no tuple of the batch
COORD_STREAM = "coordinated/coord-stream"
COORD_FIELDS = ("id", "counts")
