"""The events file: a worker process writes the event logger's lines to ``events.log`` beside ``worker.log``, and
the log viewer lists and reads it like the worker's other files."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from storm_py.api.tuple import Fields, Tuple
from storm_py.runtime.eventlogger import EVENTLOG_FIELDS, EVENTS_LOGGER, EventLoggerBolt
from storm_py.supervisor.logviewer import LogFiles
from storm_py.worker.daemon import configure_logging


@pytest.fixture()
def restored_logging() -> Iterator[None]:
    root, events = logging.getLogger(), logging.getLogger(EVENTS_LOGGER)
    saved: list[Any] = [root.handlers[:], root.level, events.handlers[:], events.level, events.propagate]
    try:
        yield
    finally:
        for h in root.handlers + events.handlers:
            if h not in saved[0] and h not in saved[2]:
                h.close()
        root.handlers[:], events.handlers[:] = saved[0], saved[2]
        root.setLevel(saved[1])
        events.setLevel(saved[3])
        events.propagate = saved[4]


def test_events_go_to_events_log_which_the_log_viewer_lists_and_reads(tmp_path: Path, restored_logging: None
                                                                      ) -> None:
    root = tmp_path / "workers-artifacts"
    worker_dir = root / "topo-1-1" / "6700"
    configure_logging(worker_dir / "worker.log")
    bolt = EventLoggerBolt()
    bolt.prepare({}, None, None)
    event = ["split", 3, None, 1_700_000_000.25, ["a", 1]]
    bolt.execute(Tuple(event, Fields(*EVENTLOG_FIELDS), "split", "__eventlog", 3, None))
    logging.getLogger("anything").warning("a worker line")
    for h in logging.getLogger(EVENTS_LOGGER).handlers + logging.getLogger().handlers:
        h.flush()
    files = LogFiles(root)
    names = [f["file"] for f in files.files("topo-1-1")]
    assert "topo-1-1/6700/events.log" in names and "topo-1-1/6700/worker.log" in names
    text = files.read("topo-1-1/6700/events.log")["data"]
    assert text == "2023-11-14T22:13:20.250+00:00,split,3,,['a', 1]\n"
    assert "split" not in files.read("topo-1-1/6700/worker.log")["data"], "events stay out of worker.log"
