"""Building topologies from Flux definitions: Storm's class names map to storm_py's, objects are constructed the
way Storm's reflection does (constructors, factories, properties, config methods, references, enums), and every
bad class, argument, object kind, stream or config value is a FluxError naming the file and the component."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from storm_py import Count
from storm_py.api.hooks import WorkerHook
from storm_py.api.topology import CUSTOM, FIELDS, SHUFFLE
from storm_py.flux import ExecutionContext, FluxError, build, build_config, build_topology, parse_file
from storm_py.flux.registry import snake_case
from storm_py.flux.wrappers import FluxShellBolt, FluxShellSpout, LogInfoBolt
from storm_py.testing import NGrouping, TestWordCounter, TestWordSpout, test_tuple
from tests.flux.components import TestBolt, TestEnum, WordSource
from tests.flux.conftest import WORDS


def test_simple_wordcount_builds_storm_py_components(configs: Path) -> None:
    t = build(parse_file(configs / "simple_wordcount.yaml"))
    assert t.name == "yaml-topology" and t.conf["topology.workers"] == 1
    assert isinstance(t.context.get_spout("spout-1"), TestWordSpout)
    assert isinstance(t.context.get_bolt("bolt-1"), TestWordCounter)
    assert isinstance(t.context.get_bolt("bolt-2"), LogInfoBolt)
    assert t.topology.bolts["bolt-1"].inputs[("spout-1", "default")].kind == FIELDS
    assert t.topology.bolts["bolt-2"].inputs[("bolt-1", "default")].kind == SHUFFLE


def test_tck_tasks_resources_and_ngrouping(configs: Path) -> None:
    t = build(parse_file(configs / "tck.yaml"))
    spout = t.topology.spouts["spout-1"]
    assert spout.num_tasks() == 5
    assert spout.conf["topology.component.resources.onheap.memory.mb"] == 100
    assert spout.conf["topology.component.cpu.pcore.percent"] == 100
    grouping = t.topology.bolts["bolt-2"].inputs[("bolt-1", "default")]
    assert grouping.kind == CUSTOM and isinstance(grouping.custom, NGrouping)
    grouping.custom.prepare(None, "default", [7, 3, 5])  # type: ignore[arg-type]
    assert grouping.custom.choose_tasks(1, ["w", 1]) == [3]


def test_shell_wrappers_take_commands_streams_and_component_config(configs: Path) -> None:
    t = build(parse_file(configs / "shell_test.yaml"))
    spout = t.context.get_spout("sentence-spout")
    bolt = t.context.get_bolt("splitsentence")
    assert isinstance(spout, FluxShellSpout) and isinstance(bolt, FluxShellBolt)
    assert spout.command == ["node", "randomsentence.js"] and bolt.command == ["python3", "splitsentence.py"]
    expected = {"rabbitmq.configfile": "etc/rabbit.yml", "publisher.data_paths": ["actions"]}
    assert bolt.get_component_configuration() == expected
    assert t.topology.bolts["splitsentence"].conf == expected
    assert t.topology.bolts["splitsentence"].streams["default"][0].to_list() == ["word"]
    assert bolt.working_dir == str(configs / "resources")  # resources/ beside the root file


def test_named_streams_of_the_shell_wrappers() -> None:
    bolt = FluxShellBolt(["python3", "x.py"])
    assert bolt.get_component_configuration() is None
    bolt.set_named_stream("errors", ["reason"])
    bolt.set_default_stream(["a", "b"])
    from storm_py.api.components import OutputFieldsDeclarer

    declarer = OutputFieldsDeclarer()
    bolt.declare_output_fields(declarer)
    assert {s: f.to_list() for s, (f, _) in declarer.streams.items()} == {"errors": ["reason"], "default": ["a", "b"]}
    with pytest.raises(ValueError, match="non-empty list of strings"):
        FluxShellSpout("python3 x.py")  # type: ignore[arg-type]


def test_log_info_bolt_logs_the_values(caplog) -> None:
    caplog.set_level(logging.INFO, logger="storm_py.flux.wrappers")
    LogInfoBolt().execute(test_tuple(["hello", 3]), None)  # type: ignore[arg-type]
    assert any("hello" in r.getMessage() and r.levelno == logging.INFO for r in caplog.records)


def test_worker_hooks_and_component_config(configs: Path) -> None:
    t = build(parse_file(configs / "worker_hook.yaml"))
    assert len(t.topology.worker_hooks) == 1 and type(t.topology.worker_hooks[0]) is WorkerHook
    t = build(parse_file(configs / "component-config-override-test.yaml"))
    assert t.conf["topology.tuple.compression.enable"] is True
    assert t.topology.bolts["bolt-1"].conf["topology.tuple.compression.enable"] is False
    assert "topology.tuple.compression.enable" not in t.topology.spouts["spout-1"].conf
    t = build(parse_file(configs / "component-config-invalid-key-test.yaml"))  # unknown keys pass through
    assert t.topology.bolts["bolt-1"].conf["MY.INAVLID.KEY"] == "none"


def test_a_worker_hook_that_is_none_names_its_id(write) -> None:
    text = WORDS + 'workerHooks:\n  - id: "hook-1"\n    className: "tests.flux.components:NotASpout"\n'
    with pytest.raises(FluxError, match=r"h\.yaml: component 'hook-1': class tests\.flux\.components:NotASpout is "
                       r"not a worker hook"):
        build(parse_file(write("h.yaml", text)))


def test_a_known_key_with_a_wrong_value_names_the_key(write) -> None:
    bad = WORDS.replace('    className: "org.apache.storm.testing.TestWordCounter"',
                        '    className: "org.apache.storm.testing.TestWordCounter"\n    config:\n'
                        '      topology.max.spout.pending: "many"')
    with pytest.raises(FluxError, match=r"t\.yaml: component 'bolt-1': .*'topology\.max\.spout\.pending'"):
        build(parse_file(write("t.yaml", bad)))
    with pytest.raises(FluxError, match=r"t2\.yaml: .*'topology\.workers'"):
        build_config(parse_file(write("t2.yaml", WORDS + "config:\n  topology.workers: lots\n")))


def test_diamond_topology_is_refused_naming_the_undeclared_stream(configs: Path) -> None:
    with pytest.raises(FluxError, match=r"diamond-topology\.yaml: component 'B': stream A --> B: 'A' declares no "
                       r"stream 'default'"):
        build(parse_file(configs / "diamond-topology.yaml"))


@pytest.mark.parametrize(("name", "component", "klass"), [
    ("simple_windowing.yaml", "bolt-1", "org.apache.storm.flux.examples.TestWindowBolt"),
    ("kafka_spout.yaml", "onlyValueRecordTranslator", "org.apache.storm.flux.examples.OnlyValueRecordTranslator"),
    ("simple_stateful_wordcount.yaml", "bolt-1", "org.apache.storm.flux.examples.StatefulWordCounter"),
    ("simple_hdfs.yaml", "", "org.apache.storm."),
])
def test_storm_classes_without_equivalent_are_named_with_their_component(
        configs: Path, name: str, component: str, klass: str) -> None:
    with pytest.raises(FluxError, match="has no storm_py equivalent") as err:
        build(parse_file(configs / name, properties={}))
    assert str(err.value).startswith(str(configs / name))
    assert f"component '{component}" in str(err.value) and klass in str(err.value)


def test_storms_windowing_components_map_to_count(write) -> None:
    text = WORDS + '''
components:
  - id: "len"
    className: "org.apache.storm.topology.base.BaseWindowedBolt$Count"
    constructorArgs: [5]
  - id: "secs"
    className: "org.apache.storm.topology.base.BaseWindowedBolt$Duration"
    factory: "seconds"
    factoryArgs: [3]
'''
    t = build(parse_file(write("w.yaml", text)))
    assert t.context.get_component("len") == Count(5)
    assert t.context.get_component("secs").value == 3000


BOLT = '''
name: "t"
components:
  - id: "foo"
    className: "tests.flux.components:TestClass"
    constructorArgs: ["foo"]
  - id: "bar"
    className: "tests.flux.components.TestClass"
    constructorArgs: ["bar"]
spouts:
  - id: "spout-1"
    className: "org.apache.storm.testing.TestWordSpout"
bolts:
  - id: "bolt-1"
    className: "tests.flux.components:TestBolt"
    constructorArgs:
      - FOO
      - 1.5
      - true
      - reflist: ["foo", "bar"]
    configMethods:
      - name: "withFoo"
        args: ["foo"]
      - name: "withNone"
      - name: "withFooBar"
        args: ["foo", "bar"]
      - name: "withClasses"
        args:
          - reflist: ["foo", "bar"]
    properties:
      - name: "timeLen"
        ref: "foo"
      - name: "plain"
        value: 7
      - name: "snakeProp"
        value: "s"
  - id: "bolt-2"
    className: "tests.flux.components:TestBolt"
    factory: "newInstance"
    factoryArgs: [BAR]
streams:
  - from: "spout-1"
    to: "bolt-1"
    grouping: {type: SHUFFLE}
  - from: "bolt-1"
    to: "bolt-2"
    grouping: {type: LOCAL_OR_SHUFFLE}
'''


def test_constructors_factories_properties_config_methods_refs_and_enums(write) -> None:
    td = parse_file(write("b.yaml", BOLT))
    context = ExecutionContext(td, build_config(td))
    build_topology(context)
    bolt = context.get_bolt("bolt-1")
    assert isinstance(bolt, TestBolt)
    assert (bolt.kind, bolt.ratio, bolt.flag) == (TestEnum.FOO, 1.5, True)
    assert [c.field for c in bolt.classes] == ["foo", "bar"]
    assert bolt.calls == [("withFoo", ("foo",)), ("withNone", ()), ("withFooBar", ("foo", "bar")),
                          ("withClasses", ("foo", "bar"))]
    assert bolt.time_len is context.get_component("foo")  # through set_time_len
    assert bolt.plain == 7 and bolt.snake_prop == "s"  # attributes, as written and in snake_case
    assert context.get_bolt("bolt-2").kind is TestEnum.BAR


@pytest.mark.parametrize(("edit", "message"), [
    (("      - 1.5\n", "      - 1.5\n      - true\n      - 1\n      - 2\n"),
     r"component 'bolt-1': Couldn't find a suitable constructor of class tests\.flux\.components:TestBolt"),
    (('factory: "newInstance"', 'factory: "noSuchFactory"'),
     r"component 'bolt-2': Couldn't find a suitable static method 'noSuchFactory'"),
    (("factoryArgs: [BAR]", "factoryArgs: [BAR, 1, 2]"), r"component 'bolt-2': Couldn't find a suitable static method"),
    (('name: "withNone"', 'name: "withNothing"'),
     r"component 'bolt-1': Unable to find configuration method 'withNothing'"),
    (('name: "plain"', 'name: "nonexistent"'), r"component 'bolt-1': class tests\.flux\.components:TestBolt has no "
                                               r"property 'nonexistent'"),
    (('className: "tests.flux.components:TestBolt"\n    constructorArgs',
      'className: "tests.flux.nowhere:TestBolt"\n    constructorArgs'),
     r"component 'bolt-1': class tests\.flux\.nowhere:TestBolt: cannot import module 'tests\.flux\.nowhere'"),
    (('className: "tests.flux.components:TestBolt"\n    constructorArgs',
      'className: "tests.flux.components:Missing"\n    constructorArgs'),
     r"component 'bolt-1': class tests\.flux\.components:Missing: module 'tests\.flux\.components' has no 'Missing'"),
    (('className: "tests.flux.components.TestClass"', 'className: "com.example.Thing"'),
     r"component 'bar': class com\.example\.Thing has no storm_py equivalent"),
    (('className: "tests.flux.components.TestClass"', 'className: "tests.flux.components:Exploding"'),
     r"component 'bar': constructing class tests\.flux\.components:Exploding raised RuntimeError: boom"),
    (('className: "org.apache.storm.testing.TestWordSpout"', 'className: "tests.flux.components:NotASpout"'),
     r"component 'spout-1': class tests\.flux\.components:NotASpout is not a spout"),
    (('className: "tests.flux.components:TestBolt"\n    factory', 'className: "org.apache.storm.testing.TestWordSpout"'
                                                                 '\n    factory'),
     r"component 'bolt-2': Couldn't find a suitable static method 'newInstance'"),
    (('      - reflist: ["foo", "bar"]\n    configMethods', '      - reflist: ["foo", "ghost"]\n    configMethods'),
     r"component 'bolt-1': refers to component 'ghost', which is not defined"),
    (("grouping: {type: LOCAL_OR_SHUFFLE}", "grouping: {type: FIELDS, args: [nope]}"),
     r"component 'bolt-2': stream bolt-1 --> bolt-2: stream 'default' of 'bolt-1' has no field 'nope'"),
    (("grouping: {type: LOCAL_OR_SHUFFLE}", "grouping: {type: SHUFFLE, streamId: other}"),
     r"component 'bolt-2': stream bolt-1 --> bolt-2: 'bolt-1' declares no stream 'other'"),
    (("grouping: {type: LOCAL_OR_SHUFFLE}", "grouping: {type: DIRECT}"),
     r"component 'bolt-2': stream bolt-1 --> bolt-2: stream 'default' of 'bolt-1' is not a direct stream"),
    (("grouping: {type: LOCAL_OR_SHUFFLE}", "grouping: {type: CUSTOM, customClass: {className: "
                                            "'tests.flux.components:TestClass', constructorArgs: [x]}}"),
     r"component 'bolt-2': stream bolt-1 --> bolt-2: class tests\.flux\.components:TestClass is not a custom grouping"),
])
def test_bad_objects_and_streams_are_flux_errors_naming_the_component(write, edit: tuple[str, str],
                                                                      message: str) -> None:
    old, new = edit
    assert old in BOLT
    path = write("b.yaml", BOLT.replace(old, new, 1))
    with pytest.raises(FluxError, match=message) as err:
        build(parse_file(path))
    assert str(err.value).startswith(str(path))


def test_user_errors_are_chained(write) -> None:
    path = write("b.yaml", BOLT.replace('className: "tests.flux.components.TestClass"',
                                        'className: "tests.flux.components:Exploding"', 1))
    with pytest.raises(FluxError) as err:
        build(parse_file(path))
    assert isinstance(err.value.__cause__, RuntimeError)


def test_a_reference_cycle_names_the_ids(write) -> None:
    text = WORDS + '''
components:
  - id: "a"
    className: "tests.flux.components:TestClass"
    constructorArgs: [{ref: "b"}]
  - id: "b"
    className: "tests.flux.components:TestClass"
    constructorArgs: [{ref: "a"}]
'''
    with pytest.raises(FluxError, match=r"cycle of references: a -> b -> a"):
        build(parse_file(write("c.yaml", text)))


def test_a_reference_may_point_down_the_file(write) -> None:
    text = WORDS + '''
components:
  - id: "outer"
    className: "tests.flux.components:TestClass"
    constructorArgs: [{ref: "inner"}]
  - id: "inner"
    className: "tests.flux.components:TestClass"
    constructorArgs: ["x"]
'''
    t = build(parse_file(write("d.yaml", text)))
    assert t.context.get_component("outer").field is t.context.get_component("inner")


SOURCE = '''
name: "from-code"
topologySource:
  className: "tests.flux.components:WordSource"
  constructorArgs: ["the-words"]
'''


def test_topology_source_builds_the_topology_in_code(write) -> None:
    t = build(parse_file(write("s.yaml", SOURCE)))
    assert list(t.topology.spouts) == ["the-words"] and not t.topology.bolts
    assert isinstance(t.context.get_component("x") or WordSource(), WordSource)
    with pytest.raises(FluxError, match=r"component 'topologySource': .*returned str, not a StormTopology"):
        build(parse_file(write("s2.yaml", SOURCE + '  methodName: "getNothing"\n')))
    with pytest.raises(FluxError, match=r"component 'topologySource': .*has no method 'getMissing'"):
        build(parse_file(write("s3.yaml", SOURCE + '  methodName: "getMissing"\n')))


def test_a_topology_source_is_described_in_two_lines(write) -> None:
    from storm_py.flux.builder import describe

    assert describe(parse_file(write("s.yaml", SOURCE))) == [
        "Topology Name: from-code", "Topology Source: tests.flux.components:WordSource"]


def test_method_names_in_snake_case() -> None:
    assert [snake_case(n) for n in ("withWindow", "addComponentConfig", "getTopology", "setPollTimeoutMs",
                                    "getHTTPServer", "plain")] == [
        "with_window", "add_component_config", "get_topology", "set_poll_timeout_ms", "get_http_server", "plain"]
