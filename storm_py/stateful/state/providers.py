"""This module owns state providers: ``topology.state.provider`` names one (``"memory"``, ``"redis"``,
``"checkpoint_dir"`` or ``"module:Class"``) and :func:`new_state` asks it for the state of one task (namespace
``<component>-<task>``).

A ``"module:Class"`` provider is a class with a no-argument constructor and a method
``new_state(namespace, conf, context) -> KeyValueState``.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from storm_py.api.context import TopologyContext
from storm_py.config.keys import setting
from storm_py.errors import ConfigError
from storm_py.stateful.state.checkpoint_dir import (
    CHECKPOINT_DIR,
    CheckpointDirState,
    Settings,
    check_reachable,
    settings_of,
)
from storm_py.stateful.state.key_value import MEMORY_STORES, KeyValueState
from storm_py.stateful.state.task_names import Rescales, namespace

MEMORY = "memory"
REDIS = "redis"


@runtime_checkable
class StateProvider(Protocol):
    """What a ``"module:Class"`` provider implements."""

    def new_state(self, namespace: str, conf: Mapping[str, Any], context: TopologyContext) -> KeyValueState: ...


def state_namespace(context: TopologyContext) -> str:
    """The namespace of a task's state: ``<component>-<task>`` (Storm's), named after the submit's task ids and
    the component's rescale generation once the topology was rescaled (:mod:`storm_py.stateful.state.task_names`)."""
    return namespace(Rescales.of(context.get_storm_conf()), context.this_component_id,
                     context.get_this_task_index(), context.this_task_id)


def provider_config(conf: Mapping[str, Any]) -> dict[str, Any]:
    """``topology.state.provider.config`` as a dict (it may be given as a JSON string)."""
    raw = conf.get("topology.state.provider.config")
    if raw is None:
        return {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except ValueError as err:
            raise ConfigError(
                f"topology.state.provider.config is not valid JSON: {err}", key="topology.state.provider.config"
            ) from err
    if not isinstance(raw, Mapping):
        raise ConfigError(
            "topology.state.provider.config must be a mapping or a JSON object", key="topology.state.provider.config"
        )
    return dict(raw)


def check_provider(conf: Mapping[str, Any]) -> None:
    """Refuse a provider name that is neither built in nor ``module:Class``, and a config that is not a mapping;
    for ``checkpoint_dir``, a config without a url, or whose url cannot be reached and written."""
    name = setting(conf, "topology.state.provider")
    if name not in (MEMORY, REDIS, CHECKPOINT_DIR) and (not isinstance(name, str) or ":" not in name):
        raise ConfigError(
            f"topology.state.provider {name!r} is not 'memory', 'redis', 'checkpoint_dir' or 'module:Class'",
            key="topology.state.provider",
        )
    config = provider_config(conf)
    if name == CHECKPOINT_DIR:
        check_reachable(checkpoint_dir_settings(conf, config))


def checkpoint_dir_settings(conf: Mapping[str, Any], config: Mapping[str, Any] | None = None) -> Settings:
    """The ``checkpoint_dir`` provider's settings: ``topology.state.provider.config``, its url defaulting to
    ``topology.state.checkpoint.dir``."""
    return settings_of(provider_config(conf) if config is None else config,
                       setting(conf, "topology.state.checkpoint.dir"))


def new_state(namespace: str, conf: Mapping[str, Any], context: TopologyContext) -> KeyValueState:
    """The state of ``namespace`` from the topology's provider (Storm's ``StateFactory.getState``)."""
    name = setting(conf, "topology.state.provider")
    if name == MEMORY:
        return KeyValueState(MEMORY_STORES.store(context.topology_id, namespace))
    if name == REDIS:
        from storm_py.stateful.state.redis_state import RedisKeyValueState

        return RedisKeyValueState.from_config(namespace, provider_config(conf))
    if name == CHECKPOINT_DIR:
        return CheckpointDirState.open(checkpoint_dir_settings(conf), context.topology_name, namespace)
    state = _custom(str(name)).new_state(namespace, conf, context)
    if not isinstance(state, KeyValueState):
        raise ConfigError(
            f"topology.state.provider {name!r} returned {type(state).__name__}, not a KeyValueState",
            key="topology.state.provider",
        )
    return state


def _custom(spec: str) -> StateProvider:
    module_name, _, class_name = spec.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError, ValueError) as err:
        raise ConfigError(
            f"topology.state.provider {spec!r} cannot be loaded: {err}", key="topology.state.provider"
        ) from err
    provider = cls()
    if not isinstance(provider, StateProvider):
        raise ConfigError(
            f"topology.state.provider {spec!r} has no new_state(namespace, conf, context) method",
            key="topology.state.provider",
        )
    return provider
