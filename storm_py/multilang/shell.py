"""This module owns what shell bolts and shell spouts share: their command, their settings, starting their
process, and the messages both handle alike (``log``, ``error``, ``metrics``).

``log`` goes to the logger ``storm_py.multilang.COMPONENT`` at the level sent (Storm's 0 trace .. 4 error, info
when absent); ``error`` is reported as the component's error (the topology's errors, REST and UI); ``metrics``
updates the metric the component registered under that name with ``context.register_metric``: its
``update_metric_from_rpc(params)`` (Storm's ``IShellMetric``), else ``incr(params)`` or ``update(params)``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from storm_py.api.context import TopologyContext
from storm_py.clock import Clock
from storm_py.config.keys import setting
from storm_py.errors import ShellProcessError
from storm_py.multilang.handshake import caller_file, handshake, resources_dir
from storm_py.multilang.process import MAX_STDERR_LINE_KEY, ShellProcess, component_logger
from storm_py.multilang.serializer import serializer_for
from storm_py.multilang.wire import MAX_MESSAGE_KEY, ProtocolError, Serializer, quote

#: Storm's multilang log levels
LOG_LEVELS: Final = {0: 5, 1: logging.DEBUG, 2: logging.INFO, 3: logging.WARNING, 4: logging.ERROR}
_NAMED_LEVELS: Final = {"trace": 5, "debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING,
                        "warning": logging.WARNING, "error": logging.ERROR}

SERIALIZER_KEY: Final = "topology.multilang.serializer"
MAX_PENDING_KEY: Final = "topology.shellbolt.max.pending"
TIMEOUT_KEY: Final = "topology.subprocess.timeout.secs"


class ShellComponent:
    """The process side shared by :class:`ShellBolt` and :class:`ShellSpout`."""

    kind = "shell component"
    #: whether its process's emits and acks may arrive in their short form (see ``ShellProcess``)
    _shorthand = False

    def __init__(self, command: str, *args: str) -> None:
        if not isinstance(command, str) or not command:
            raise ValueError(f"a shell component's command must be a non-empty string, got {command!r}")
        self.command = [command, *args]
        self.env: dict[str, str] | None = None
        self.change_directory = True
        #: a fixed working directory for the process (a streamparse project's ``src/``); None: ``resources/``
        self.working_dir: str | None = None
        self._origin = caller_file(self)

    def set_env(self, env: dict[str, str]) -> ShellComponent:
        """Run the process with exactly this environment (Storm's ``setEnv``); chainable."""
        self.env = dict(env)
        return self

    def change_child_cwd(self, change: bool) -> None:
        """Whether the process runs in the topology's ``resources/`` folder (default) or the worker's directory."""
        self.change_directory = bool(change)

    # ---------------------------------------------------------------------------------------------- lifecycle

    def _setup(self, conf: dict[str, Any], context: TopologyContext) -> None:
        self._conf = conf
        self._context = context
        self._clock: Clock = context.clock
        self.component_id = context.this_component_id
        self._log = component_logger(self.component_id)
        self._serializer: Serializer = serializer_for(setting(conf, SERIALIZER_KEY), self.component_id)
        self._timeout = float(setting(conf, TIMEOUT_KEY))
        self._max_message = int(setting(conf, MAX_MESSAGE_KEY))
        self._max_stderr_line = int(setting(conf, MAX_STDERR_LINE_KEY))
        self._process: ShellProcess | None = None

    def _where(self) -> str:
        return f"{self.kind} {self.component_id!r} (task {self._context.this_task_id}, command {self.command!r})"

    def _launch(self, wake: Any = None) -> ShellProcess:
        """Start a process and do the handshake; raise :class:`ShellProcessError` naming the component."""
        if self.working_dir is not None:
            cwd = Path(self.working_dir)
        else:
            cwd = resources_dir(self._origin) if self.change_directory else Path.cwd()
        proc = ShellProcess(self.command, cwd, self._serializer, self.component_id, self.env, wake, self._shorthand,
                            self._busy, self._max_message, self._max_stderr_line)
        try:
            pid = proc.launch(handshake(self._conf, self._context, proc.pid_dir), self._clock, self._timeout)
        except ShellProcessError as exc:
            proc.kill()
            raise ShellProcessError(f"{self._where()}: {exc.message}", component=self.component_id) from exc
        self._log.info("launched %s with pid %s in %s", self.command, pid, proc.cwd)
        return proc

    def _error(self, reason: str) -> ShellProcessError:
        return ShellProcessError(f"{self._where()}: {reason}", component=self.component_id)

    def _busy(self) -> bool:
        """Whether the process has more to answer than what it is writing now (see ``ShellProcess``)."""
        return False

    # ---------------------------------------------------------------------------------------- shared messages

    def _handle_shared(self, msg: dict[str, Any], command: Any,
                       report_error: Callable[[BaseException], None]) -> bool:
        """Handle ``log``, ``error`` (through ``report_error``), ``metrics`` and a message without a command;
        False: another command."""
        if command == "log":
            self._handle_log(msg)
        elif command == "error":
            report_error(self._error(f"the process reported: {msg.get('msg')}"))
        elif command == "metrics":
            self._handle_metrics(msg)
        elif command is None:
            raise ProtocolError(f"a message without a command: {quote(repr(msg))}")
        else:
            return False
        return True

    def _handle_log(self, msg: dict[str, Any]) -> None:
        level = msg.get("level", 2)
        if isinstance(level, str):
            py_level = _NAMED_LEVELS.get(level.lower(), logging.INFO)
        else:
            py_level = LOG_LEVELS.get(level, logging.INFO) if isinstance(level, int) else logging.INFO
        self._log.log(py_level, "%s", msg.get("msg"))

    def _handle_metrics(self, msg: dict[str, Any]) -> None:
        name = msg.get("name")
        if not isinstance(name, str) or not name:
            raise ProtocolError(f"a metrics message needs a metric name, got {msg!r}")
        entry = self._context.metrics.get(name)
        if entry is None:
            raise ProtocolError(f"no metric {name!r} is registered (register it with context.register_metric)")
        metric = entry[0]
        params = msg.get("params")
        update = getattr(metric, "update_metric_from_rpc", None)
        if update is not None:
            update(params)
        elif hasattr(metric, "incr"):
            metric.incr(1 if params is None else params)
        elif hasattr(metric, "update"):
            metric.update(params)
        else:
            raise ProtocolError(f"metric {name!r} ({type(metric).__name__}) cannot be updated from a process")
