"""The supervisor's environment build trusts nothing but the listed wheels: it reaches no network (a wheel's
direct-URL dependency is not fetched from a local HTTP server watching for it), runs no code (a source package
beside the wheels, with a build backend of its own, is never built), and a shared environment changed by one
topology's workers (a module edited, a ``.pth`` file or bytecode added, ``pyvenv.cfg`` rewritten) is found and
rebuilt before another topology's workers import it.  A wheel that is a zip bomb is refused before pip unpacks
it."""

from __future__ import annotations

import importlib.util
import io
import os
import stat
import subprocess
import tarfile
import threading
import zipfile
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast

import pytest

from storm_py.deps import venv
from storm_py.deps.envcheck import Expected, site_packages
from storm_py.deps.venv import EnvCache, build
from storm_py.deps.wheelhouse import WHEELHOUSE, wheel_digests
from storm_py.errors import DependencyError
from storm_py.supervisor.launcher import ProcessLauncher
from storm_py.supervisor.stormdist import StormDist
from tests.cluster.wheelmaker import make_wheel

pytestmark = pytest.mark.timeout(300)

PROBE = "import builtins, tinydep; print(tinydep.X, getattr(builtins, 'PWNED', None))"


class Server:
    """A local HTTP server recording every request and serving one wheel."""

    def __init__(self, wheel: Path) -> None:
        self.requests: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.requests.append(self.path)
                body = wheel.read_bytes()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    evil = make_wheel(tmp_path / "served", "evil", "1.0", {"evil.py": "import builtins\nbuiltins.PWNED = 'evil'\n"})
    s = Server(evil)
    yield s
    s.stop()


def run(python: Path, code: str) -> str:
    return subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}).stdout.strip()


def imports(python: Path, module: str) -> bool:
    probe = f"import importlib.util; print(importlib.util.find_spec({module!r}) is not None)"
    return run(python, probe) == "True"


def test_a_direct_url_dependency_is_never_fetched_and_the_listed_wheels_install(
    tmp_path: Path, server: Server
) -> None:
    wheels = tmp_path / "code" / WHEELHOUSE
    url = f"http://127.0.0.1:{server.port}/evil-1.0-py3-none-any.whl"
    make_wheel(wheels, "tinyapp", "1.0", {"tinyapp.py": "import tinydep\nY = tinydep.X\n"},
               requires=(f"evil @ {url}", "tinydep>=1"))
    make_wheel(wheels, "tinydep", "1.0", {"tinydep.py": "X = 41\n"})
    env = tmp_path / "envs" / "e1"
    build(env, wheels, timeout=120)
    assert server.requests == []
    python = env / "bin" / "python"
    assert run(python, "import tinyapp; print(tinyapp.Y)") == "41"
    assert not imports(python, "evil")


def source_package(out: Path, marker: Path) -> Path:
    """``evilsdist-1.0.tar.gz``: an sdist whose in-tree build backend writes ``marker`` when it is loaded."""
    files = {
        "evilsdist-1.0/PKG-INFO": "Metadata-Version: 2.1\nName: evilsdist\nVersion: 1.0\n",
        "evilsdist-1.0/pyproject.toml": ('[build-system]\nrequires = []\nbuild-backend = "backend"\n'
                                         'backend-path = ["."]\n'),
        "evilsdist-1.0/backend.py": f"open({str(marker)!r}, 'w').write('built')\n",
    }
    out.mkdir(parents=True, exist_ok=True)
    path = out / "evilsdist-1.0.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            body = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return path


def test_a_source_package_beside_the_wheels_is_never_built(tmp_path: Path) -> None:
    wheels = tmp_path / "code" / WHEELHOUSE
    marker = tmp_path / "backend-ran"
    make_wheel(wheels, "tinyapp", "1.0", {"tinyapp.py": ""}, requires=("evilsdist",))
    source_package(wheels, marker)
    env = tmp_path / "envs" / "e1"
    build(env, wheels, timeout=120)
    assert not marker.exists()
    assert imports(env / "bin" / "python", "tinyapp") and not imports(env / "bin" / "python", "evilsdist")


def writable(path: Path) -> Path:
    """Give back the write bit a built environment took away (a worker of the same user can)."""
    path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return path


def edit_module(env: Path) -> None:
    site = writable(site_packages(env)[0])
    writable(site / "tinydep.py").write_text("X = 666\n", encoding="utf-8")


def add_pth(env: Path) -> None:
    site = writable(site_packages(env)[0])
    (site / "zzz.pth").write_text("import builtins; builtins.PWNED = 'pth'\n", encoding="utf-8")


