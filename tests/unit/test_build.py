"""The build: which modules are compiled, the stale-module guard, and setup.py's decision to compile."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest
from click.testing import CliRunner

from storm_py import build
from storm_py.cli.main import cli
from storm_py.errors import StaleBuildError

REPO = Path(__file__).resolve().parents[2]
SUFFIX = EXTENSION_SUFFIXES[0]


def _tree(tmp_path: Path, module: str = "storm_py.runtime.acker") -> tuple[Path, Path, Path]:
    """A package directory holding one hot module's source and a (fake) compiled extension of it."""
    root = tmp_path / "storm_py"
    py = build.source_path(module, root)
    py.parent.mkdir(parents=True)
    py.write_text("X = 1\n")
    ext = py.with_name(py.stem + SUFFIX)
    ext.write_bytes(b"\x7fELF")
    return root, py, ext


def _age(path: Path, seconds: float) -> None:
    st = path.stat()
    os.utime(path, (st.st_atime - seconds, st.st_mtime - seconds))


def test_an_extension_older_than_its_edited_source_is_stale(tmp_path):
    root, py, ext = _tree(tmp_path)
    _age(ext, 60)
    assert build.stale_modules(root) == [(py, ext)]


def test_an_extension_newer_than_its_source_is_not_stale(tmp_path):
    root, py, _ = _tree(tmp_path)
    _age(py, 60)
    assert build.stale_modules(root) == []


def test_a_source_unpacked_after_its_extension_is_fine_while_it_has_the_recorded_hash(tmp_path):
    root, py, ext = _tree(tmp_path)
    _age(ext, 60)
    (root / build.MANIFEST).write_text(json.dumps({"storm_py.runtime.acker": build.source_hash(py)}))
    assert build.stale_modules(root) == []
    py.write_text("X = 2\n")  # then edited
    assert build.stale_modules(root) == [(py, ext)]


def test_importing_storm_py_refuses_a_stale_compiled_module(tmp_path):
    site = tmp_path / "site"
    shutil.copytree(REPO / "storm_py", site / "storm_py", ignore=shutil.ignore_patterns("__pycache__"))
    ext = site / "storm_py" / "runtime" / f"acker{SUFFIX}"
    ext.write_bytes(b"not really compiled")
    (site / "storm_py" / "runtime" / "acker.py").touch()  # edited after it was compiled
    _age(ext, 60)
    proc = subprocess.run([sys.executable, "-c", "import storm_py"], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(site)}, timeout=60, check=False)
    assert proc.returncode != 0
    assert "StaleBuildError" in proc.stderr and str(ext) in proc.stderr


def test_the_source_tree_runs_pure_python_unless_the_suite_runs_the_compiled_build():
    compiled = build.compiled_modules()
    if os.environ.get("STORM_PY_BUILD") == "compiled":  # set by scripts/test.sh for the compiled run
        assert compiled == list(build.HOT_MODULES), build.describe()
    else:
        assert compiled == [] and build.describe() == "pure Python"
    assert not list((REPO / "storm_py").rglob(f"*{SUFFIX}")), "compiled modules in the source tree"


def test_version_says_which_build_runs():
    result = CliRunner().invoke(cli, ["version"])
    assert result.exit_code == 0
    first, *rest = result.output.splitlines()
    assert first.startswith("storm_py ") and build.describe() in first
    assert rest == build.report()
    compiled = build.compiled_modules()
    assert rest[:len(compiled)] == [f"  compiled: {m}" for m in compiled]
    assert {line.strip() for line in rest[len(compiled) + 1:]} == set(build.HOT_MODULES) - set(compiled)


