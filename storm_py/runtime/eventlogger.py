"""This module owns the event logger: the ``__eventlogger`` bolt (``topology.eventlogger.executors`` of them,
wired by the system-topology rewrite) that writes the emits debug sampling sends it to the events log.

Each event is one line on the ``storm_py.events`` logger: ``time,component,task,message id,values``.  A worker
process sends that logger to ``events.log`` beside its ``worker.log`` (readable through the log viewer); in a
LocalCluster it goes wherever the application's logging sends it.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any, Final

from storm_py.api.components import Bolt

EVENTLOGGER_COMPONENT: Final = "__eventlogger"
EVENTLOG_STREAM: Final = "__eventlog"
EVENTLOG_FIELDS: Final = ("component-id", "task-id", "message-id", "ts", "values")
EVENTS_LOGGER: Final = "storm_py.events"

events_log = logging.getLogger(EVENTS_LOGGER)


def event_line(component: str, task: int, message_id: Any, ts: float, values: Any) -> str:
    """One line of the events log."""
    when = datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds")
    return f"{when},{component},{task},{'' if message_id is None else message_id},{values!r}"


class EventLoggerBolt(Bolt):
    """Writes every event it receives to the events log."""

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        try:
            component, task, message_id, ts, values = tup.values
            events_log.info("%s", event_line(str(component), int(task), message_id, float(ts), values))
        except (TypeError, ValueError) as err:
            events_log.warning("malformed event %r: %s", tup.values, err)
