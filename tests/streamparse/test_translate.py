"""A streamparse project's Topology read and translated without running it: spec options, groupings, serializer,
options precedence, refusals and bad project folders."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from storm_py.api.components import CustomStreamGrouping
from storm_py.api.topology import ALL, CUSTOM, DIRECT, FIELDS, GLOBAL, StormTopology
from storm_py.cli.main import cli
from storm_py.cli.streamparse import ENTRY_MODULE, stage_package
from storm_py.errors import TopologyLoadError
from storm_py.streamparse import build_topology, find_project
from storm_py.streamparse.translate import SparseShellBolt, load_topology_class, topology_conf

SPECS_TOPOLOGY = '''
import pickle

from streamparse import Grouping, JavaBolt, ShellBolt, Stream, Topology

from bolts.wordcount import WordCountBolt
from spouts.words import WordSpout

from tests.streamparse.test_translate import FirstTask


class Specs(Topology):
    config = {"topology.max.spout.pending": 7, "from.topology": "topology"}
    words = WordSpout.spec(name="the-words", par=3, config={"x.y": 1})
    split = ShellBolt.spec(command="node", script="splitsentence.js  --fast", inputs=[words],
                           outputs=[Stream(["word"]), Stream(["word"], name="odd", direct=True)], par=2)
    direct = WordCountBolt.spec(inputs={split["odd"]: Grouping.DIRECT})
    everyone = WordCountBolt.spec(inputs={split: Grouping.ALL, words: Grouping.GLOBAL})
    custom = WordCountBolt.spec(inputs={words: Grouping.custom_object("tests.streamparse.test_translate.FirstTask",
                                                                      [2])})
    pickled = WordCountBolt.spec(inputs={words: Grouping.custom_serialized(pickle.dumps(FirstTask(1)))})
'''


class FirstTask(CustomStreamGrouping):
    """Every tuple to the first ``n`` target tasks."""

    def __init__(self, n: int) -> None:
        self.n = n

    def prepare(self, context: Any, stream: Any, target_tasks: list[int]) -> None:
        self.targets = target_tasks[: self.n]

    def choose_tasks(self, task_id: int, values: list[Any]) -> list[int]:
        return self.targets


def _copy(project: Path, tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(project, root)
    return root


def _translate(root: Path, name: str | None = None) -> StormTopology:
    project = find_project(root, name)
    cls = load_topology_class(project.topology_file, project.src)
    return build_topology(cls, project.src, project.serializer)


def test_the_quickstart_wordcount_becomes_streamparse_run_processes_in_src(wordcount_project: Path) -> None:
    project = find_project(wordcount_project)
    assert project.name == "wordcount" and project.requirements == wordcount_project / "virtualenvs/wordcount.txt"
    assert any("envs" in n for n in project.notices) and any("fabfile" in n for n in project.notices)
    topology = _translate(wordcount_project)
    spout, bolt = topology.spouts["word_spout"], topology.bolts["count_bolt"]
    assert spout.obj.command == ["streamparse_run", "-s", "json", "spouts.words.WordSpout"]
    assert bolt.obj.command == ["streamparse_run", "-s", "json", "bolts.wordcount.WordCountBolt"]
    assert bolt.obj.working_dir == str(wordcount_project / "src")
    assert bolt.parallelism == 2
    grouping = bolt.inputs[("word_spout", "default")]
    assert grouping.kind == FIELDS and list(grouping.fields or []) == ["word"]
    assert list(bolt.streams["default"][0]) == ["word", "count"]


def test_every_spec_option_direct_streams_and_python_custom_groupings(wordcount_project: Path,
                                                                      tmp_path: Path) -> None:
    root = _copy(wordcount_project, tmp_path)
    (root / "topologies" / "specs.py").write_text(SPECS_TOPOLOGY)
    topology = _translate(root, "specs")
    words = topology.spouts["the-words"]
    assert words.parallelism == 3 and words.conf["x.y"] == 1
    split = topology.bolts["split"]
    assert isinstance(split.obj, SparseShellBolt)
    assert split.obj.command == ["node", "-s", "json", "splitsentence.js", "--fast"]
    assert split.streams["odd"][1] is True and split.streams["default"][1] is False
    assert split.parallelism == 2
    assert topology.bolts["direct"].inputs[("split", "odd")].kind == DIRECT
    everyone = topology.bolts["everyone"].inputs
    assert everyone[("split", "default")].kind == ALL and everyone[("the-words", "default")].kind == GLOBAL
    for cid, n in (("custom", 2), ("pickled", 1)):
        grouping = topology.bolts[cid].inputs[("the-words", "default")]
        assert grouping.kind == CUSTOM and isinstance(grouping.custom, FirstTask) and grouping.custom.n == n


def test_options_config_json_then_topology_config_then_dash_o(wordcount_project: Path, tmp_path: Path) -> None:
    root = _copy(wordcount_project, tmp_path)
    (root / "topologies" / "specs.py").write_text(SPECS_TOPOLOGY)
    project = find_project(root, "specs")
    project.config["options"] = {"topology.max.spout.pending": 1, "from.json": "json", "from.topology": "json"}
    cls = load_topology_class(project.topology_file, project.src)
    conf = topology_conf(cls, project.options(), "msgpack", {"from.json": "cli"})
    assert conf["topology.multilang.serializer"] == "msgpack"
    assert conf["topology.max.spout.pending"] == 7 and conf["from.topology"] == "topology"
    assert conf["from.json"] == "cli"


def _cli(*args: str, cwd: Path) -> Result:
    return CliRunner().invoke(cli, ["streamparse", *args, "--project", str(cwd)])


def test_a_java_bolt_is_refused_before_anything_runs(wordcount_project: Path, tmp_path: Path) -> None:
    root = _copy(wordcount_project, tmp_path)
    (root / "topologies" / "wordcount.py").write_text(
        (root / "topologies" / "wordcount.py").read_text()
        + '    sink = JavaBolt.spec(full_class_name="org.apache.storm.redis.bolt.RedisStoreBolt", args_list=[],'
          ' inputs=[count_bolt])\n'
    )
    (root / "topologies" / "wordcount.py").write_text(
        "from streamparse import JavaBolt\n" + (root / "topologies" / "wordcount.py").read_text())
    result = _cli("run", "-t", "1", cwd=root)
    assert result.exit_code != 0
    assert "'sink'" in result.output and "org.apache.storm.redis.bolt.RedisStoreBolt" in result.output
    assert "running" not in result.output


@pytest.mark.parametrize("breakage, named", [
    ("config.json", "no config.json"),
    ("topologies", "no topology folder topologies/"),
    ("src", "no src/ folder"),
    ("two-topologies", "more than one topology"),
])
def test_a_bad_project_folder_names_what_is_missing(wordcount_project: Path, tmp_path: Path, breakage: str,
                                                    named: str) -> None:
    root = _copy(wordcount_project, tmp_path)
    if breakage == "two-topologies":
        shutil.copy(root / "topologies" / "wordcount.py", root / "topologies" / "other.py")
    elif (root / breakage).is_dir():
        shutil.rmtree(root / breakage)
    else:
        (root / breakage).unlink()
    with pytest.raises(TopologyLoadError, match=named):
        find_project(root)


def test_unknown_topology_name_and_bad_folder_through_the_cli(wordcount_project: Path, tmp_path: Path) -> None:
    result = _cli("run", "nosuch", "-t", "1", cwd=wordcount_project)
    assert result.exit_code != 0 and "no topology definition nosuch.py" in result.output
    result = _cli("submit", cwd=tmp_path)
    assert result.exit_code != 0 and "no config.json" in result.output


def test_the_submitted_package_builds_the_topology_from_its_own_files(wordcount_project: Path,
                                                                      tmp_path: Path) -> None:
    project = find_project(wordcount_project)
    pkg = stage_package(project, "json", tmp_path)
    assert (pkg / "requirements.txt").read_text() == (wordcount_project / "virtualenvs/wordcount.txt").read_text()
    assert (pkg / "src" / "bolts" / "wordcount.py").is_file()
    namespace: dict[str, Any] = {"__file__": str(pkg / f"{ENTRY_MODULE}.py")}
    exec(compile((pkg / f"{ENTRY_MODULE}.py").read_text(), str(pkg / f"{ENTRY_MODULE}.py"), "exec"), namespace)
    topology = namespace["topology"]()
    assert topology.bolts["count_bolt"].obj.working_dir == str((pkg / "src").resolve())
    assert topology.spouts["word_spout"].obj.command[:3] == ["streamparse_run", "-s", "json"]


def test_dash_o_ackers_and_workers_reach_the_topology_conf(wordcount_project: Path) -> None:
    from storm_py.cli.streamparse import _prepare

    project, _cls, conf = _prepare(str(wordcount_project), None, ("topology.debug=true", "my.list=[1, 2]"), 0, 3)
    assert project.name == "wordcount"
    assert conf["topology.debug"] is True and conf["my.list"] == [1, 2]
    assert conf["topology.acker.executors"] == 0 and conf["topology.workers"] == 3
    assert conf["topology.multilang.serializer"] == "json"
