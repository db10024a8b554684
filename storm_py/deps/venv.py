"""This module owns a supervisor's environment cache on disk: one virtualenv per requirement set under
``<storm.local.dir>/supervisor/envs/<set id>``, built offline from a topology's wheelhouse and removed when unused.

The decisions live in :mod:`storm_py.deps.envcache`; here are the ``venv`` and ``pip`` calls.  The build runs no
code of the topology's and reaches no network: pip installs, with ``--no-deps --only-binary :all: --isolated
--no-index``, exactly the listed wheels, copied into a folder of their own and checked against their digests
and the unpack limits first (a wheel's ``Requires-Dist``, even a direct URL, is never followed; a source
package is never built).  An environment is built in place (scripts keep their paths), checked, marked ready
last (a half-built one is rebuilt) and made read-only; before each reuse it is checked again against its
wheels (:mod:`storm_py.deps.envcheck`) and rebuilt when anything differs.  storm_py is linked, not copied: a
``.pth`` file puts the supervisor's storm_py first and then adds the supervisor's site-packages, after the
environment's own, so the topology's wheels win.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import threading
import zipfile
from collections.abc import Callable, Collection, Mapping
from pathlib import Path

from storm_py.deps.envcache import BuildRecord, EnvLedger, set_id
from storm_py.deps.envcheck import Expected, expected_of, problem, site_packages
from storm_py.deps.wheelhouse import WHEELHOUSE, pip_reason, wheel_digests
from storm_py.errors import DependencyError, StormPyError, TopologyLoadError
from storm_py.packaging.package import UnpackLimits, check_archive

log = logging.getLogger(__name__)

#: Written last into a built environment.
READY = ".ready"
#: The link to the supervisor's installation, in the environment's site-packages.
LINK_PTH = "_storm_py_supervisor.pth"
#: The folder beside a topology's unpacked code where its workers in an environment write their bytecode.
PYCACHE = "pycache"
#: The folder (beside the environments) the wheels of a build are copied into, with the environment's id.
STAGING_PREFIX = ".wheels-"
#: What pip is told on every build: only the given wheel files, nothing followed, fetched, built or configured.
PIP_OFFLINE = ("--no-index", "--no-deps", "--only-binary", ":all:", "--isolated", "--no-compile", "--no-cache-dir",
               "--disable-pip-version-check", "--no-input")


class EnvBuilding(StormPyError):
    """A topology's environment is being built; its workers start when it is ready."""

    code = "env_building"


def storm_py_link() -> str:
    """The ``.pth`` text that makes the supervisor's storm_py and its dependencies importable in an environment."""
    home = Path(__file__).resolve().parents[2]  # the folder holding the storm_py package
    sites = list(dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]))
    lines = [str(home)] + [f"import site; site.addsitedir({s!r})" for s in sites]
    return "".join(f"{line}\n" for line in lines)


def env_python(env: Path) -> Path:
    """An environment's interpreter."""
    return env / "bin" / "python"


def remove_tree(path: Path) -> None:
    """Remove a folder, read-only ones within it too (a built environment is read-only); nothing if absent."""
    if path.is_dir() and not path.is_symlink():
        for dirpath, _, _ in os.walk(path):
            os.chmod(dirpath, stat.S_IRWXU)
    shutil.rmtree(path, ignore_errors=True)


def make_read_only(env: Path) -> None:
    """Take the write bits off every file and folder of a built environment (links left alone)."""
    for dirpath, dirnames, filenames in os.walk(env, topdown=False):
        for name in filenames + dirnames:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) & ~0o222)
    os.chmod(env, stat.S_IMODE(os.lstat(env).st_mode) & ~0o222)


def stage(wheels: Path, digests: Mapping[str, str], staging: Path, limits: UnpackLimits) -> list[Path]:
    """Copy the listed wheels into the empty folder ``staging``, each checked against its digest and ``limits``.

    Raises:
        DependencyError: a wheel is missing, changed since it was listed, or unpacks beyond ``limits``.
    """
    remove_tree(staging)
    staging.mkdir(parents=True)
    out = []
    for name, digest in sorted(digests.items()):
        try:
            body = (wheels / name).read_bytes()
        except OSError as err:
            raise DependencyError(f"wheel {name} cannot be read: {err}", wheel=name) from err
        if hashlib.sha256(body).hexdigest() != digest:
            raise DependencyError(f"wheel {name} changed while the environment was built", wheel=name)
        try:
            check_archive(body, f"wheel {name}", limits)
        except TopologyLoadError as err:
            raise DependencyError(err.message, wheel=name) from err
        (staging / name).write_bytes(body)
        out.append(staging / name)
    return out