def add_bytecode(env: Path) -> None:
    """A compiled ``X = 666`` that the import system takes for tinydep.py's (same source mtime and size)."""
    site = writable(site_packages(env)[0])
    source = site / "tinydep.py"
    st = source.stat()
    evil = compile("X = 666", str(source), "exec")
    pyc = importlib.util.cache_from_source(str(source))
    os.makedirs(os.path.dirname(pyc), exist_ok=True)
    from importlib._bootstrap_external import _code_to_timestamp_pyc  # type: ignore[import-not-found]

    Path(pyc).write_bytes(bytes(_code_to_timestamp_pyc(evil, int(st.st_mtime), st.st_size)))


def rewrite_pyvenv(env: Path) -> None:
    cfg = writable(env / "pyvenv.cfg")
    writable(env)
    cfg.write_text(cfg.read_text(encoding="utf-8") + "include-system-site-packages = true\n", encoding="utf-8")


@pytest.mark.parametrize("tamper", [edit_module, add_pth, add_bytecode, rewrite_pyvenv], ids=lambda f: f.__name__)
def test_a_tampered_shared_environment_is_rebuilt_before_another_topology_uses_it(
    tmp_path: Path, tamper: Callable[[Path], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    builds: list[Path] = []

    def counted(env: Path, *args: Any, **kwargs: Any) -> Expected:
        builds.append(env)
        return build(env, *args, **kwargs)

    monkeypatch.setattr(venv, "build", counted)
    code = tmp_path / "code"
    make_wheel(code / WHEELHOUSE, "tinydep", "1.0", {"tinydep.py": "X = 41\n"})
    cache = EnvCache(tmp_path / "envs", cleanup_secs=60, background=False)
    python = cache.python_for("t1", code)
    assert python is not None and run(python, PROBE) == "41 None"
    env = python.parent.parent
    site_file = site_packages(env)[0] / "tinydep.py"
    assert not site_file.stat().st_mode & 0o222 and not site_file.parent.stat().st_mode & 0o222  # read-only
    assert len(builds) == 1
    tamper(env)
    if tamper is not rewrite_pyvenv:
        assert run(python, PROBE) != "41 None"  # the tampering works on an environment used as it is
    again = cache.python_for("t2", code)  # the same wheels: the same environment, checked first
    assert again == python
    assert run(again, PROBE) == "41 None"
    assert builds == [env, env]  # rebuilt
    assert not (site_packages(env)[0] / "zzz.pth").exists()
    assert (env / "pyvenv.cfg").read_text(encoding="utf-8").count("include-system-site-packages") == 1
    assert cache.python_for("t1", code) == python  # untouched since: used as it is
    assert len(builds) == 2


def test_workers_write_their_bytecode_beside_their_topologys_code_not_into_the_environment(tmp_path: Path) -> None:
    code = tmp_path / "stormdist" / "t1" / "code"
    make_wheel(code / WHEELHOUSE, "tinydep", "1.0", {"tinydep.py": "X = 41\n"})
    cache = EnvCache(tmp_path / "envs", cleanup_secs=60, background=False)
    launcher = ProcessLauncher({}, cast(StormDist, None), tmp_path / "worker.yaml", envs=cache)
    python, env_vars = launcher._interpreter("t1", 6700, [(1, 1)], code)
    assert env_vars["PYTHONPYCACHEPREFIX"] == str(tmp_path / "stormdist" / "t1" / "pycache")
    worker_env = {"PATH": "/usr/bin:/bin", **env_vars}  # bytecode written, as a worker does by default
    out = subprocess.run([python, "-c", "import tinydep; print(tinydep.X)"], capture_output=True, text=True,
                         check=True, timeout=60, env=worker_env).stdout.strip()
    assert out == "41"
    assert list((tmp_path / "stormdist" / "t1" / "pycache").rglob("tinydep*.pyc"))
    env = Path(python).parent.parent
    assert not list(env.rglob("__pycache__"))
    assert cache._check(env.name, code / WHEELHOUSE, wheel_digests(code / WHEELHOUSE)) is None  # reused as built


def test_a_wheel_that_is_a_zip_bomb_is_refused_before_pip_unpacks_it(tmp_path: Path) -> None:
    wheels = tmp_path / "code" / WHEELHOUSE
    wheels.mkdir(parents=True)
    with zipfile.ZipFile(wheels / "bombwheel-1.0-py3-none-any.whl", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("bombwheel/zeros.bin", bytes(50 * 1024 * 1024))
        zf.writestr("bombwheel-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: bombwheel\nVersion: 1.0\n")
    env = tmp_path / "envs" / "e1"
    with pytest.raises(DependencyError, match=r"wheel bombwheel-1\.0-py3-none-any\.whl: member 'bombwheel/zeros\.bin'"
                                              r".*storm\.package\.max\.compression\.ratio"):
        build(env, wheels, timeout=120)
    assert not env.exists() and [p.name for p in env.parent.iterdir()] == []
