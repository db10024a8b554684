"""Reading Flux files: Storm's example files parse into the model; substitution, properties files, includes and
every structural fault of a definition give the stated result (a FluxError naming the file, and the component)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from storm_py import InvalidTopologyException
from storm_py.flux import FluxError, load, parse_file, parse_properties, parse_resource
from storm_py.flux.parser import substitute
from tests.flux.conftest import WORDS


def test_simple_wordcount_parses_into_storms_model(configs: Path) -> None:
    td = parse_file(configs / "simple_wordcount.yaml")
    assert td.name == "yaml-topology"
    assert td.config == {"topology.workers": 1}
    assert [s.id for s in td.spouts] == ["spout-1"] and [b.id for b in td.bolts] == ["bolt-1", "bolt-2"]
    assert td.get_bolt_def("bolt-2").class_name == "org.apache.storm.flux.wrappers.bolts.LogInfoBolt"
    first, second = td.streams
    assert (first.from_, first.to) == ("spout-1", "bolt-1")
    assert (first.grouping.type, first.grouping.args) == ("FIELDS", ["word"])
    assert second.grouping.type == "SHUFFLE" and second.grouping.stream_id is None
    assert td.is_dsl_topology() and td.topology_source is None
    assert td.get_spout_def("spout-1").parallelism == 1 and td.get_spout_def("spout-1").num_tasks is None


def test_tck_keeps_tasks_resources_and_the_custom_grouping(configs: Path) -> None:
    td = parse_file(configs / "tck.yaml")
    spout = td.get_spout_def("spout-1")
    assert (spout.num_tasks, spout.on_heap_memory_load) == (5, 100)
    assert (spout.off_heap_memory_load, spout.cpu_load) == (100, 100)
    custom = td.streams[1].grouping.custom_class
    assert custom is not None and custom.class_name == "org.apache.storm.testing.NGrouping"
    assert custom.constructor_args == [1]


def test_properties_files_read_javas_three_separators_comments_and_continuations(write) -> None:
    path = write("p.properties", """
        # comment
        ! also a comment
        a=1
        b: two words
        c three
        long = first \\
           second
        """)
    assert parse_properties(path) == {"a": "1", "b": "two words", "c": "three", "long": "first second"}


def test_substitution_from_properties_lists_and_the_environment(configs: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/the/path")
    td = load(configs / "substitution-test.yaml", configs / "test.properties", env_filter=True)
    assert td.name == "substitution-topology"
    assert td.config["test.env.value"] == "/the/path"
    assert td.config["list.property.target"] == ["A string list"]
    assert td.config["list.element.property.target"] == "A string list"


def test_environment_placeholders_need_the_env_filter(configs: Path, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="storm_py.flux")
    td = load(configs / "substitution-test.yaml", configs / "test.properties", env_filter=False)
    assert td.config["test.env.value"] == "${ENV-PATH}"
    assert any("${ENV-PATH}" in r.getMessage() for r in caplog.records if r.name == "storm_py.flux")


def test_a_placeholder_without_value_is_left_and_named_in_a_warning(caplog) -> None:
    caplog.set_level(logging.WARNING, logger="storm_py.flux")
    assert substitute("name: ${missing}\nx: ${k}\n", {"k": "v"}, False) == "name: ${missing}\nx: v\n"
    assert any("${missing}" in r.getMessage() for r in caplog.records)


def test_storms_resource_include_merges_the_included_topology(on_path: None, configs: Path) -> None:
    td = parse_file(configs / "include_test.yaml")
    assert td.name == "include-topology"  # the including file's name wins without override
    assert [b.id for b in td.bolts] == ["splitsentence", "log", "count"]
    assert len(td.streams) == 3 and td.includes == []
    assert parse_resource("/configs/shell_test.yaml").name == "shell-topology"


def test_include_override_rules_and_nesting(write) -> None:
    write("base.yaml", WORDS + """
config:
  topology.workers: 3
  only.base: 1
