"""The JDBC tests' servers: PostgreSQL (``tests.postgres_fixture``) and a fresh table namespace per test."""

from __future__ import annotations

from tests.postgres_fixture import postgres

__all__ = ["postgres"]
