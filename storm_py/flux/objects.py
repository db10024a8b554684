"""This module owns constructing the objects a Flux definition describes, the way Storm's ``FluxBuilder`` does by
reflection: a constructor, a factory or no arguments, then ``properties``, then ``configMethods``, with ``ref`` and
``reflist`` arguments standing for components (each built once, in reference order, cycles refused) and strings
coerced to the enum a parameter is annotated with.
"""

from __future__ import annotations

import enum
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from storm_py.flux.model import BeanDef, FluxError, ObjectDef, flux_error
from storm_py.flux.registry import attribute_for, find_method, resolve_class, setter_for


def _enum_type(annotation: Any) -> type[enum.Enum] | None:
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        found = [a for a in typing.get_args(annotation) if isinstance(a, type) and issubclass(a, enum.Enum)]
        return found[0] if len(found) == 1 else None
    return None


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    target = fn.__init__ if isinstance(fn, type) else fn  # type: ignore[misc]
    try:
        return typing.get_type_hints(target)
    except Exception:  # unresolvable annotations: no coercion
        return {}


def _call(fn: Callable[..., Any], args: list[Any]) -> tuple[bool, Any]:
    """(True, result) when ``args`` bind to ``fn``'s signature; (False, None) when they do not."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return True, fn(*args)
    try:
        bound = sig.bind(*args)
    except TypeError:
        return False, None
    hints = _hints(fn)
    for name, value in list(bound.arguments.items()):
        kind = _enum_type(hints.get(name))
        if kind is not None and isinstance(value, str) and value in kind.__members__:
            bound.arguments[name] = kind[value]
    return True, fn(*bound.args, **bound.kwargs)


class ObjectFactory:
    """Builds the definition's components on demand and any object referring to them."""

    def __init__(self, components: list[BeanDef]) -> None:
        self._defs = {c.id: c for c in components}
        self.built: dict[str, Any] = {}
        self._building: list[str] = []

    def component(self, cid: str, referrer: ObjectDef) -> Any:
        """Component ``cid``'s object, built the first time it is asked for."""
        if cid in self.built:
            return self.built[cid]
        bean = self._defs.get(cid)
        if bean is None:
            raise flux_error(referrer.source, f"refers to component {cid!r}, which is not defined", referrer.label)
        if cid in self._building:
            cycle = " -> ".join([*self._building[self._building.index(cid):], cid])
            raise flux_error(referrer.source, f"refers to component {cid!r} in a cycle of references: {cycle}",
                             referrer.label)
        self._building.append(cid)
        try:
            self.built[cid] = self.build(bean)
        finally:
            self._building.pop()
        return self.built[cid]

    def build_all(self) -> None:
        """Every component, in file order (references first)."""
        for cid, bean in self._defs.items():
            self.component(cid, bean)

    def _arg(self, value: Any, obj: ObjectDef) -> Any:
        if isinstance(value, Mapping) and len(value) == 1:
            if "ref" in value:
                return self.component(str(value["ref"]), obj)
            if "reflist" in value:
                items = value["reflist"]
                return [self.component(str(i), obj) for i in (items if isinstance(items, list) else [items])]
        return value

    def _args(self, values: list[Any] | None, obj: ObjectDef) -> list[Any]:
        return [self._arg(v, obj) for v in values or []]

    def build(self, obj: ObjectDef) -> Any:
        """Construct ``obj``: class, arguments, properties, config methods; :class:`FluxError` on any failure."""
        cls = resolve_class(obj)
        what = f"class {obj.class_name}"
        try:
            if obj.factory is not None:
                factory = find_method(cls, obj.factory)
                args = self._args(obj.factory_args, obj)
                if factory is None:
                    raise flux_error(obj.source, f"Couldn't find a suitable static method {obj.factory!r} of {what} "
                                     f"for the arguments {args!r}", obj.label)
                ok, instance = _call(factory, args)
                if not ok:
                    raise flux_error(obj.source, f"Couldn't find a suitable static method {obj.factory!r} of {what} "
                                     f"for the arguments {args!r}", obj.label)
            else:
                args = self._args(obj.constructor_args, obj)
                if not callable(cls):
                    raise flux_error(obj.source, f"{what} is not a class", obj.label)
                ok, instance = _call(cls, args)
                if not ok:
                    raise flux_error(obj.source, f"Couldn't find a suitable constructor of {what} for the arguments "
                                     f"{args!r}", obj.label)
            for prop in obj.properties:
                value = self.component(prop.ref, obj) if prop.ref is not None else prop.value
                self._apply_property(instance, prop.name, value, obj)
            for method_def in obj.config_methods:
                method = find_method(instance, method_def.name)
                args = self._args(method_def.args, obj)
                ok = False
                if method is not None:
                    ok, _ = _call(method, args)
                if not ok:
                    raise flux_error(obj.source, f"Unable to find configuration method {method_def.name!r} of {what} "
                                     f"for the arguments {args!r}", obj.label)
        except FluxError:
            raise
        except Exception as err:
            raise flux_error(obj.source, f"constructing {what} raised {type(err).__name__}: {err}",
                             obj.label) from err
        return instance

    def _apply_property(self, instance: Any, name: str, value: Any, obj: ObjectDef) -> None:
        setter = setter_for(instance, name)
        if setter is not None:
            ok, _ = _call(setter, [value])
            if ok:
                return
            raise flux_error(obj.source, f"the setter of property {name!r} of class {obj.class_name} does not take "
                             f"{value!r}", obj.label)
        attr = attribute_for(instance, name)
        if attr is None:
            raise flux_error(obj.source, f"class {obj.class_name} has no property {name!r} (no setter, no attribute)",
                             obj.label)
        setattr(instance, attr, value)
