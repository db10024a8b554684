"""Time to first tuple on a dev cluster for a topology needing one package: a fresh environment, a cached one.

    python bench/env_first_tuple.py [--rounds 3] [--numpy WHEELHOUSE]

Starts ``storm-py dev-cluster`` (one supervisor, fast monitor rounds) in a temporary directory and submits a
one-spout, one-bolt topology whose bolt appends the wall time of its first tuple to a file.  The time to first
tuple runs from the start of ``storm-py submit`` to that write, for:

* ``no dependencies`` (the baseline, same run): the same topology without requirements;
* ``fresh environment``: requiring ``tinydep`` (a one-module wheel built here), a set the supervisor has not seen,
  so its virtualenv is built (each round uses a new version, hence a new set);
* ``cached environment``: the same set again while the environment is kept (``supervisor.env.cleanup.secs``
  is an hour).

``--numpy DIR`` adds a fresh and a cached round requiring numpy from that wheelhouse.  Submits run with
``PIP_NO_INDEX=1``, so nothing is downloaded.  The first line states the settings, the commit and the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO / "bench"))  # the other bench scripts (``python -P`` leaves the script's directory out)

import cluster_perf  # noqa: E402  (bench/ is the script's own directory)
from cluster_perf import STORM, stop_cluster  # noqa: E402

CONF = {"supervisor.monitor.frequency.secs": 0.5, "nimbus.monitor.freq.secs": 0.5,
        "worker.heartbeat.frequency.secs": 0.5, "supervisor.env.cleanup.secs": 3600}

APP = '''import time
from storm_py import BasicBolt, Spout, TopologyBuilder


class One(Spout):
    def open(self, conf, context, collector):
        self.collector, self.sent = collector, False

    def next_tuple(self):
        if not self.sent:
            self.sent = True
            self.collector.emit([1], 1)

    def declare_output_fields(self, declarer):
        declarer.declare(["n"])


class First(BasicBolt):
    def prepare(self, conf, context):
        self.out = conf["bench.out"]
        self.module = conf.get("bench.module")

    def execute(self, tup, collector):
        if self.module:
            __import__(self.module)
        with open(self.out, "a", encoding="utf-8") as f:
            f.write(f"{time.time()}\\n")

    def declare_output_fields(self, declarer):
        pass


def build(conf):
    builder = TopologyBuilder()
    builder.set_spout("one", One(), 1)
    builder.set_bolt("first", First(), 1).shuffle_grouping("one")
    return builder.create_topology()
'''


def make_wheel(out: Path, name: str, version: str, files: dict[str, str], requires: tuple[str, ...] = ()) -> Path:
    dist = f"{name}-{version}.dist-info"
    members = {**files,
               f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
               + "".join(f"Requires-Dist: {r}\n" for r in requires),
               f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    members[f"{dist}/RECORD"] = "".join(f"{p},,\n" for p in members) + f"{dist}/RECORD,,\n"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for member, text in members.items():
            zf.writestr(member, text)
    return path


def start_cluster(workdir: Path) -> subprocess.Popen[str]:
    base = workdir.parent / "base.yaml"
    base.write_text(yaml.safe_dump(CONF), encoding="utf-8")
    return cluster_perf.start_cluster(workdir, base, supervisors=1, ports_per_supervisor=None)


def first_tuple(workdir: Path, app: Path, name: str, wheelhouse: Path, module: str | None) -> tuple[float, float]:
    """(seconds of the submit command, seconds from its start to the first tuple) of one topology."""
    out = workdir.parent / f"{name}.out"
    config = str(workdir / "storm.yaml")
    cmd = [*STORM, "submit", str(app), "benchapp:build", "--name", name, "--wheelhouse", str(wheelhouse),
           "--config", config, "-c", f"bench.out={out}"]
    if module:
        cmd += ["-c", f"bench.module={module}"]
    start = time.time()
    subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, "PIP_NO_INDEX": "1"})
    submitted = time.time() - start
    deadline = time.monotonic() + 300
    while not (out.is_file() and out.read_text(encoding="utf-8").strip()):
        if time.monotonic() > deadline:
            raise RuntimeError(f"no tuple of {name} in 300 s")
        time.sleep(0.02)
    first = float(out.read_text(encoding="utf-8").split()[0]) - start
    subprocess.run([*STORM, "kill", name, "-w", "0", "--config", config], check=True, capture_output=True)
    return submitted, first


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--numpy", type=Path, default=None, help="a wheelhouse holding a numpy wheel")
    ap.add_argument("--json", type=Path, default=None, help="append the results as one JSON line")
    args = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True, check=False).stdout.strip()
    print(f"# rounds={args.rounds} commit={commit} python={platform.python_version()} cpus={os.cpu_count()} "
          f"load={os.getloadavg()[0]:.2f}")
    results: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="storm-py-envbench-") as tmp:
        root = Path(tmp)
        wh = root / "wheelhouse"
        cases: list[tuple[str, str, tuple[str, ...], str | None]] = []
        for r in range(args.rounds):
            version = f"1.{r}"
            make_wheel(wh, "tinydep", version, {"tinydep.py": "X = 1\n"})
            cases += [("no dependencies", f"base-{r}", (), None),
                      ("fresh environment", f"fresh-{r}", (f"tinydep=={version}",), "tinydep"),
                      ("cached environment", f"cached-{r}", (f"tinydep=={version}",), "tinydep")]
        if args.numpy is not None:
            for whl in args.numpy.glob("numpy-*.whl"):
                (wh / whl.name).symlink_to(whl.resolve())
            cases += [("fresh environment (numpy)", "np-fresh", ("numpy",), "numpy"),
                      ("cached environment (numpy)", "np-cached", ("numpy",), "numpy")]
        proc = start_cluster(root / "cluster")
        try:
            for label, name, requires, module in cases:
                app = make_wheel(root / "dist" / name, "benchapp", "0.1", {"benchapp.py": APP}, requires)
                results.setdefault(label, []).append(first_tuple(root / "cluster", app, name, wh, module))
        finally:
            stop_cluster(proc)
    print("| case | rounds | submit (s, median) | time to first tuple (s, median) | min | max |")
    print("|---|---|---|---|---|---|")
    for label, rows in results.items():
        firsts = [f for _, f in rows]
        print(f"| {label} | {len(rows)} | {statistics.median(s for s, _ in rows):.2f} | "
              f"{statistics.median(firsts):.2f} | {min(firsts):.2f} | {max(firsts):.2f} |")
    if args.json is not None:
        with args.json.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"commit": commit, "results": results}) + "\n")


if __name__ == "__main__":
    main()