def build(env: Path, wheels: Path, timeout: float | None = None, limits: UnpackLimits | None = None,
          digests: Mapping[str, str] | None = None) -> Expected:
    """Build the virtualenv ``env`` from the listed wheels of ``wheels`` (``digests``, default: the folder's
    list), offline and without running their code; what it holds, checked.

    Raises:
        DependencyError: a wheel is refused, venv or pip failed (pip's reason quoted) or ran over ``timeout``
            seconds, or the built environment is not what its wheels install.
    """
    limits = limits if limits is not None else UnpackLimits.from_conf({})
    digests = digests if digests is not None else wheel_digests(wheels)
    remove_tree(env)
    env.parent.mkdir(parents=True, exist_ok=True)
    staging = env.parent / f"{STAGING_PREFIX}{env.name}"
    try:
        files = stage(wheels, digests, staging, limits)
        expected = expected_of(files)
        _install(env, staging, files, timeout)
        link = {LINK_PTH: storm_py_link()}
        for site in site_packages(env)[:1]:
            (site / LINK_PTH).write_text(link[LINK_PTH], encoding="utf-8")
        found = problem(env, expected, link)
        if found is not None:
            raise DependencyError(f"building the environment {env.name} failed: it cannot be checked: {found}",
                                  env=env.name)
    except (DependencyError, OSError, zipfile.BadZipFile) as err:
        remove_tree(env)
        if isinstance(err, DependencyError):
            raise
        raise DependencyError(f"building the environment {env.name} failed: {err}", env=env.name) from err
    finally:
        remove_tree(staging)
    (env / READY).write_text(" ".join(f.name for f in files) + "\n", encoding="utf-8")
    make_read_only(env)
    return expected


def _install(env: Path, staging: Path, files: list[Path], timeout: float | None) -> None:
    """``venv`` then ``pip install`` of exactly ``files``, run in ``staging`` with no configuration of pip's."""
    steps = [
        [sys.executable, "-m", "venv", "--without-pip", str(env)],
        [sys.executable, "-m", "pip", "--python", str(env_python(env)), "install", *PIP_OFFLINE,
         *(str(f) for f in files)],
    ]
    pip_env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "PYTHON"))}
    pip_env["PIP_CONFIG_FILE"] = os.devnull
    for cmd in steps:
        try:
            proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout, env=pip_env,
                                  stdin=subprocess.DEVNULL, cwd=staging)
        except (subprocess.TimeoutExpired, OSError) as err:
            raise DependencyError(f"building the environment {env.name} failed: {err}", env=env.name) from err
        if proc.returncode != 0:
            raise DependencyError(
                f"building the environment {env.name} failed: {pip_reason(proc.stderr, proc.stdout)}", env=env.name
            )


