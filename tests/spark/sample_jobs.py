"""Jobs the Spark tests run (by name, through ``storm-py spark-job``)."""

from __future__ import annotations

import os
from pathlib import Path

from pyspark.sql import functions as F

from storm_py.clock import SYSTEM_CLOCK

#: set to a directory: each call of ``gated`` writes ``started-<first txid>`` there, then waits for ``release``
GATE_ENV = "STORM_PY_TEST_JOB_GATE"


def per_row(spark, df):
    """Row-wise: a step split gives the same rows as one run."""
    return df.select("key", (F.col("value") * 2).alias("double"), "txid")


def gated(spark, df):
    """``per_row``, holding each step (after its rows were read) until the test releases it."""
    gate = os.environ.get(GATE_ENV)
    out = per_row(spark, df)
    if gate:
        first = df.agg(F.min("txid")).collect()[0][0]
        Path(gate, f"started-{first}").touch()
        while not Path(gate, "release").exists():
            SYSTEM_CLOCK.sleep(0.05)
    return out


def per_key(spark, df):
    """Aggregation keyed by txid and key (groups never span steps)."""
    return df.groupBy("txid", "key").agg(F.sum("value").alias("total"), F.count(F.lit(1)).alias("rows"))


def offsets(spark, df):
    """The records' keys (for datasets of partition/offset records)."""
    return df.select("partition", "offset", "txid")
