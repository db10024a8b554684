"""This module owns submit-time validation of a topology package, in a subprocess: nimbus never imports user code.

Nimbus calls :func:`check_package`, which runs ``python -m storm_py.nimbus.topology_check`` with the package
path, the ``MODULE:FUNCTION`` entry and the topology conf on stdin.  The child unpacks the package, calls the
function, runs Storm's structural checks and answers with the topology's *skeleton*: components, parallelism,
streams, subscriptions and JSON-safe component conf, without the user objects.  Nimbus schedules from the
skeleton (:func:`topology_from_skeleton`); workers load the real topology from the package.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from storm_py.api.topology import ComponentSpec, Grouping, StormTopology, validate_topology
from storm_py.api.tuple import Fields
from storm_py.config.keys import setting
from storm_py.errors import InvalidTopologyException, StormPyError, TopologyLoadError
from storm_py.packaging.package import UnpackLimits

log = logging.getLogger(__name__)

#: How much of the child's stderr an error message quotes.
STDERR_TAIL = 1500


# ------------------------------------------------------------------------------------------------ skeletons


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def skeleton_of(topology: StormTopology) -> dict[str, Any]:
    """The JSON form of a topology's structure (no user objects)."""
    comps = []
    for cid, spec in sorted(topology.components().items()):
        comps.append(
            {
                "id": cid,
                "spout": spec.is_spout,
                "parallelism": spec.parallelism,
                "conf": {k: v for k, v in spec.conf.items() if isinstance(k, str) and _jsonable(v)},
                "streams": {s: [f.to_list(), direct] for s, (f, direct) in spec.streams.items()},
                "inputs": [
                    [src, stream, g.kind, g.fields.to_list() if g.fields is not None else None]
                    for (src, stream), g in spec.inputs.items()
                ],
            }
        )
    return {"components": comps}


def topology_from_skeleton(skeleton: Mapping[str, Any]) -> StormTopology:
    """A :class:`StormTopology` with the skeleton's structure and ``None`` in place of every component object."""
    spouts: dict[str, ComponentSpec] = {}
    bolts: dict[str, ComponentSpec] = {}
    try:
        for c in skeleton["components"]:
            spec = ComponentSpec(
                str(c["id"]),
                None,
                int(c["parallelism"]),
                bool(c["spout"]),
                inputs={
                    (str(src), str(stream)): Grouping(str(kind), Fields(list(fields)) if fields is not None else None)
                    for src, stream, kind, fields in c["inputs"]
                },
                conf=dict(c["conf"]),
                streams={str(s): (Fields(list(f)), bool(d)) for s, (f, d) in c["streams"].items()},
            )
            (spouts if spec.is_spout else bolts)[spec.id] = spec
    except (KeyError, TypeError, ValueError) as err:
        raise TopologyLoadError(f"malformed topology description from the validation process: {err!r}") from err
    return StormTopology(spouts, bolts)


# ------------------------------------------------------------------------------------------------ the child


def _check(request: Mapping[str, Any]) -> dict[str, Any]:
    from storm_py.packaging.code_loader import load_topology
    from storm_py.packaging.package import unpack
    from storm_py.protocol import registration
    from storm_py.runtime.system_topology import system_topology
    from storm_py.stateful.wiring import check_topology as check_stateful

    conf = dict(request.get("conf") or {})
    with tempfile.TemporaryDirectory(prefix="storm-py-check-") as tmp:
        code = Path(tmp) / "code"
        unpack(Path(request["package"]).read_bytes(), code, UnpackLimits(*request["limits"]))
        topology = load_topology(str(request["entry"]), conf, path=code)
        validate_topology(topology)
        check_stateful(topology, conf)
        validate_topology(system_topology(topology, conf), system=True)
        registration.apply(conf)  # topology.kryo.register names classes of the package the codec can carry
        return {"ok": True, "topology": skeleton_of(topology)}


def main() -> int:
    """The child: read the request from stdin, answer on stdout; user code's own output goes to stderr."""
    real_stdout = sys.stdout
    sys.stdout = sys.stderr
    try:
        request = json.loads(sys.stdin.read())
        answer = _check(request)
    except StormPyError as err:
        answer = {"ok": False, "error": err.code, "message": err.message}
    except Exception as err:  # anything else the user's code does wrong
        answer = {"ok": False, "error": TopologyLoadError.code, "message": f"{type(err).__name__}: {err}"}
    real_stdout.write(json.dumps(answer))
    real_stdout.flush()
    return 0


# ------------------------------------------------------------------------------------------------ the parent


def check_package(
    package: Path, entry: str, conf: Mapping[str, Any], timeout: float | None = None,
    limits: UnpackLimits | None = None,
) -> StormTopology:
    """Validate a package in a subprocess within ``timeout`` seconds (default:
    ``nimbus.topology.validation.timeout.secs``); return the topology's skeleton.  The child unpacks it within
    ``limits`` (default: the defaults of the ``storm.package.max.*`` keys; never from the topology's conf).

    Raises:
        TopologyLoadError: the package does not import, the function is missing or returns no topology, or
            the check crashed or timed out.
        InvalidTopologyException: the topology's structure is invalid.
    """
    if timeout is None:
        timeout = float(setting(conf, "nimbus.topology.validation.timeout.secs"))
    if limits is None:
        limits = UnpackLimits.from_conf({})
    request = json.dumps({"package": str(package), "entry": entry, "conf": dict(conf),
                          "limits": [limits.max_bytes, limits.max_ratio, limits.max_members]})
    env = dict(os.environ)
    env.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    with tempfile.TemporaryDirectory(prefix="storm-py-check-cwd-") as cwd:
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "storm_py.nimbus.topology_check"],
                input=request.encode("utf-8"),
                capture_output=True,
                timeout=timeout,
                cwd=cwd,
                env=env,
                check=False,
            )
        except subprocess.TimeoutExpired as err:
            raise TopologyLoadError(
                f"validating {entry!r} took longer than {timeout:g}s (the package or its function hangs)",
                entry=entry,
            ) from err
        except OSError as err:
            raise TopologyLoadError(f"cannot start the validation process: {err}", entry=entry) from err
    stderr = proc.stderr.decode("utf-8", "replace").strip()
    try:
        answer = json.loads(proc.stdout.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise TopologyLoadError(
            f"validating {entry!r} failed: the validation process exited with code {proc.returncode}"
            + (f": {stderr[-STDERR_TAIL:]}" if stderr else ""),
            entry=entry,
        ) from None
    if stderr:
        log.info("output of %s while validating: %s", entry, stderr[-STDERR_TAIL:])
    if not answer.get("ok"):
        message = str(answer.get("message") or "validation failed")
        if answer.get("error") == InvalidTopologyException.code:
            raise InvalidTopologyException(message, entry=entry)
        raise TopologyLoadError(message, entry=entry)
    return topology_from_skeleton(answer["topology"])


if __name__ == "__main__":
    sys.exit(main())
