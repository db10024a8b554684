"""This module owns resolving Flux class and method names: the compatibility table mapping Storm's class names to
storm_py's, importing ``module:Class`` / ``module.Class`` names, and finding methods as written or in snake_case.

A Java class (``org.apache.``, ``java.``, ``com.`` ...) with no entry in the table is refused with a message saying it
has no storm_py equivalent; the table's targets are imported only when a definition names them.
"""

from __future__ import annotations

import importlib
import re
from typing import Any, Final

from storm_py.flux.model import FluxError, ObjectDef, flux_error

#: Storm's class names (as Storm's Flux files write them) -> the storm_py ``module:attribute`` they map to
COMPATIBILITY: Final[dict[str, str]] = {
    "org.apache.storm.testing.TestWordSpout": "storm_py.testing:TestWordSpout",
    "org.apache.storm.testing.TestWordCounter": "storm_py.testing:TestWordCounter",
    "org.apache.storm.testing.TestGlobalCount": "storm_py.testing:TestGlobalCount",
    "org.apache.storm.testing.TestAggregatesCounter": "storm_py.testing:TestAggregatesCounter",
    "org.apache.storm.testing.NGrouping": "storm_py.testing:NGrouping",
    "org.apache.storm.flux.wrappers.bolts.FluxShellBolt": "storm_py.flux.wrappers:FluxShellBolt",
    "org.apache.storm.flux.wrappers.spouts.FluxShellSpout": "storm_py.flux.wrappers:FluxShellSpout",
    "org.apache.storm.flux.wrappers.bolts.LogInfoBolt": "storm_py.flux.wrappers:LogInfoBolt",
    "org.apache.storm.topology.base.BaseWindowedBolt$Count": "storm_py.windowing:Count",
    "org.apache.storm.topology.base.BaseWindowedBolt$Duration": "storm_py.windowing:Duration",
    "org.apache.storm.hooks.BaseWorkerHook": "storm_py.api.hooks:WorkerHook",
    "org.apache.storm.kafka.spout.KafkaSpout": "storm_py.kafka:KafkaSpout",
    "org.apache.storm.kafka.spout.KafkaSpoutConfig$Builder": "storm_py.kafka:KafkaSpoutConfigBuilder",
    "org.apache.storm.kafka.spout.KafkaSpoutConfig": "storm_py.kafka.storm_builders:spout_config_from_builder",
    "org.apache.storm.kafka.bolt.KafkaBolt": "storm_py.kafka.storm_builders:StormKafkaBolt",
    "org.apache.storm.kafka.bolt.selector.DefaultTopicSelector": "storm_py.kafka:DefaultTopicSelector",
    "org.apache.storm.kafka.bolt.mapper.FieldNameBasedTupleToKafkaMapper":
        "storm_py.kafka:FieldNameBasedTupleToKafkaMapper",
}

#: name prefixes of Java classes (Storm's, the JDK's, libraries')
JAVA_PREFIXES: Final = ("org.apache.", "java.", "javax.", "com.", "org.", "net.")


def looks_java(name: str) -> bool:
    """Whether ``name`` is written as a Java class name."""
    return "$" in name or name.startswith(JAVA_PREFIXES)


def _import(module_name: str, attr_path: str, obj: ObjectDef, written: str) -> Any:
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as err:
        if looks_java(written):
            raise flux_error(obj.source, f"class {written} has no storm_py equivalent", obj.label) from err
        raise flux_error(obj.source, f"class {written}: cannot import module {module_name!r}: {err}",
                         obj.label) from err
    except Exception as err:
        raise flux_error(obj.source, f"class {written}: importing module {module_name!r} raised "
                         f"{type(err).__name__}: {err}", obj.label) from err
    for part in attr_path.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            if looks_java(written):
                raise flux_error(obj.source, f"class {written} has no storm_py equivalent", obj.label) from None
            raise flux_error(obj.source, f"class {written}: module {module_name!r} has no {attr_path!r}",
                             obj.label) from None
    return target


def resolve_class(obj: ObjectDef) -> Any:
    """The class (or callable) an object definition's ``className`` names; :class:`FluxError` naming it and the
    component when there is none."""
    written = obj.class_name
    mapped = COMPATIBILITY.get(written)
    if mapped is not None:
        module_name, _, attr = mapped.partition(":")
        return _import(module_name, attr, obj, written)
    if ":" in written:
        module_name, _, attr = written.partition(":")
    else:
        module_name, _, attr = written.rpartition(".")
    if not module_name or not attr or "$" in written:
        if looks_java(written):
            raise flux_error(obj.source, f"class {written} has no storm_py equivalent", obj.label)
        raise flux_error(obj.source, f"class name {written!r} is not of the form module:Class or module.Class",
                         obj.label)
    return _import(module_name, attr, obj, written)


def snake_case(name: str) -> str:
    """Storm's camelCase method name in Python's snake_case (``withWindow`` -> ``with_window``)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])|(?<=[A-Z])([A-Z])(?=[a-z])", r"_\1\2", name).lower()


def find_method(target: Any, name: str) -> Any:
    """``target``'s method ``name`` as written, else in snake_case; None when neither exists."""
    for candidate in (name, snake_case(name)):
        method = getattr(target, candidate, None)
        if callable(method):
            return method
    return None


def setter_for(target: Any, prop: str) -> Any:
    """A setter for property ``prop`` (``set<Prop>`` or ``set_<snake>``), or None."""
    for candidate in (f"set{prop[:1].upper()}{prop[1:]}", f"set_{snake_case(prop)}"):
        method = getattr(target, candidate, None)
        if callable(method):
            return method
    return None


def attribute_for(target: Any, prop: str) -> str | None:
    """The existing attribute a property sets (``prop`` or its snake_case), or None."""
    for candidate in (prop, snake_case(prop)):
        if hasattr(target, candidate):
            return candidate
    return None


__all__ = ["COMPATIBILITY", "FluxError", "attribute_for", "find_method", "looks_java", "resolve_class",
           "setter_for", "snake_case"]
