"""The pure parts of `storm-py monitor` and `storm-py set_log_level`, and the workers' log-level core."""

from __future__ import annotations

import logging

import click
import pytest

from storm_py.cli.monitor import Reading, parse_level_spec, reading, throughput_row
from storm_py.worker.log_levels import LogLevels


def test_monitor_rows_are_rates_between_two_readings() -> None:
    page = {"spouts": [{"emitted": 100, "executors": 2}, {"emitted": 50, "executors": 1}]}
    first = reading(page, None, "default", "emitted", 10.0)
    assert first == Reading(150, 3, 10.0)
    row = throughput_row("t", None, "default", first, Reading(350, 3, 12.0))
    assert row == "t\t(spouts)\tdefault\t3\t200\t2000\t100.0"
    comp = {"executors": 4, "outputStats": [{"stream": "default", "transferred": 9}, {"stream": "x", "transferred": 1}]}
    assert reading(comp, "split", "default", "transferred", 0.0) == Reading(9, 4, 0.0)


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
