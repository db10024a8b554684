"""The compile rule (docs/DESIGN.md, "The compile rule"): user-facing classes stay interpreted and are copied per
task; what each worker builds for itself (executors, collectors, codecs, ledgers, groupers, pure cores) is
compiled, and every compiled module is in ``storm_py.build.HOT_MODULES`` with its role named here."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

from storm_py.api.components import Component, CustomStreamGrouping
from storm_py.api.hooks import BaseTaskHook, WorkerHook
from storm_py.build import HOT_MODULES
from tests.unit.sources import parsed_sources

REPO = Path(__file__).resolve().parents[2]

#: what a compiled module may be: something each worker builds for itself, or a value of the per-tuple path
ROLES = {
    "value": "a final value type of the per-tuple path (a tuple, its fields and ids), never subclassed",
    "codec": "encodes or decodes what crosses a process boundary",
    "executor": "runs tasks or their per-tuple path; built in each worker at prepare or open",
    "collector": "what a task emits and acks through; built by its executor",
    "routing": "chooses the target tasks of an emit; built per task from the topology's groupings",
    "ledger": "bookkeeping of pending or acked tuples, offsets or state: a pure core fed by its executor",
    "pure core": "a policy or state machine that takes inputs and `now` and returns decisions",
}

#: every hot module and its role (the same set as HOT_MODULES)
HOT_MODULE_ROLES = {
    "storm_py.api.tuple": "value",
    "storm_py.protocol.codec": "codec",
    "storm_py.protocol.messages": "codec",
    "storm_py.runtime.executor": "executor",
    "storm_py.runtime.spout_executor": "executor",
    "storm_py.runtime.bolt_executor": "executor",
    "storm_py.runtime.bolt_collectors": "collector",
    "storm_py.runtime.routing": "routing",
    "storm_py.runtime.groupers": "routing",
    "storm_py.runtime.acker": "ledger",
    "storm_py.runtime.ids": "pure core",
    "storm_py.runtime.pending": "ledger",
    "storm_py.runtime.worker_runtime": "executor",
    "storm_py.runtime.transfer.frames": "codec",
    "storm_py.kafka.offsets": "ledger",
    "storm_py.kafka.flow": "pure core",
    "storm_py.spark.columns": "codec",
    "storm_py.clock": "pure core",
    "storm_py.windowing.events": "value",
    "storm_py.windowing.manager": "ledger",
    "storm_py.windowing.policies": "pure core",
    "storm_py.windowing.watermarks": "pure core",
    "storm_py.stateful.state.key_value": "ledger",
    "storm_py.stateful.state.key_buckets": "ledger",
    "storm_py.stateful.at_least_once.tuple_path": "collector",
    "storm_py.stateful.exactly_once.tuple_path": "collector",
    "storm_py.stateful.exactly_once.spout_path": "executor",
    "storm_py.multilang.json_wire": "codec",
    "storm_py.multilang.ledger": "ledger",
    "storm_py.multilang.msgpack_wire": "codec",
    "storm_py.multilang.wire": "codec",
    "storm_py.multilang.traffic": "executor",
}

#: what a user puts in a topology (or the topology's conf), which is copied and pickled with it and per task
USER_FACING = (Component, CustomStreamGrouping, WorkerHook, BaseTaskHook)

#: user-facing subclasses a compiled module may still define, with why
SYSTEM_BUILT = {
    "storm_py.runtime.acker.AckerBolt": "the acker's executor builds one per task in each worker, at prepare; the "
                                        "instance the system topology names is never copied into a task",
}


def test_every_hot_module_has_a_role_of_the_rule():
    assert set(HOT_MODULE_ROLES) == set(HOT_MODULES), (
        f"name the role of each hot module here: missing {sorted(set(HOT_MODULES) - set(HOT_MODULE_ROLES))}, "
        f"no longer hot {sorted(set(HOT_MODULE_ROLES) - set(HOT_MODULES))}")
    assert set(HOT_MODULE_ROLES.values()) <= set(ROLES)


def user_facing_classes(module: str) -> list[str]:
    """The classes ``module`` defines that a user puts in a topology, less the ones each worker builds itself."""
    mod = importlib.import_module(module)
    found = []
    for name, cls in vars(mod).items():
        if inspect.isclass(cls) and cls.__module__ == module and issubclass(cls, USER_FACING):
            qualified = f"{module}.{name}"
            if qualified not in SYSTEM_BUILT:
                found.append(qualified)
    return found


def test_no_compiled_module_defines_a_user_facing_class():
    offending = [cls for module in HOT_MODULES for cls in user_facing_classes(module)]
    assert not offending, f"user-facing classes stay interpreted (move them out of the hot module): {offending}"
    assert user_facing_classes("storm_py.stateful.managed_bolt") == ["storm_py.stateful.managed_bolt.ManagedBolt"]


def test_every_system_built_exception_is_still_in_a_hot_module():
    for qualified, reason in SYSTEM_BUILT.items():
        module, _, name = qualified.rpartition(".")
        assert module in HOT_MODULES and reason.strip()
        assert issubclass(getattr(importlib.import_module(module), name), USER_FACING)


def test_only_storm_py_build_lists_compiled_modules():
    # setup.py reads HOT_MODULES; no other file names a module list for mypyc
    for path, text, _ in parsed_sources():
        if path != "storm_py/build.py":
            assert "HOT_MODULES: " not in text, path
    setup = ast.parse((REPO / "setup.py").read_text(encoding="utf-8"))
    literal_lists = [node for node in ast.walk(setup) if isinstance(node, (ast.List, ast.Tuple))
                     and any(isinstance(e, ast.Constant) and str(e.value).startswith("storm_py.") for e in node.elts)]
    assert not literal_lists, "setup.py takes its module list from storm_py/build.py"


def test_design_md_states_the_rule_and_names_this_test():
    design = (REPO / "docs" / "DESIGN.md").read_text(encoding="utf-8")
    assert "## The compile rule" in design
    section = design.split("## The compile rule", 1)[1].split("\n## ", 1)[0]
    assert "HOT_MODULES" in section and "tests/unit/test_compile_rule.py" in section
    for role in ROLES:
        assert role in section, role
