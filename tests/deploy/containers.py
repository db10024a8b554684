"""A container engine for the deployment tests: Docker where its daemon answers, else podman, with a compose
client talking to it (docker-compose through podman's Docker-compatible API socket).

Machines whose root lacks CAP_SYS_RESOURCE cannot let an OCI runtime set a container's resource limits; there
podman gets a runtime wrapper that drops ``process.rlimits`` from the bundle before calling runc, registered in a
containers.conf of our own passed by ``CONTAINERS_CONF`` (nothing under /etc changes).  Everything started here
(the API service, the wrapper's files) is removed by :meth:`Engine.close`.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from storm_py.clock import wait_until

CAP_SYS_RESOURCE = 24
RUNC = "/usr/sbin/runc"

WRAPPER = '''\
"""An OCI runtime: runc, with the resource limits taken out of the container's process (root here may not set them)."""
import json, os, sys

RUNC = {runc!r}


def strip(path, nested):
    try:
        with open(path, encoding="utf-8") as f:
            spec = json.load(f)
    except (OSError, ValueError):
        return
    process = spec.get("process", {{}}) if nested else spec
    if isinstance(process, dict) and process.pop("rlimits", None) is not None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(spec, f)


args = sys.argv[1:]


def value(*flags):
    for i, arg in enumerate(args):
        for flag in flags:
            if arg == flag and i + 1 < len(args):
                return args[i + 1]
            if arg.startswith(flag + "="):
                return arg.split("=", 1)[1]
    return None


if "create" in args or "run" in args:
    strip(os.path.join(value("--bundle", "-b") or os.getcwd(), "config.json"), True)
if "exec" in args and value("--process", "-p"):
    strip(value("--process", "-p"), False)
os.execv(RUNC, [RUNC, *args])
'''


def _has_capability(bit: int) -> bool:
    for line in Path("/proc/self/status").read_text(encoding="utf-8").splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> bit & 1)
    return False


def docker_answers() -> bool:
    docker = shutil.which("docker")
    return bool(docker) and subprocess.run([str(docker), "info"], capture_output=True, timeout=30,
                                           check=False).returncode == 0  # fmt: skip


def unavailable_reason() -> str | None:
    """None when Docker answers or podman is installed (with a compose client), else what is missing."""
    if not shutil.which("docker-compose") and not docker_answers():
        return "no compose client: ./scripts/bootstrap.sh --with-services installs docker-compose"
    if docker_answers() or shutil.which("podman"):
        return None
    return "neither a Docker daemon nor podman: ./scripts/bootstrap.sh --with-services installs podman"


@dataclass
class Engine:
    """The engine's command (``docker`` or ``podman``), the environment every call needs, the compose client."""

    command: str
    env: dict[str, str]
    compose: list[str]
    _dir: Path | None = None
    _service: subprocess.Popen[bytes] | None = None
    made_images: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return Path(self.command).name

    def run(self, *args: str, timeout: float = 120, check: bool = True,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
        proc = subprocess.run([self.command, *args], env=self.env, capture_output=True, text=True, timeout=timeout,
                              check=False, cwd=cwd)  # fmt: skip
        if check and proc.returncode != 0:
            raise AssertionError(f"{self.kind} {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        return proc

    def compose_run(self, project: str, files: Sequence[Path], *args: str, cwd: Path,
                    env: dict[str, str] | None = None, timeout: float = 600,
                    check: bool = True) -> subprocess.CompletedProcess[str]:  # fmt: skip
        command = [*self.compose, "-p", project, *(a for f in files for a in ("-f", str(f))), *args]
        proc = subprocess.run(command, env={**self.env, **(env or {})}, capture_output=True, text=True,
                              timeout=timeout, check=False, cwd=cwd)  # fmt: skip
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(command)} failed ({proc.returncode}):\n"
                                 f"{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")  # fmt: skip
        return proc

    def close(self) -> None:
        if self._service is not None and self._service.poll() is None:
            os.killpg(self._service.pid, signal.SIGTERM)
            try:
                self._service.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self._service.pid, signal.SIGKILL)
                self._service.wait()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)


def open_engine() -> Engine:
    """Docker when its daemon answers, else podman behind its API socket (see the module's docstring)."""
    if docker_answers():
        docker = str(shutil.which("docker"))
        if subprocess.run([docker, "compose", "version"], capture_output=True, check=False).returncode == 0:
            return Engine(docker, dict(os.environ), [docker, "compose"])
        return Engine(docker, dict(os.environ), [str(shutil.which("docker-compose"))])
    podman = shutil.which("podman")
    assert podman, "podman is not installed: ./scripts/bootstrap.sh --with-services installs it"
    work = Path(tempfile.mkdtemp(prefix="storm-py-podman-"))
    env = dict(os.environ)
    if not _has_capability(CAP_SYS_RESOURCE):
        wrapper = work / "runc-no-rlimits"
        wrapper.write_text(f"#!{sys.executable} -I\n" + WRAPPER.format(runc=RUNC), encoding="utf-8")
        wrapper.chmod(0o755)
        conf = work / "containers.conf"
        conf.write_text(
            '[engine]\nruntime = "runcnr"\nruntime_supports_json = ["crun", "runc", "runcnr"]\n'
            f'[engine.runtimes]\nruncnr = ["{wrapper}"]\n', encoding="utf-8",
        )  # fmt: skip
        env["CONTAINERS_CONF"] = str(conf)
    sock = work / "podman.sock"
    service = subprocess.Popen([podman, "system", "service", "--time=0", f"unix://{sock}"], env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)  # fmt: skip
    engine = Engine(podman, {**env, "DOCKER_HOST": f"unix://{sock}"}, [str(shutil.which("docker-compose"))],
                    work, service)  # fmt: skip
    try:
        wait_until(sock.exists, 30.0, interval=0.1, what="podman's API socket")
    except BaseException:
        engine.close()
        raise
    return engine
