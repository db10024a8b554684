"""Builds storm_py as pure Python, or with its hot modules (``storm_py/build.py``) compiled by mypyc.

Metadata lives in setup.cfg; this file only decides about compiling.  ``STORM_PY_COMPILE``:

* unset (auto): a wheel or a regular ``pip install .`` is compiled when a C compiler is found (mypy is then
  asked for as a build requirement); otherwise, or when mypyc fails, it is pure Python with a boxed notice naming
  the reason (``pip install -v`` shows it), and the package records that reason for ``storm-py version``;
* ``1``: compile, and fail when that is not possible;
* ``0``: pure Python.

The build environment has no extras and none of the install requirements (pip's build isolation), so mypyc's
type check treats their absent modules as ``Any`` (``[mypy-*] ignore_missing_imports`` in setup.cfg) and leaves
out the two strict warnings whose verdict depends on which of them are installed (``MYPYC_FLAGS``); the lint
itself is ``mypy --strict`` in a development environment that has them all.

An editable install (``pip install -e .``) is always pure Python: compiled modules placed in the source tree
would run instead of the ``.py`` files being edited (``storm_py.build.refuse_stale`` refuses those).
``STORM_PY_COMPILE_MODULES`` (comma-separated module names) narrows the list, e.g. to bisect a problem.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import io
import json
import os
import shlex
import shutil
import sys
import sysconfig
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
#: the build requirements of a compiled build: the mypy the code is checked with, and the stubs it needs
COMPILE_REQUIRES = ["mypy==2.4.1", "types-PyYAML"]
#: mypy flags of the build's type check: lint warnings that flip with which optional packages are installed
#: (an ignore a typed package needs is unused without it; a call into an absent package returns Any)
MYPYC_FLAGS = ["--no-warn-unused-ignores", "--no-warn-return-any"]
#: written into a pure build's package: why its hot modules were not compiled (``storm_py.build.NOTE``)
NOTE = "build-note.txt"
#: commands that produce installable files (the others only write metadata)
BUILDING = {"bdist_wheel", "build", "build_ext", "build_py", "install", "bdist", "editable_wheel", "develop"}


def notice(message: str) -> None:
    print(f"storm_py build: {message}", file=sys.stderr, flush=True)


def loud_notice(reason: str, details: str = "") -> None:
    """A boxed, several-line notice that this build falls back to pure Python, and why."""
    rule = "*" * 78
    lines = [rule, "storm_py build: the hot modules are NOT compiled; this build is pure Python (slower per tuple)",
             f"  reason: {reason}"]
    lines += [f"    {line}" for line in details.strip().splitlines()[:20]]
    lines += ["  STORM_PY_COMPILE=1 makes this an error; STORM_PY_COMPILE=0 asks for pure Python quietly.",
              "  `storm-py version` of this install names the reason too.", rule]
    print("\n".join(lines), file=sys.stderr, flush=True)


def hot_modules(narrowed: bool = True) -> list[str]:
    """``HOT_MODULES`` of storm_py/build.py, read without importing the package (its requirements may be absent),
    narrowed by ``STORM_PY_COMPILE_MODULES`` unless ``narrowed`` is false."""
    chosen = os.environ.get("STORM_PY_COMPILE_MODULES", "").strip() if narrowed else ""
    tree = ast.parse((HERE / "storm_py" / "build.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "HOT_MODULES" and node.value:
            modules = list(ast.literal_eval(node.value))
            if chosen:
                unknown = set(chosen.split(",")) - set(modules)
                if unknown:
                    sys.exit(f"storm_py build: STORM_PY_COMPILE_MODULES names modules outside HOT_MODULES: {unknown}")
                modules = [m for m in modules if m in chosen.split(",")]
            return modules
    sys.exit("storm_py build: storm_py/build.py defines no HOT_MODULES")


def source_of(module: str) -> Path:
    return Path(*module.split(".")).with_suffix(".py")


def c_compiler() -> str | None:
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    return shutil.which(shlex.split(cc)[0]) if cc.strip() else None


def compile_mode() -> str:
    """``auto``, ``on`` or ``off``, from ``STORM_PY_COMPILE``."""
    mode = os.environ.get("STORM_PY_COMPILE", "").strip().lower()
    if mode in ("1", "yes", "true", "on"):
        return "on"
    if mode in ("0", "no", "false", "off"):
        return "off"
    if mode in ("", "auto"):
        return "auto"
    sys.exit(f"storm_py build: STORM_PY_COMPILE must be 1, 0 or auto, not {mode!r}")


def decide(mode: str) -> tuple[bool, str]:
    """Whether to compile, and why not (printed when a build runs, and recorded in a pure build)."""
    asked = mode == "on"
    if mode == "off":
        return False, "STORM_PY_COMPILE=0"
    if "editable_wheel" in sys.argv or "develop" in sys.argv:
        if asked:
            sys.exit("storm_py build: STORM_PY_COMPILE=1 cannot make an editable install (compiled modules in the "
                     "source tree would shadow edits); build a wheel or run `pip install .`")
        return False, "editable install"
    if c_compiler() is None:
        if asked:
            sys.exit("storm_py build: STORM_PY_COMPILE=1 but no C compiler was found (set CC)")
        return False, "no C compiler found; install one, e.g. gcc, to compile the hot modules"
    try:
        import mypyc.build  # noqa: F401
    except ImportError:
        if asked:
            sys.exit("storm_py build: STORM_PY_COMPILE=1 but mypy (mypyc) is not installed in the build environment")
        return False, "mypy is not installed in the build environment; it provides mypyc"
    return True, ""


def compiled_extensions(modules: list[str], asked: bool) -> tuple[list[object], str]:
    """mypyc's extensions of ``modules``, or none and the reason (the type checker's messages included)."""
    from mypyc.build import mypycify

    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):  # mypy prints its errors, then raises SystemExit(1)
            return list(mypycify([*MYPYC_FLAGS, *map(str, map(source_of, modules))], opt_level="3",
                                 debug_level="0")), ""
    except (Exception, SystemExit) as exc:
        print(out.getvalue(), end="", flush=True)
        if asked:
            raise
        errors = [line for line in out.getvalue().splitlines() if ": error:" in line]
        reason = f"mypyc could not compile the hot modules ({exc!r})"
        if errors:
            reason = f"mypyc could not compile the hot modules: {len(errors)} type error(s), the first: {errors[0]}"
        loud_notice(reason, "\n".join(errors))
        return [], reason


class BuildPy(build_py):
    """Writes ``storm_py/compiled.json`` (module -> sha256 of the compiled source) beside compiled modules, and
    ``storm_py/build-note.txt`` (why) when hot modules stay pure Python."""

    compiled: list[str] = []
    pure_reason = ""

    def run(self) -> None:
        super().run()
        package = Path(self.build_lib) / "storm_py"
        package.mkdir(parents=True, exist_ok=True)
        for stale in (package / "compiled.json", package / NOTE):  # left by an earlier build in the same tree
            stale.unlink(missing_ok=True)
        if self.compiled:
            manifest = {m: hashlib.sha256((HERE / source_of(m)).read_bytes()).hexdigest() for m in self.compiled}
            (package / "compiled.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n",
                                                   encoding="utf-8")
        if self.pure_reason:
            (package / NOTE).write_text(self.pure_reason + "\n", encoding="utf-8")


class BuildExt(build_ext):
    """Never puts compiled modules into the source tree."""

    def run(self) -> None:
        if self.inplace and self.extensions:
            sys.exit("storm_py build: compiled modules are never built in place (they would shadow the .py files); "
                     "build a wheel or run `pip install .`")
        super().run()


def main() -> None:
    mode = compile_mode()
    ext_modules: list[object] = []
    setup_requires: list[str] = []
    if any(arg in BUILDING for arg in sys.argv[1:]):
        compile_, reason = decide(mode)
        if compile_:
            modules = hot_modules()
            ext_modules, reason = compiled_extensions(modules, asked=mode == "on")
            if ext_modules:
                BuildPy.compiled = modules
                notice(f"compiling {len(modules)} hot modules with mypyc")
                if len(modules) < len(hot_modules(narrowed=False)):
                    BuildPy.pure_reason = "STORM_PY_COMPILE_MODULES named the others"
        elif mode == "off" or "editable" in reason:
            notice(f"pure Python ({reason})")  # asked for, or needed
        else:
            loud_notice(reason)
        if not ext_modules:
            BuildPy.pure_reason = reason
    elif "egg_info" in sys.argv and mode != "off" and c_compiler() is not None:
        # the build backend asks for build requirements this way: a compiled build needs mypy
        setup_requires = COMPILE_REQUIRES
    setup(ext_modules=ext_modules, setup_requires=setup_requires, cmdclass={"build_py": BuildPy, "build_ext": BuildExt})


if __name__ == "__main__":  # setuptools runs this file as __main__; tests import it
    main()
