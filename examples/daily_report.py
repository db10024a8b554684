"""The events pipeline's Spark jobs: a daily report, and a row-wise purchases extract for ``--follow`` runs.

Run over the dataset the pipeline commits::

    storm-py spark-job examples.daily_report:report --input EVENTS_ROOT --output OUT --show

:func:`expected_report` computes the same report in plain Python from the source events, so a run can be
checked against it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

PURCHASE = "purchase"


def report(spark: SparkSession, df: DataFrame) -> DataFrame:
    """Per day: events, distinct users, purchases and revenue in USD (rounded to cents)."""
    is_purchase = F.col("kind") == PURCHASE
    return (
        df.groupBy("day")
        .agg(
            F.count(F.lit(1)).alias("events"),
            F.countDistinct("user").alias("users"),
            F.sum(F.when(is_purchase, 1).otherwise(0)).alias("purchases"),
            F.round(F.sum(F.when(is_purchase, F.col("amount_usd")).otherwise(0.0)), 2).alias("revenue_usd"),
        )
        .orderBy("day")
    )


def purchases(spark: SparkSession, df: DataFrame) -> DataFrame:
    """Every purchase with where it came from (row-wise: any split into steps gives the same rows)."""
    return df.where(F.col("kind") == PURCHASE).select("partition", "offset", "day", "user", "amount_usd", "txid")


def expected_report(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """:func:`report` computed in Python over the good events (dicts with the dataset's fields)."""
    days: dict[str, dict[str, Any]] = {}
    for row in rows:
        d = days.setdefault(row["day"], {"events": 0, "users": set(), "purchases": 0, "revenue_usd": 0.0})
        d["events"] += 1
        d["users"].add(row["user"])
        if row["kind"] == PURCHASE:
            d["purchases"] += 1
            d["revenue_usd"] += row["amount_usd"]
    return [{"day": day, "events": d["events"], "users": len(d["users"]), "purchases": d["purchases"],
             "revenue_usd": round(d["revenue_usd"], 2)} for day, d in sorted(days.items())]


def report_rows(df: DataFrame) -> list[dict[str, Any]]:
    """The report's rows as dicts, by day."""
    return [r.asDict() for r in df.orderBy("day").collect()]
