"""This module owns Storm's flux-wrappers in Python: :class:`FluxShellBolt` and :class:`FluxShellSpout` (shell
components whose command and output streams a Flux file gives) and :class:`LogInfoBolt` (logs each input at INFO).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from storm_py.api.components import BasicBolt, BasicOutputCollector, OutputFieldsDeclarer
from storm_py.api.tuple import DEFAULT_STREAM, Tuple
from storm_py.multilang import ShellBolt, ShellSpout

log = logging.getLogger("storm_py.flux.wrappers")


def _command(command: Sequence[str], kind: str) -> list[str]:
    if isinstance(command, str) or not isinstance(command, Sequence) or not command or not all(
            isinstance(c, str) and c for c in command):
        raise ValueError(f"a {kind}'s command must be a non-empty list of strings (the program, then its "
                         f"arguments), got {command!r}")
    return list(command)


class _FluxShell:
    """The stream declarations and component configuration both wrappers share."""

    _streams: dict[str, list[str]]
    _component_config: dict[str, Any]

    def _init_streams(self, output_fields: Sequence[str] | None) -> None:
        self._streams = {}
        self._component_config = {}
        if output_fields is not None:
            self.set_default_stream(output_fields)

    def set_default_stream(self, fields: Sequence[str]) -> None:
        """Declare the default stream's fields."""
        self._streams[DEFAULT_STREAM] = list(fields)

    def set_named_stream(self, stream: str, fields: Sequence[str]) -> None:
        """Declare stream ``stream`` with these fields."""
        self._streams[stream] = list(fields)

    def add_component_config(self, key: str, value: Any) -> None:
        """An entry of the component's configuration (what ``get_component_configuration`` returns)."""
        self._component_config[key] = value

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        for stream, fields in self._streams.items():
            declarer.declare(fields, stream=stream)

    def get_component_configuration(self) -> dict[str, Any] | None:
        return dict(self._component_config) or None


class FluxShellBolt(_FluxShell, ShellBolt):
    """Storm's ``FluxShellBolt``: a shell bolt running ``command`` (a list), declaring ``output_fields``."""

    def __init__(self, command: Sequence[str], output_fields: Sequence[str] | None = None) -> None:
        cmd = _command(command, "shell bolt")
        ShellBolt.__init__(self, cmd[0], *cmd[1:])
        self._init_streams(output_fields)


class FluxShellSpout(_FluxShell, ShellSpout):
    """Storm's ``FluxShellSpout``: a shell spout running ``command`` (a list), declaring ``output_fields``."""

    def __init__(self, command: Sequence[str], output_fields: Sequence[str] | None = None) -> None:
        cmd = _command(command, "shell spout")
        ShellSpout.__init__(self, cmd[0], *cmd[1:])
        self._init_streams(output_fields)


class LogInfoBolt(BasicBolt):
    """Storm's ``LogInfoBolt``: logs every input's values at INFO on ``storm_py.flux.wrappers``; emits nothing."""

    def execute(self, tup: Tuple, collector: BasicOutputCollector) -> None:
        log.info("%s", tup.values)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """No output."""
