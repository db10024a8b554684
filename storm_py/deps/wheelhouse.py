"""This module owns a topology's wheelhouse on the client: its requirements read from the package, resolved into
wheels with pip, checked against the platform and bundled into the package under :data:`WHEELHOUSE`.

Requirements come from a wheel's ``Requires-Dist`` (entries for extras left out) or from a submitted directory's
``requirements.txt``.  ``pip wheel`` resolves them (downloading wheels, building sdists into wheels); wheels of a
given wheelhouse are found first.  Every wheel uploaded must be installable by this interpreter's tags (the
supervisors run the same Python on the same platform), so a wheel built for another platform is refused here,
named, rather than failing on every supervisor.  The wheelhouse lists its wheels and their digests in
:data:`MANIFEST`.

Nimbus checks an uploaded wheelhouse (:func:`check_wheelhouse`): wheels only, directly in the folder (a source
package would have to be built, running its code, on every supervisor), exactly the listed ones with the listed
digests, each a zip within the unpack limits.
"""

from __future__ import annotations

import email.parser
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from packaging.tags import Tag, sys_tags
from packaging.utils import InvalidWheelFilename, parse_wheel_filename

from storm_py.config.keys import setting
from storm_py.errors import DependencyError, TopologyLoadError
from storm_py.packaging.package import UnpackLimits, check_archive

#: The folder of a topology package that holds its wheelhouse (not importable, so never on ``sys.path`` by name).
WHEELHOUSE = ".storm-wheelhouse"
#: The wheelhouse's list of its wheels: ``{"wheels": {file name: sha256}}``.
MANIFEST = "wheels.json"
#: A submitted directory's requirements file.
REQUIREMENTS_TXT = "requirements.txt"
#: How much of pip's output an error quotes.
PIP_TAIL_CHARS = 1500
#: The keys a submit reads: how long pip may resolve, and the wheelhouse's size limit.
SUBMIT_KEYS = ("topology.dependencies.resolve.timeout.secs", "topology.dependencies.max.size.mb")
#: Bytes in a MiB.
MIB = 1024 * 1024


