"""This module owns checking a built environment against the wheels it was built from, before it is used again.

Workers of every topology run as the supervisor's user, so a topology sharing an environment could rewrite a
file of it for the next.  The truth is the wheels themselves (their digests name the environment): every file
a wheel installs into site-packages (or the environment's ``data`` folder) must be there with the wheel's bytes,
and site-packages must hold nothing else but the metadata pip writes (:data:`PIP_METADATA`) and the link to the
supervisor's storm_py, with its exact text.  So an edited module, an added module or ``.pth`` file, or a compiled
``__pycache__`` file beside a module (environments are installed without bytecode; workers write theirs to a
folder of their own topology) is found.  The interpreter links and ``pyvenv.cfg`` are checked too.  Scripts
of ``bin/`` other than the interpreter (console scripts, a wheel's ``.data/scripts``) are not.
"""

from __future__ import annotations

import hashlib
import os
import sys
import sysconfig
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

#: The files pip writes into an installed distribution's ``.dist-info`` folder beyond the wheel's own.
PIP_METADATA = frozenset({"INSTALLER", "REQUESTED", "RECORD", "direct_url.json"})
#: The keys ``python -m venv`` writes into ``pyvenv.cfg``.
PYVENV_KEYS = frozenset({"home", "include-system-site-packages", "version", "executable", "command"})
#: The interpreter ``python -m venv`` links environments to (not typed in the stubs: read from the module's dict).
BASE_EXECUTABLE = os.path.abspath(str(vars(sys).get("_base_executable") or sys.executable))


@dataclass
class Expected:
    """What an environment holds once its wheels are installed: ``{path: sha256}`` relative to site-packages
    (``site``) and to the environment's root (``data``), and the wheels' ``.dist-info`` folders."""

    site: dict[str, str] = field(default_factory=dict)
    data: dict[str, str] = field(default_factory=dict)
    dist_infos: set[str] = field(default_factory=set)


def expected_of(wheels: Iterable[Path]) -> Expected:
    """What installing ``wheels`` puts into an environment (headers and scripts left out: they are not imported).

    Raises:
        OSError, zipfile.BadZipFile: a wheel cannot be read.
    """
    out = Expected()
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as zf:
            for info in zf.infolist():
                if info.is_dir():
                    continue
                parts = PurePosixPath(info.filename).parts
                top = parts[0]
                if top.endswith(".dist-info"):
                    out.dist_infos.add(top)
                    if parts[1:] == ("RECORD",):
                        continue  # rewritten by pip
                digest = hashlib.sha256(zf.read(info)).hexdigest()
                if top.endswith(".data") and len(parts) > 2:
                    where, rest = parts[1], "/".join(parts[2:])
                    if where in ("purelib", "platlib"):
                        out.site[rest] = digest
                    elif where == "data":
                        out.data[rest] = digest
                    continue  # scripts (their first line rewritten by pip) and headers
                out.site["/".join(parts)] = digest
    return out


def site_packages(env: Path) -> list[Path]:
    """The site-packages folders of an environment made by this interpreter (one on most platforms)."""
    scheme = "venv" if "venv" in sysconfig.get_scheme_names() else "posix_prefix"
    paths = sysconfig.get_paths(scheme, vars={"base": str(env), "platbase": str(env)})
    return [Path(p) for p in dict.fromkeys([paths["purelib"], paths["platlib"]])]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _interpreter_problem(env: Path) -> str | None:
    """What is wrong with the environment's interpreter links and ``pyvenv.cfg``; None when nothing is."""
    base = os.path.realpath(BASE_EXECUTABLE)
    for link in sorted((env / "bin").glob("python*")):
        if not link.is_symlink() or os.path.realpath(link) != base:
            return f"bin/{link.name} is not a link to {base}"
    try:
        lines = (env / "pyvenv.cfg").read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        return f"pyvenv.cfg cannot be read: {err}"
    cfg = {k.strip(): v.strip() for k, _, v in (line.partition("=") for line in lines if line.strip())}
    if set(cfg) - PYVENV_KEYS:
        return f"pyvenv.cfg sets {', '.join(sorted(set(cfg) - PYVENV_KEYS))}"
    if cfg.get("home") != os.path.dirname(BASE_EXECUTABLE):
        return f"pyvenv.cfg's home is {cfg.get('home')!r}"
    if cfg.get("include-system-site-packages", "false").lower() != "false":
        return "pyvenv.cfg includes the system site-packages"
    return None


def problem(env: Path, expected: Expected, extra: dict[str, str]) -> str | None:
    """The first difference between ``env`` and what its wheels installed, as a sentence; None when none.

    Args:
        expected: what the wheels install.
        extra: ``{path relative to site-packages: exact text}`` of the files the build adds itself.
    """
    found = _interpreter_problem(env)
    if found is not None:
        return found
    sites = site_packages(env)
    seen: set[str] = set()
    for site in sites:
        for dirpath, dirnames, filenames in os.walk(site):
            here = Path(dirpath)
            for name in sorted(dirnames + filenames):
                path = here / name
                rel = path.relative_to(site).as_posix()
                if path.is_symlink():
                    return f"{rel} in site-packages is a link"
                if name in dirnames:
                    continue
                if rel in extra:
                    if path.read_bytes() != extra[rel].encode("utf-8"):
                        return f"{rel} in site-packages was changed"
                elif rel in expected.site:
                    if _sha256(path) != expected.site[rel]:
                        return f"{rel} in site-packages differs from its wheel"
                elif not (rel.count("/") == 1 and rel.split("/")[0] in expected.dist_infos and name in PIP_METADATA):
                    return f"{rel} in site-packages comes from none of its wheels"
                seen.add(rel)
    missing = sorted((set(expected.site) | set(extra)) - seen)
    if missing:
        return f"{missing[0]} is missing from site-packages"
    for rel, digest in sorted(expected.data.items()):
        path = env / rel
        if path.is_symlink() or not path.is_file() or _sha256(path) != digest:
            return f"{rel} differs from its wheel"
    return None
