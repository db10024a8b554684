"""This module owns the node health check: the scripts in ``storm.health.check.dir`` and what they decide.

Every executable file in the directory runs in turn (sorted by name) with ``storm.health.check.timeout.ms`` to
finish.  A script fails the node when it exits non-zero or prints a line starting with ``ERROR``; a script that
runs out of time fails it only when ``storm.health.check.fail.on.timeouts`` is on (Storm's rules).  A missing or
empty directory passes.  The supervisor runs the check every round: while it fails the supervisor offers no
slots, so nimbus schedules nothing on it (and moves what it ran); a passing check brings its slots back.
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from storm_py.config.keys import setting

log = logging.getLogger(__name__)

#: Characters of a failing script's output kept in the reason.
REASON_CHARS = 200


@dataclass(frozen=True)
class HealthReport:
    """The outcome of one check: ``failures`` names each failing script and why (empty: healthy)."""

    scripts: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        """Whether every script passed."""
        return not self.failures


def health_check_dir(conf: Mapping[str, Any]) -> Path:
    """The directory of the check scripts."""
    return Path(str(setting(conf, "storm.health.check.dir")))


def judge(name: str, code: int | None, output: str, fail_on_timeout: bool) -> str | None:
    """Why one script's run fails the node (None: it passed); ``code`` None means it ran out of time."""
    if code is None:
        return f"{name} timed out" if fail_on_timeout else None
    errors = [line for line in output.splitlines() if line.startswith("ERROR")]
    if errors:
        return f"{name}: {errors[0][:REASON_CHARS]}"
    if code != 0:
        return f"{name} exited with {code}"
    return None


def run_health_checks(conf: Mapping[str, Any]) -> HealthReport:
    """Run every script of ``storm.health.check.dir`` and judge the node."""
    root = health_check_dir(conf)
    timeout = float(setting(conf, "storm.health.check.timeout.ms")) / 1000.0
    fail_on_timeout = bool(setting(conf, "storm.health.check.fail.on.timeouts"))
    if not root.is_dir():
        return HealthReport()
    scripts = sorted(p for p in root.iterdir() if p.is_file() and os.access(p, os.X_OK))
    failures: list[str] = []
    for script in scripts:
        try:
            proc = subprocess.run([str(script)], capture_output=True, text=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL, cwd=root, check=False, errors="replace")
            code: int | None = proc.returncode
            output = proc.stdout
        except subprocess.TimeoutExpired:
            code, output = None, ""
        except OSError as err:
            code, output = 127, f"ERROR cannot run: {err.strerror}"
        reason = judge(script.name, code, output, fail_on_timeout)
        if reason is not None:
            failures.append(reason)
    return HealthReport([p.name for p in scripts], failures)