def requirements_of(data: bytes, filename: str) -> str:
    """The requirements of a package, as the text of a requirements file ("" when it has none)."""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        names = zf.namelist()
        if filename.endswith(".whl"):
            meta = [n for n in names if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
            if not meta:
                return ""
            msg = email.parser.Parser().parsestr(zf.read(meta[0]).decode("utf-8", "replace"), headersonly=True)
            reqs = [r.strip() for r in msg.get_all("Requires-Dist") or [] if "extra" not in r.partition(";")[2]]
            return "".join(f"{r}\n" for r in reqs if r)
        if REQUIREMENTS_TXT in names:
            return zf.read(REQUIREMENTS_TXT).decode("utf-8")
    return ""


def _has_requirements(text: str) -> bool:
    return any(line.split("#", 1)[0].strip() for line in text.splitlines())


def wheel_tags(name: str) -> frozenset[Tag]:
    """The platform tags of a wheel file name.

    Raises:
        DependencyError: the name is not a wheel's.
    """
    try:
        return parse_wheel_filename(name)[3]
    except InvalidWheelFilename as err:
        raise DependencyError(f"{name} is not a wheel file name: {err}", wheel=name) from err


def check_platforms(names: Iterable[str], supported: Iterable[Tag] | None = None) -> None:
    """Refuse, naming it, the first wheel none of whose tags is in ``supported`` (default: this interpreter's)."""
    ok = set(supported if supported is not None else sys_tags())
    for name in sorted(names):
        if not wheel_tags(name) & ok:
            raise DependencyError(
                f"wheel {name} is built for another platform: the supervisors ({sys.implementation.name} "
                f"{sys.version_info.major}.{sys.version_info.minor} on {sys.platform}) cannot install it",
                wheel=name,
            )


def resolve(requirements: str, dest: Path, wheelhouse: str | os.PathLike[str] | None = None,
            timeout: float | None = None) -> list[Path]:
    """Resolve ``requirements`` into wheels in ``dest`` with ``pip wheel``; the wheel files there.

    Raises:
        DependencyError: pip could not satisfy a requirement (its reason quoted), or did not finish in time.
    """
    dest.mkdir(parents=True, exist_ok=True)
    req_file = dest / ".requirements.txt"
    req_file.write_text(requirements, encoding="utf-8")
    cmd = [sys.executable, "-m", "pip", "wheel", "--disable-pip-version-check", "--no-input",
           "--wheel-dir", str(dest), "-r", str(req_file)]
    if wheelhouse is not None:
        cmd[4:4] = ["--find-links", str(Path(wheelhouse).resolve())]
    try:
        proc = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as err:
        raise DependencyError(f"resolving the topology's requirements took over {timeout:g}s") from err
    finally:
        req_file.unlink(missing_ok=True)
    if proc.returncode != 0:
        raise DependencyError(f"cannot resolve the topology's requirements: {pip_reason(proc.stderr, proc.stdout)}")
    return sorted(dest.glob("*.whl"))


def is_storm_py(wheel: str) -> bool:
    """Whether a wheel is storm_py's own (never uploaded: workers use the supervisor's storm_py)."""
    return str(parse_wheel_filename(wheel)[0]) == "storm-py"


def pip_reason(stderr: str, stdout: str = "") -> str:
    """pip's own explanation of a failure: its ``ERROR:`` lines, else the tail of what it printed."""
    errors = [line.strip() for line in stderr.splitlines() if line.startswith("ERROR:")]
    text = " ".join(errors) if errors else (stderr.strip() or stdout.strip() or "pip failed without a message")
    return text[-PIP_TAIL_CHARS:]


def bundle(data: bytes, wheels: Iterable[Path], max_mb: float) -> bytes:
    """The package ``data`` with ``wheels`` added under :data:`WHEELHOUSE` (any earlier wheelhouse replaced).

    Raises:
        DependencyError: the wheels weigh more than ``max_mb`` MiB (``topology.dependencies.max.size.mb``).
    """
    files = sorted(wheels)
    size = sum(f.stat().st_size for f in files)
    if size > max_mb * MIB:
        biggest = max(files, key=lambda f: f.stat().st_size)
        raise DependencyError(
            f"the topology's wheelhouse is {size / MIB:.1f} MiB, over topology.dependencies.max.size.mb "
            f"({max_mb:g}); the largest wheel is {biggest.name}", size=size,
        )
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if not info.filename.startswith(f"{WHEELHOUSE}/"):
                dst.writestr(info, src.read(info))
        listed = {}
        for f in files:
            dst.write(f, f"{WHEELHOUSE}/{f.name}", compress_type=zipfile.ZIP_STORED)  # wheels are zips already
            listed[f.name] = hashlib.sha256(f.read_bytes()).hexdigest()
        dst.writestr(f"{WHEELHOUSE}/{MANIFEST}", json.dumps({"wheels": listed}, indent=1, sort_keys=True))
    return out.getvalue()


def with_dependencies(data: bytes, filename: str, conf: Mapping[str, Any],
                      wheelhouse: str | os.PathLike[str] | None = None) -> tuple[bytes, list[str]]:
    """The package to upload: ``data`` with its requirements' wheelhouse bundled; and the wheels' names.

    A package without requirements is returned unchanged.

    Raises:
        DependencyError: a requirement cannot be satisfied, a wheel is for another platform, or the
            wheelhouse is over its size limit.
    """
    requirements = requirements_of(data, filename)
    if filename.endswith(".whl"):
        check_platforms([filename])
    if wheelhouse is not None:
        given = Path(wheelhouse)
        if not given.is_dir():
            raise DependencyError(f"wheelhouse {given} is not a directory", wheelhouse=str(given))
        check_platforms(p.name for p in given.glob("*.whl"))
    if not _has_requirements(requirements):
        return data, []
    timeout, max_mb = (float(setting(conf, k)) for k in SUBMIT_KEYS)
    with tempfile.TemporaryDirectory(prefix="storm-py-wheelhouse-") as tmp:
        wheels = [w for w in resolve(requirements, Path(tmp), wheelhouse, timeout) if not is_storm_py(w.name)]
        check_platforms(w.name for w in wheels)
        return bundle(data, wheels, max_mb), [w.name for w in wheels]


def wheel_digests(folder: Path) -> dict[str, str]:
    """``{wheel file name: sha256}`` of the wheels in ``folder`` (empty when there is none): the ones its
    manifest lists when it has one, else every ``*.whl`` file."""
    if not folder.is_dir():
        return {}
    names = sorted(_manifest(folder.joinpath(MANIFEST).read_bytes(), str(folder)) if (folder / MANIFEST).is_file()
                   else (p.name for p in folder.glob("*.whl")))
    try:
        return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in names}
    except OSError as err:
        raise DependencyError(f"{folder}: cannot read a wheel its {MANIFEST} lists: {err}",
                              wheelhouse=str(folder)) from err


