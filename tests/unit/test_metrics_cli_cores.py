"""The pure parts of `storm-py monitor` and `storm-py set_log_level`, and the workers' log-level core."""

from __future__ import annotations

import logging
import re

import click
import pytest

from storm_py.cli.monitor import MonitorTable, Reading, parse_level_spec, reading, throughput_cells
from storm_py.worker.log_levels import LogLevels


def test_monitor_rows_are_rates_between_two_readings() -> None:
    page = {"spouts": [{"emitted": 100, "executors": 2}, {"emitted": 50, "executors": 1}]}
    first = reading(page, None, "default", "emitted", 10.0)
    assert first == Reading(150, 3, 10.0)
    row = throughput_cells("t", None, "default", first, Reading(350, 3, 12.0))
    assert row == ["t", "(spouts)", "default", "3", "200", "2000", "100.0"]
    comp = {"executors": 4, "outputStats": [{"stream": "default", "transferred": 9}, {"stream": "x", "transferred": 1}]}
    assert reading(comp, "split", "default", "transferred", 0.0) == Reading(9, 4, 0.0)


def _cells(line: str) -> list[tuple[int, int]]:
    """Where each cell of a printed line starts and ends (cells stand two or more spaces apart)."""
    return [m.span() for m in re.finditer(r"\S+(?: \S+)*", line)]


def test_monitor_columns_line_up_under_their_headers() -> None:
    table = MonitorTable("word-count", "split-sentence", "default", "emitted")
    start = Reading(0, 12, 0.0)
    header = _cells(table.header())
    assert len(header) == 7
    for count in (7, 1_234_567):
        row = _cells(table.row("word-count", "split-sentence", "default", start, Reading(count, 12, 4.0)))
        assert [s for s, _ in row[:3]] == [s for s, _ in header[:3]]  # text starts under its header
        assert [e for _, e in row[3:]] == [e for _, e in header[3:]]  # numbers end under their header


def test_level_specs_follow_storm() -> None:
    assert parse_level_spec("ROOT=debug:30") == ("ROOT", {"target_level": "DEBUG", "timeout": 30})
    assert parse_level_spec("my.pkg=WARN") == ("my.pkg", {"target_level": "WARN", "timeout": 0})
    for bad in ("ROOT", "ROOT=LOUD", "ROOT=DEBUG:soon", "=DEBUG"):
        with pytest.raises(click.BadParameter):
            parse_level_spec(bad)


def test_log_levels_set_then_restore_at_the_timeout() -> None:
    levels = {"ROOT": logging.WARNING, "a": logging.NOTSET}
    core = LogLevels()
    config = {"ROOT": {"target_level": "DEBUG", "timeout_epoch": 100.0}, "a": {"target_level": "ERROR"}}
    changes = core.changes(config, 50.0, levels.__getitem__)
    assert changes == [("ROOT", logging.DEBUG), ("a", logging.ERROR)]
    levels.update(changes)
    assert core.changes(config, 60.0, levels.__getitem__) == []
    back = core.changes(config, 100.0, levels.__getitem__)  # ROOT's timeout passed: its old level returns
    assert back == [("ROOT", logging.WARNING)]
    levels.update(back)
    assert core.changes({}, 101.0, levels.__getitem__) == [("a", logging.NOTSET)]  # removed: restored
