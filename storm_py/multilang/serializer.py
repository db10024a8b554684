"""This module owns the choice of a multilang component's framing: :func:`serializer_for` reads
``topology.multilang.serializer`` (``json``, Storm's JSON serializer class, or ``msgpack``) into a
:class:`~storm_py.multilang.wire.Serializer`."""

from __future__ import annotations

from typing import Any, Final

from storm_py.errors import ConfigError
from storm_py.multilang.json_wire import JsonSerializer
from storm_py.multilang.msgpack_wire import MsgpackSerializer
from storm_py.multilang.wire import Serializer

#: Storm's class name for the JSON serializer, accepted as a synonym of ``"json"``
STORM_JSON_CLASS: Final = "org.apache.storm.multilang.JsonSerializer"


def serializer_for(name: Any, component_id: str) -> Serializer:
    """The serializer ``topology.multilang.serializer`` names; raise naming the component for anything else."""
    if name in (None, "json", STORM_JSON_CLASS):
        return JsonSerializer()
    if name == "msgpack":
        return MsgpackSerializer()
    raise ConfigError(
        f"topology.multilang.serializer of {component_id!r} must be 'json', 'msgpack' or {STORM_JSON_CLASS!r}, "
        f"got {name!r}", key="topology.multilang.serializer", component=component_id,
    )
