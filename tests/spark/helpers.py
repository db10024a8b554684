"""Test data for the Spark tests: a small schema and deterministic rows per txid."""

from __future__ import annotations

from typing import Any

SCHEMA = {"key": "string", "value": "int64", "day": "string"}


def rows_for(txid: int, n: int = 5) -> list[list[Any]]:
    """``n`` rows of ``txid``: keys k0..k3, days d0..d1, values unique per (txid, i)."""
    return [[f"k{i % 4}", txid * 1000 + i, f"d{(txid + i) % 2}"] for i in range(n)]


def as_dicts(rows: list[list[Any]], txid: int) -> list[dict[str, Any]]:
    return [{"key": k, "value": v, "day": d, "txid": txid} for k, v, d in rows]


def sort_key(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(str(row[k]) for k in sorted(row))
