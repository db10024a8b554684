"""Configuration: the packaged ``defaults.yaml``, config files, ``-c key=value`` overrides and their merge.

Storm's order holds: defaults < ``conf/storm.yaml`` (or ``--config FILE``) < command line < topology conf <
component conf.  Only Storm's whitelisted keys (plus any non-Storm key) may be overridden per component.
"""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from storm_py.errors import ConfigError

#: Storm keys a component's configuration may override (``Executor.normalizedComponentConf`` in Storm).
COMPONENT_WHITELIST = frozenset(
    {
        "topology.debug",
        "topology.max.spout.pending",
        "topology.max.task.parallelism",
        "topology.transactional.id",
        "topology.tick.tuple.freq.secs",
        "topology.sleep.spout.wait.strategy.time.ms",
        "topology.spout.wait.strategy",
        "topology.bolts.window.length.count",
        "topology.bolts.window.length.duration.ms",
        "topology.bolts.sliding.interval.count",
        "topology.bolts.sliding.interval.duration.ms",
        "topology.bolts.tuple.timestamp.field.name",
        "topology.bolts.tuple.timestamp.max.lag.ms",
        "topology.bolts.message.id.field.name",
        "topology.state.provider",
        "topology.state.provider.config",
        "topology.tasks",
    }
)

#: Key prefixes that belong to Storm itself (a key with one of them must be whitelisted to vary per component).
_STORM_PREFIXES = (
    "topology.", "storm.", "nimbus.", "supervisor.", "worker.", "ui.", "logviewer.", "transactional.", "drpc.",
)

_INT_KEYS_MIN = {
    "topology.workers": 1,
    "topology.message.timeout.secs": 1,
    "topology.executor.receive.buffer.size": 1,
}


@functools.cache
def _defaults() -> dict[str, Any]:
    text = resources.files("storm_py.config").joinpath("defaults.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    if not isinstance(data, dict):  # pragma: no cover - packaging error
        raise ConfigError("packaged defaults.yaml is not a mapping")
    return data


def defaults() -> dict[str, Any]:
    """A fresh copy of the packaged defaults."""
    return copy.deepcopy(_defaults())


def read_yaml_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a YAML config file; an empty file is an empty config."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"cannot read config file {p}: {err.strerror}", path=str(p)) from err
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"config file {p} is not valid YAML: {err}", path=str(p)) from err
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {p} must hold a mapping of keys to values", path=str(p))
    return {str(k): v for k, v in data.items()}


def parse_override(text: str) -> tuple[str, Any]:
    """Parse one ``key=value`` command-line override; the value is read as YAML (``-c topology.workers=2``)."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"config override {text!r} is not of the form key=value", override=text)
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as err:
        raise ConfigError(f"value of config override {key!r} is not valid YAML: {raw!r}", key=key) from err
    return key, value


def read_storm_config(
    config_file: str | os.PathLike[str] | None = None,
    overrides: Iterable[str] | Mapping[str, Any] = (),
    search_dirs: Iterable[str | os.PathLike[str]] = ("conf",),
) -> dict[str, Any]:
    """Defaults < ``config_file`` (else the first ``storm.yaml`` in ``search_dirs``) < overrides."""
    conf = defaults()
    if config_file is not None:
        conf.update(read_yaml_file(config_file))
    else:
        for d in search_dirs:
            candidate = Path(d) / "storm.yaml"
            if candidate.is_file():
                conf.update(read_yaml_file(candidate))
                break
    items = overrides.items() if isinstance(overrides, Mapping) else (parse_override(o) for o in overrides)
    for k, v in items:
        conf[k] = v
    validate(conf)
    return conf


def validate(conf: Mapping[str, Any]) -> None:
    """Check the types of the keys storm_py itself reads; raise :class:`ConfigError` naming the bad key."""
    for key, minimum in _INT_KEYS_MIN.items():
        v = conf.get(key)
        if v is None and key not in ("topology.workers",):
            continue
        if not isinstance(v, int) or isinstance(v, bool) or v < minimum:
            raise ConfigError(f"config key {key!r} must be an integer >= {minimum}, got {v!r}", key=key)
    for key in ("topology.acker.executors", "topology.max.spout.pending", "topology.tick.tuple.freq.secs",
                "topology.max.task.parallelism", "topology.tasks", "supervisor.worker.restart.min.uptime.secs",
                "supervisor.worker.restart.backoff.secs", "supervisor.worker.restart.backoff.max.secs"):
        v = conf.get(key)
        if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0):
            raise ConfigError(f"config key {key!r} must be a non-negative number or null, got {v!r}", key=key)
    ports = conf.get("supervisor.slots.ports")
    if ports is not None and (not isinstance(ports, list) or not all(isinstance(p, int) for p in ports)):
        raise ConfigError(f"config key 'supervisor.slots.ports' must be a list of ports, got {ports!r}")


def merge_component_conf(topology_conf: Mapping[str, Any], component_conf: Mapping[str, Any] | None) -> dict[str, Any]:
    """The configuration a component sees: topology conf plus its own whitelisted (or non-Storm) keys."""
    merged = dict(topology_conf)
    if component_conf:
        for k, v in component_conf.items():
            if k in COMPONENT_WHITELIST or not k.startswith(_STORM_PREFIXES):
                merged[k] = v
    return merged