""")
    write("middle.yaml", """
        name: "middle"
        includes:
          - file: "base.yaml"
        """)
    top = write("top.yaml", """
        name: "top"
        config:
          topology.workers: 1
        includes:
          - file: "middle.yaml"
        """)
    td = parse_file(top)
    assert td.name == "top" and td.config == {"topology.workers": 1, "only.base": 1}
    over = write("over.yaml", """
        name: "over"
        config:
          topology.workers: 1
        includes:
          - file: "base.yaml"
            override: true
        """)
    td = parse_file(over)
    assert td.name == "t" and td.config["topology.workers"] == 3


def test_an_include_cycle_names_the_files(write) -> None:
    write("a.yaml", 'name: "a"\nincludes:\n  - file: "b.yaml"\n')
    write("b.yaml", 'name: "b"\nincludes:\n  - file: "a.yaml"\n')
    with pytest.raises(FluxError, match=r"cycle: .*a\.yaml -> .*b\.yaml -> .*a\.yaml"):
        parse_file(write("a.yaml", 'name: "a"\nincludes:\n  - file: "b.yaml"\n'))


def test_a_missing_include_names_the_including_file_and_the_path(write) -> None:
    path = write("top.yaml", 'name: "x"\nincludes:\n  - file: "nowhere.yaml"\n')
    with pytest.raises(FluxError, match=r"top\.yaml: the included file nowhere\.yaml does not exist"):
        parse_file(path)


def test_a_missing_file_and_a_syntax_error_with_its_line(write, tmp_path: Path) -> None:
    with pytest.raises(FluxError, match=r"absent\.yaml: no such file"):
        parse_file(tmp_path / "absent.yaml")
    path = write("bad.yaml", 'name: "x"\nspouts:\n  - id: [unclosed\n')
    with pytest.raises(FluxError, match=r"bad\.yaml: invalid YAML at line \d"):
        parse_file(path)


def test_flux_error_is_an_invalid_topology_exception() -> None:
    assert issubclass(FluxError, InvalidTopologyException)


@pytest.mark.parametrize(("text", "message"), [
    (WORDS + "extra: 1\n", r"unknown key 'extra' in the topology definition"),
    (WORDS.replace('    className: "org.apache.storm.testing.TestWordCounter"',
                   '    className: "org.apache.storm.testing.TestWordCounter"\n    colour: red'),
     r"component 'bolt-1': unknown key 'colour'"),
    (WORDS.replace("      type: FIELDS", "      type: FIELDS\n      sort: true"),
     r"unknown key 'sort' in the grouping"),
    (WORDS.replace("type: FIELDS", "type: ROUND_ROBIN"),
     r"component 'bolt-1': stream spout-1 --> bolt-1: unknown grouping type 'ROUND_ROBIN' \(valid: SHUFFLE, FIELDS, "
     r"ALL, GLOBAL, NONE, DIRECT, LOCAL_OR_SHUFFLE, CUSTOM\)"),
    (WORDS.replace('      args: ["word"]\n', ""), r"a FIELDS grouping needs 'args'"),
    (WORDS.replace("type: FIELDS", "type: CUSTOM"), r"a CUSTOM grouping needs 'customClass'"),
    (WORDS.replace('name: "t"\n', ""), r"the topology has no 'name'"),
    (WORDS.replace('from: "spout-1"', 'from: "nobody"'),
     r"component 'bolt-1': stream nobody --> bolt-1: 'nobody' is no"),
    (WORDS.replace('to: "bolt-1"', 'to: "spout-1"'), r"stream spout-1 --> spout-1: 'spout-1' is no bolt"),
    (WORDS.replace("streams:", "streams: []\nx:").split("x:")[0], r"component 'bolt-1': no stream goes into this bolt"),
    (WORDS + 'topologySource:\n  className: "tests.flux.components:WordSource"\n', r"not both"),
    (WORDS.replace('id: "bolt-1"', 'id: "spout-1"'), r"spout and bolt id 'spout-1' is used twice"),
    (WORDS.replace('    className: "org.apache.storm.testing.TestWordCounter"',
                   '    className: "org.apache.storm.testing.TestWordCounter"\n'
                   '    constructorArgs:\n      - ref: "ghost"'),
     r"component 'bolt-1': refers to component 'ghost', which is not defined"),
    (WORDS.replace('    className: "org.apache.storm.testing.TestWordCounter"',
                   '    className: "org.apache.storm.testing.TestWordCounter"\n    parallelism: 0'),
     r"component 'bolt-1': 'parallelism' must be a positive integer"),
    (WORDS.replace('    className: "org.apache.storm.testing.TestWordCounter"',
                   '    className: "org.apache.storm.testing.TestWordCounter"\n    properties:\n'
                   '      - name: "a"\n        value: 1\n        ref: "b"'),
     r"component 'bolt-1': property 'a' has both 'value' and 'ref'"),
])
def test_every_structural_fault_is_a_flux_error_naming_the_file(write, text: str, message: str) -> None:
    path = write("t.yaml", text)
    with pytest.raises(FluxError, match=message) as err:
        parse_file(path)
    assert str(err.value).startswith(str(path))


def test_a_fault_in_an_included_file_names_that_file(write) -> None:
    write("inc.yaml", 'bolts:\n  - id: "b"\n    className: "x.Y"\n    colour: red\n')
    top = write("top.yaml", WORDS + 'includes:\n  - file: "inc.yaml"\n')
    with pytest.raises(FluxError, match=r"inc\.yaml: component 'b': unknown key 'colour'"):
        parse_file(top)


def test_a_resource_is_read_from_a_wheel_on_the_import_path(tmp_path: Path, monkeypatch) -> None:
    import zipfile

    wheel = tmp_path / "app-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("topologies/words.yaml", WORDS)
    monkeypatch.setattr("sys.path", [str(tmp_path / "empty"), str(wheel)])
    td = parse_resource("/topologies/words.yaml")
    assert td.name == "t" and td.source == "resource /topologies/words.yaml"
    with pytest.raises(FluxError, match=r"resource /topologies/none\.yaml: not found on the import path"):
        parse_resource("/topologies/none.yaml")
