"""Config: a dict of Storm keys with Storm's setter helpers; starts from the packaged defaults."""

from __future__ import annotations

from typing import Any

from storm_py.config import defaults


class Config(dict[str, Any]):
    """A topology configuration: ``Config()`` holds the defaults; set keys directly or with the helpers."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(defaults())
        self.update(*args, **kwargs)

    def set_num_workers(self, n: int) -> Config:
        """``topology.workers``."""
        self["topology.workers"] = n
        return self

    def set_num_ackers(self, n: int) -> Config:
        """``topology.acker.executors`` (0 disables acking)."""
        self["topology.acker.executors"] = n
        return self

    def set_message_timeout_secs(self, secs: int) -> Config:
        """``topology.message.timeout.secs``."""
        self["topology.message.timeout.secs"] = secs
        return self

    def set_max_spout_pending(self, n: int) -> Config:
        """``topology.max.spout.pending`` (per spout task)."""
        self["topology.max.spout.pending"] = n
        return self

    def set_debug(self, flag: bool) -> Config:
        """``topology.debug``."""
        self["topology.debug"] = bool(flag)
        return self

    def set_max_task_parallelism(self, n: int) -> Config:
        """``topology.max.task.parallelism``."""
        self["topology.max.task.parallelism"] = n
        return self

    def set_num_event_loggers(self, n: int) -> Config:
        """``topology.eventlogger.executors``."""
        self["topology.eventlogger.executors"] = n
        return self