def test_version_works_without_the_kafka_extra_and_names_every_hot_module():
    """Kafka's hot modules are in a package that imports confluent_kafka; ``version`` must not import them."""
    run = ("import sys; sys.modules['confluent_kafka'] = None; sys.argv[0] = 'storm-py'; "  # None: not installed
           "from storm_py.cli.main import main; main()")
    proc = subprocess.run([sys.executable, "-c", run, "version"], cwd=REPO, capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    for module in build.HOT_MODULES:
        assert module in proc.stdout


def test_version_says_why_the_hot_modules_are_pure_when_the_build_recorded_it(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "_PACKAGE_DIR", tmp_path)
    assert build.pure_reason() == ""
    (tmp_path / build.NOTE).write_text("mypyc could not compile the hot modules: 1 type error(s)\n")
    monkeypatch.setattr(build, "compiled_modules", lambda: list(build.HOT_MODULES[:2]))
    lines = build.report()
    assert lines[:2] == [f"  compiled: {m}" for m in build.HOT_MODULES[:2]]
    assert lines[2] == "  pure Python (mypyc could not compile the hot modules: 1 type error(s)):"
    assert [line.strip() for line in lines[3:]] == list(build.HOT_MODULES[2:])


@pytest.fixture
def setup_py(monkeypatch):
    """setup.py as a module (its ``main`` runs only as ``__main__``), with a clean STORM_PY_COMPILE."""
    monkeypatch.delenv("STORM_PY_COMPILE", raising=False)
    spec = importlib.util.spec_from_file_location("storm_py_setup", REPO / "setup.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_setup_compiles_a_wheel_when_a_compiler_and_mypy_are_there(setup_py, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["setup.py", "bdist_wheel"])
    if setup_py.c_compiler() is None:
        pytest.fail("this machine has a C compiler (gcc); the test needs it")
    assert setup_py.decide("auto") == (True, "")


def test_setup_never_compiles_an_editable_install(setup_py, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["setup.py", "editable_wheel", "--dist-info-dir", "x"])
    assert setup_py.decide("auto") == (False, "editable install")
    with pytest.raises(SystemExit, match="cannot make an editable install"):
        setup_py.decide("on")


def test_setup_falls_back_to_pure_python_without_a_compiler_and_says_why(setup_py, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["setup.py", "bdist_wheel"])
    monkeypatch.setenv("CC", "/nonexistent/cc")
    compile_, reason = setup_py.decide("auto")
    assert not compile_ and "no C compiler" in reason
    with pytest.raises(SystemExit, match="no C compiler"):
        setup_py.decide("on")
    assert setup_py.decide("off") == (False, "STORM_PY_COMPILE=0")


def test_setup_falls_back_loudly_with_the_type_errors_and_fails_when_asked_to_compile(setup_py, monkeypatch,
                                                                                      tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hot.py").write_text("X: int = 'not an int'\n")
    monkeypatch.setattr(setup_py, "source_of", lambda module: Path(f"{module}.py"))
    extensions, reason = setup_py.compiled_extensions(["hot"], asked=False)
    assert extensions == [] and "1 type error(s)" in reason and "hot.py:1: error:" in reason
    notice = capsys.readouterr().err.splitlines()
    assert len(notice) >= 5 and "NOT compiled" in notice[1] and "hot.py:1: error:" in "\n".join(notice)
    with pytest.raises(SystemExit):
        setup_py.compiled_extensions(["hot"], asked=True)


def test_setup_compiles_exactly_the_hot_modules(setup_py, monkeypatch):
    assert setup_py.hot_modules() == list(build.HOT_MODULES)
    monkeypatch.setenv("STORM_PY_COMPILE_MODULES", "storm_py.api.tuple")
    assert setup_py.hot_modules() == ["storm_py.api.tuple"]
    monkeypatch.setenv("STORM_PY_COMPILE_MODULES", "storm_py.cli.main")
    with pytest.raises(SystemExit, match="outside HOT_MODULES"):
        setup_py.hot_modules()
    for module in build.HOT_MODULES:
        assert (REPO / setup_py.source_of(module)).is_file(), module


def test_a_stale_build_fails_the_import_naming_the_extension_and_the_fix(tmp_path, monkeypatch):
    """What `import storm_py` raises over a stale build is an import failure (`except ImportError` around an
    import sees it) that names the stale extension and how to fix it; once the source is older, nothing is raised."""
    root, py, ext = _tree(tmp_path)
    _age(ext, 60)
    scan = build.stale_modules
    monkeypatch.setattr(build, "stale_modules", lambda: scan(root))
    try:
        build.refuse_stale()
    except ImportError as err:
        caught: ImportError = err
    else:
        pytest.fail("a stale build imported")
    assert isinstance(caught, StaleBuildError)
    assert str(ext) in str(caught) and "pip install ." in str(caught)
    _age(py, 120)  # the source is older than its extension again
    build.refuse_stale()
