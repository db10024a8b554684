"""This module owns a supervisor's environment cache on disk: one virtualenv per requirement set under
``<storm.local.dir>/supervisor/envs/<set id>``, built offline from a topology's wheelhouse and removed when unused.

The decisions live in :mod:`storm_py.deps.envcache`; here are the ``venv`` and ``pip`` calls.  An environment is
built in place (scripts keep their paths) and marked ready last, so a half-built one (a supervisor killed during
the build) is rebuilt.  storm_py is linked, not copied: a ``.pth`` file puts the supervisor's storm_py first and
then adds the supervisor's site-packages, after the environment's own, so the topology's wheels win.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Callable, Collection
from pathlib import Path

from storm_py.deps.envcache import BuildRecord, EnvLedger, set_id
from storm_py.deps.wheelhouse import WHEELHOUSE, pip_reason, wheel_digests
from storm_py.errors import DependencyError, StormPyError

log = logging.getLogger(__name__)

#: Written last into a built environment.
READY = ".ready"
#: The link to the supervisor's installation, in the environment's site-packages.
LINK_PTH = "_storm_py_supervisor.pth"


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


def build(env: Path, wheels: Path, timeout: float | None = None) -> None:
    """Build the virtualenv ``env`` from the wheels in ``wheels``, offline.

    Raises:
        DependencyError: venv or pip failed (pip's reason quoted) or ran over ``timeout`` seconds.
    """
    shutil.rmtree(env, ignore_errors=True)
    env.parent.mkdir(parents=True, exist_ok=True)
    files = [str(w) for w in sorted(wheels.glob("*.whl"))]
    steps = [
        [sys.executable, "-m", "venv", "--without-pip", str(env)],
        [sys.executable, "-m", "pip", "--python", str(env_python(env)), "install", "--no-index", "--no-cache-dir",
         "--disable-pip-version-check", "--no-input", "--find-links", str(wheels), *files],
    ]
    pip_env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_CONFIG_FILE": os.devnull}
    pip_env.pop("PYTHONPATH", None)
    for i, cmd in enumerate(steps):
        try:
            proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout, env=pip_env,
                                  stdin=subprocess.DEVNULL)
        except (subprocess.TimeoutExpired, OSError) as err:
            shutil.rmtree(env, ignore_errors=True)
            raise DependencyError(f"building the environment {env.name} failed: {err}", env=env.name) from err
        if proc.returncode != 0:
            shutil.rmtree(env, ignore_errors=True)
            raise DependencyError(
                f"building the environment {env.name} failed: {pip_reason(proc.stderr, proc.stdout)}", env=env.name
            )
        if i == 0:
            purelib = subprocess.run(
                [str(env_python(env)), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                capture_output=True, text=True, check=False, env=pip_env,
            ).stdout.strip()
            (Path(purelib) / LINK_PTH).write_text(storm_py_link(), encoding="utf-8")
    (env / READY).write_text(" ".join(Path(f).name for f in files) + "\n", encoding="utf-8")


class EnvCache:
    """The environments of one supervisor (see the module docstring).

    Builds run on a thread of their own (``background``), so the supervisor keeps heartbeating while pip works;
    ``on_built`` is called when one ends (the supervisor syncs again at once).

    Args:
        root: where environments live (``<storm.local.dir>/supervisor/envs``).
        cleanup_secs: ``supervisor.env.cleanup.secs``.
        build_timeout: ``supervisor.env.build.timeout.secs``.
    """

    def __init__(self, root: Path, cleanup_secs: float, build_timeout: float | None = None,
                 background: bool = True, on_built: Callable[[], None] | None = None) -> None:
        self.root = root
        self.build_timeout = build_timeout
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
            return env_python(env)
        if not building:
            log.info("building environment %s for %s from %d wheels", env_id, topology_id, len(digests))
            if not self.background:
                self._build(env_id, wheels, topology_id)
                return self.python_for(topology_id, code_dir)
            thread = threading.Thread(target=self._build, args=(env_id, wheels, topology_id),
                                      name=f"env-build-{env_id}", daemon=True)
            with self._lock:
                self._building[env_id] = thread
            thread.start()
        raise EnvBuilding(f"building the environment {env_id} of {topology_id}", topology=topology_id, env=env_id)

    def _build(self, env_id: str, wheels: Path, topology_id: str) -> None:
        """Build one environment (on its own thread when ``background``); a failure is kept on its record."""
        try:
            build(self.root / env_id, wheels, self.build_timeout)
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
            needed |= set(self._building)  # never removed under a running build
        removed = self.ledger.expired(needed, self.present(), now)
        for env_id in removed:
            shutil.rmtree(self.root / env_id, ignore_errors=True)
            log.info("removed environment %s: no topology used it for %.0fs", env_id, self.ledger.cleanup_secs)
        return removed
