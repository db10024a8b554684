"""Topology packages: directories are zipped (without caches), archives are checked, unpacking is safe."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from storm_py.errors import TopologyLoadError
from storm_py.nimbus.topology_check import skeleton_of, topology_from_skeleton
from storm_py.packaging.package import check_archive, read_package, unpack


def test_a_directory_is_zipped_without_caches_and_unpacked_whole(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "pkg" / "__pycache__").mkdir(parents=True)
    (src / "pkg" / "__init__.py").write_text("X = 1\n")
    (src / "pkg" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    (src / ".git").mkdir()
    (src / ".git" / "HEAD").write_text("ref\n")
    data, name = read_package(src)
    assert name == "src.zip"
    assert zipfile.ZipFile(io.BytesIO(data)).namelist() == ["pkg/__init__.py"]
    unpack(data, tmp_path / "out")
    assert (tmp_path / "out" / "pkg" / "__init__.py").read_text() == "X = 1\n"
    unpack(data, tmp_path / "out")  # again: replaced, not merged
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["pkg"]


def zip_of(**members: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, text in members.items():
            zf.writestr(name.replace("__", "/"), text)
    return buf.getvalue()


@pytest.mark.parametrize("member", ["../evil.py", "/etc/evil.py", "a/../../evil.py"])
def test_archives_with_unsafe_paths_are_refused(tmp_path: Path, member: str) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(member, "x")
    with pytest.raises(TopologyLoadError, match="unsafe path"):
        check_archive(buf.getvalue())
    with pytest.raises(TopologyLoadError):
        unpack(buf.getvalue(), tmp_path / "out")
    assert not (tmp_path / "evil.py").exists()


def test_a_non_zip_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "t.whl"
    f.write_bytes(b"hello")
    with pytest.raises(TopologyLoadError, match="not a wheel or zip archive"):
        read_package(f)


def test_a_skeleton_keeps_the_structure_without_the_objects() -> None:
    from examples.word_count import build

    topology = build({"wordcount.split.parallelism": 3})
    skeleton = topology_from_skeleton(skeleton_of(topology))
    assert set(skeleton.spouts) == {"spout"} and set(skeleton.bolts) == {"split", "count"}
    assert skeleton.bolts["split"].parallelism == 3 and skeleton.bolts["split"].obj is None
    assert skeleton.bolts["count"].inputs[("split", "default")].fields.to_list() == ["word"]
    assert skeleton.spouts["spout"].streams["default"][0].to_list() == ["sentence"]