class EnvCache:
    """The environments of one supervisor (see the module docstring).

    Builds run on a thread of their own (``background``), so the supervisor keeps heartbeating while pip works;
    ``on_built`` is called when one ends (the supervisor syncs again at once).

    Args:
        root: where environments live (``<storm.local.dir>/supervisor/envs``).
        cleanup_secs: ``supervisor.env.cleanup.secs``.
        build_timeout: ``supervisor.env.build.timeout.secs``.
        limits: how far each wheel may unpack (the ``storm.package.max.*`` keys; default: their defaults).
    """

    def __init__(self, root: Path, cleanup_secs: float, build_timeout: float | None = None,
                 background: bool = True, on_built: Callable[[], None] | None = None,
                 limits: UnpackLimits | None = None) -> None:
        self.root = root
        self.build_timeout = build_timeout
        self.limits = limits if limits is not None else UnpackLimits.from_conf({})
        self.expected: dict[str, Expected] = {}  # env id -> what its wheels install
        self.background = background
        self.on_built = on_built
        self.ledger = EnvLedger(cleanup_secs)
        self.envs: dict[str, str] = {}  # topology id -> env id
        self.builds: dict[str, BuildRecord] = {}
        self._lock = threading.Lock()
        self._building: dict[str, threading.Thread] = {}

    def python_for(self, topology_id: str, code_dir: Path) -> Path | None:
        """The interpreter of ``topology_id``'s environment (built now if needed); None when it has no wheelhouse.

        Raises:
            DependencyError: the environment cannot be built (a failed build is remembered, not retried).
            EnvBuilding: it is being built on a background thread.
        """
        wheels = code_dir / WHEELHOUSE
        digests = wheel_digests(wheels)
        if not digests:
            self.envs.pop(topology_id, None)
            return None
        env_id = set_id(digests)
        self.envs[topology_id] = env_id
        env = self.root / env_id
        with self._lock:
            record = self.builds.setdefault(env_id, BuildRecord())
            building = env_id in self._building
        if record.error is not None:
            raise DependencyError(record.error, topology=topology_id, env=env_id)
        if (env / READY).is_file() and not building:
            found = self._check(env_id, wheels, digests)
            if found is None:
                return env_python(env)
            log.warning("the environment %s of %s changed since its build (%s): rebuilding it", env_id,
                        topology_id, found)
            remove_tree(env)
        if not building:
            log.info("building environment %s for %s from %d wheels", env_id, topology_id, len(digests))
            if not self.background:
                self._build(env_id, wheels, topology_id, digests)
                return self.python_for(topology_id, code_dir)
            thread = threading.Thread(target=self._build, args=(env_id, wheels, topology_id, digests),
                                      name=f"env-build-{env_id}", daemon=True)
            with self._lock:
                self._building[env_id] = thread
            thread.start()
        raise EnvBuilding(f"building the environment {env_id} of {topology_id}", topology=topology_id, env=env_id)

    def _check(self, env_id: str, wheels: Path, digests: Mapping[str, str]) -> str | None:
        """What differs in a built environment from what its wheels install; None when nothing does."""
        expected = self.expected.get(env_id)
        if expected is None:  # built by an earlier run of the supervisor
            try:
                expected = expected_of(wheels / name for name in sorted(digests))
            except (OSError, zipfile.BadZipFile) as err:
                return f"its wheels cannot be read: {err}"
            self.expected[env_id] = expected
        try:
            return problem(self.root / env_id, expected, {LINK_PTH: storm_py_link()})
        except OSError as err:
            return f"it cannot be read: {err}"

    def _build(self, env_id: str, wheels: Path, topology_id: str, digests: Mapping[str, str]) -> None:
        """Build one environment (on its own thread when ``background``); a failure is kept on its record."""
        try:
            expected = build(self.root / env_id, wheels, self.build_timeout, limits=self.limits, digests=digests)
            with self._lock:
                self.expected[env_id] = expected
            log.info("built environment %s for %s", env_id, topology_id)
        except DependencyError as err:
            with self._lock:
                self.builds.setdefault(env_id, BuildRecord()).error = (
                    f"the topology's environment cannot be built: {err.message}")
            log.error("the environment %s of %s cannot be built: %s", env_id, topology_id, err.message)
        finally:
            with self._lock:
                self._building.pop(env_id, None)
            if self.on_built is not None:
                self.on_built()

    def present(self) -> list[str]:
        """The environment ids on disk."""
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and not p.name.startswith("."))

    def cleanup(self, live: Collection[str], now: float) -> list[str]:
        """Forget topologies not in ``live``; remove environments unused for the cleanup time; the ids removed."""
        for tid in [t for t in self.envs if t not in live]:
            del self.envs[tid]
        needed = set(self.envs.values())
        with self._lock:
            for env_id in [e for e in self.builds if e not in needed]:
                del self.builds[env_id]  # a failed build is tried again when a topology needs its set again
            for env_id in [e for e in self.expected if e not in needed]:
                del self.expected[env_id]
            needed |= set(self._building)  # never removed under a running build
        removed = self.ledger.expired(needed, self.present(), now)
        for env_id in removed:
            remove_tree(self.root / env_id)
            log.info("removed environment %s: no topology used it for %.0fs", env_id, self.ledger.cleanup_secs)
        return removed
