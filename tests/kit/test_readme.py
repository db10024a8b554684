"""The README's newcomer path: two quick-start commands, and the wheel template builds and validates."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

from storm_py.nimbus.topology_check import check_package

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = README.index(f"## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end if end > 0 else None]


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


def test_quick_start_is_exactly_the_demo_and_the_full_suite():
    (block,) = _blocks(_section("Quick start"), "sh")
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]
    assert commands == ["./scripts/demo.sh", "./scripts/test.sh"]
    for script in commands:
        assert (REPO / script).stat().st_mode & 0o111


def test_the_wheel_template_builds_a_wheel_nimbus_accepts(tmp_path):
    """Build the README's template project with `python -m build` and validate it as nimbus does at submit."""
    section = _section("Packaging a topology as a wheel")
    (pyproject,) = _blocks(section, "toml")
    (module,) = _blocks(section, "python")
    project = tmp_path / "my-topology"
    (project / "my_topology").mkdir(parents=True)
    (project / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    (project / "my_topology" / "__init__.py").write_text("", encoding="utf-8")
    (project / "my_topology" / "topology.py").write_text(module, encoding="utf-8")
    (project / "tests").mkdir()
    (project / "tests" / "test_it.py").write_text("def test_x():\n    pass\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", "dist", "."],
                          cwd=project, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wheel = project / "dist" / "my_topology-0.1-py3-none-any.whl"
    submit = re.search(r"^storm-py submit (\S+) (\S+)", section, flags=re.MULTILINE)
    assert submit and submit.group(1) == f"dist/{wheel.name}"
    with zipfile.ZipFile(wheel) as zf:
        top = {name.split("/")[0] for name in zf.namelist()}
    assert top == {"my_topology", "my_topology-0.1.dist-info"}  # no storm_py, no tests, no build outputs
    skeleton = check_package(wheel, submit.group(2), {"topology.workers": 1})
    assert set(skeleton.spouts) == {"words"} and set(skeleton.bolts) == {"count"}