def _manifest(data: bytes, what: str) -> dict[str, str]:
    """The ``{wheel file name: sha256}`` of a manifest's text.

    Raises:
        DependencyError: it is not a manifest, or lists a name that is not a wheel's.
    """
    try:
        wheels = json.loads(data.decode("utf-8"))["wheels"]
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as err:
        raise DependencyError(f"{what}: {MANIFEST} is not a wheelhouse manifest: {err!r}", wheelhouse=what) from err
    if not isinstance(wheels, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in wheels.items()):
        raise DependencyError(f"{what}: {MANIFEST} must map wheel file names to digests", wheelhouse=what)
    for name in wheels:
        wheel_tags(name)
        if "/" in name or name.startswith("."):
            raise DependencyError(f"{what}: {MANIFEST} lists {name!r}, not a file of the wheelhouse", wheel=name)
    return dict(wheels)


def check_wheelhouse(data: bytes, limits: UnpackLimits, what: str = "package") -> list[str]:
    """Nimbus's check of an uploaded package's wheelhouse (see the module docstring); the wheels' names.

    Raises:
        DependencyError: a member of the wheelhouse is not a wheel (a source package, a folder, any other file),
            is not listed by its manifest or does not match its digest, or a listed wheel is missing.
        TopologyLoadError: a wheel is not a zip archive or unpacks beyond ``limits``.
    """
    prefix = f"{WHEELHOUSE}/"
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        members = {i.filename[len(prefix):]: i for i in zf.infolist()
                   if i.filename.startswith(prefix) and i.filename != prefix}
        wheels: dict[str, bytes] = {}
        listed: dict[str, str] | None = None
        for name, info in sorted(members.items()):
            if name == MANIFEST:
                listed = _manifest(zf.read(info), f"{what}: {WHEELHOUSE}")
                continue
            if info.is_dir() or "/" in name or not name.endswith(".whl"):
                kind = "a source package" if name.endswith((".tar.gz", ".zip", ".tar.bz2", ".tgz")) else "not a wheel"
                raise DependencyError(
                    f"{what}: the wheelhouse holds {WHEELHOUSE}/{name}, {kind}: only wheels are installed on the "
                    f"supervisors (nothing is built there), directly in {WHEELHOUSE}/", wheel=name)
            wheel_tags(name)
            wheels[name] = zf.read(info)
    if listed is not None:
        missing = sorted(set(listed) - set(wheels))
        extra = sorted(set(wheels) - set(listed))
        if missing or extra:
            raise DependencyError(
                f"{what}: the wheelhouse does not hold the wheels its {MANIFEST} lists"
                + (f"; missing: {', '.join(missing)}" if missing else "")
                + (f"; not listed: {', '.join(extra)}" if extra else ""), wheels=missing + extra)
        for name, body in sorted(wheels.items()):
            if hashlib.sha256(body).hexdigest() != listed[name]:
                raise DependencyError(f"{what}: wheel {name} does not match the digest its {MANIFEST} lists",
                                      wheel=name)
    for name, body in sorted(wheels.items()):
        try:
            check_archive(body, f"wheel {WHEELHOUSE}/{name}", limits)
        except TopologyLoadError as err:
            raise TopologyLoadError(f"{what}: {err.message}", wheel=name) from err
    return sorted(wheels)
