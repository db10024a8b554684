"""storm_py.spark: committed batches landed exactly once as Parquet, read by Spark, and Spark jobs as batch sinks.

Public names: ``docs/REFERENCE.md``.  Needs the ``spark`` extra (pyarrow, pyspark), imported lazily: importing
this package pulls in neither, the sink imports pyarrow when it first writes, and only Spark reads and jobs import
pyspark.

* :class:`ParquetState` / :class:`ParquetUpdater` — the same dataset from Trident (:mod:`storm_py.spark.trident`);
* :class:`ParquetBatchSink` — the committer bolt (:mod:`storm_py.spark.sink`), layout in
  :mod:`storm_py.spark.layout`, schema checks in :mod:`storm_py.spark.schema`;
* :func:`read_committed` (Spark), :func:`read_committed_table` (pyarrow), :func:`committed_txids`;
* :func:`compact` merges runs of small committed txids (:mod:`storm_py.spark.arrow`);
* :func:`run_step`, :func:`follow`, :func:`read_output` — jobs over committed txids (:mod:`storm_py.spark.jobs`),
  behind ``storm-py spark-job``; :func:`spark_session` the session they use.
"""

from __future__ import annotations

from typing import Any

from storm_py.spark.layout import committed_txids
from storm_py.spark.sink import DatasetWriter, ParquetBatchSink
from storm_py.spark.trident import ParquetState, ParquetUpdater

_LAZY = {
    "read_committed": "storm_py.spark.session",
    "spark_session": "storm_py.spark.session",
    "read_committed_table": "storm_py.spark.arrow",
    "compact": "storm_py.spark.arrow",
    "run_step": "storm_py.spark.jobs",
    "follow": "storm_py.spark.jobs",
    "read_output": "storm_py.spark.jobs",
}

__all__ = [
    "DatasetWriter",
    "ParquetBatchSink",
    "ParquetState",
    "ParquetUpdater",
    "committed_txids",
    "compact",
    "follow",
    "read_committed",
    "read_committed_table",
    "read_output",
    "run_step",
    "spark_session",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'storm_py.spark' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
