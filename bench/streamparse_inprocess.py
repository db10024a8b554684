"""streamparse's quickstart wordcount, its pystorm components run as processes (the default, as on Storm) and
in-process (``storm-py streamparse run --in-process``), in the same run.

The project is made by ``sparse quickstart wordcount``; its spout is replaced by one emitting N words with tuple
ids (tracked, one acker), the count bolt is the quickstart's, par 1 each.  Throughput = spout tuples acked per
second from the first ack to the N-th (process start-up excluded); CPU = this process's only (storm_py's side:
the pystorm processes are still running when it is read, so their CPU is not in it).

usage: python bench/streamparse_inprocess.py [--n 20000] [--serializer json|msgpack]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from storm_py import LocalCluster
from storm_py.clock import wait_until
from storm_py.streamparse import build_topology, find_project
from storm_py.streamparse.translate import load_topology_class, topology_conf

SPOUT = '''
from streamparse import Spout


class ManyWords(Spout):
    outputs = ["word"]

    def initialize(self, conf, ctx):
        self.n = int(conf["bench.n"])
        self.i = 0

    def next_tuple(self):
        if self.i < self.n:
            self.emit([("dog", "cat", "zebra", "elephant")[self.i % 4]], tup_id=self.i)
            self.i += 1
'''
TOPOLOGY = '''
from streamparse import Grouping, Topology

from bolts.wordcount import WordCountBolt
from spouts.many import ManyWords


class Bench(Topology):
    word_spout = ManyWords.spec()
    count_bolt = WordCountBolt.spec(inputs={word_spout: Grouping.fields("word")}, par=1)
'''


def make_project(into: Path, serializer: str) -> Path:
    sparse = Path(sys.executable).parent / "sparse"
    subprocess.run([str(sparse), "quickstart", "wordcount"], cwd=into, check=True, capture_output=True,
                   env={**os.environ, "LEIN_ROOT": "1"})
    root = into / "wordcount"
    (root / "src" / "spouts" / "many.py").write_text(SPOUT)
    (root / "topologies" / "wordcount.py").unlink()
    (root / "topologies" / "bench.py").write_text(TOPOLOGY)
    config = json.loads((root / "config.json").read_text())
    config["serializer"] = serializer
    (root / "config.json").write_text(json.dumps(config))
    return root


def cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def run(root: Path, n: int, in_process: bool) -> dict[str, float]:
    project = find_project(root, "bench")
    cls = load_topology_class(project.topology_file, project.src)
    topology = build_topology(cls, project.src, project.serializer, in_process)
    conf = topology_conf(cls, project.options(), project.serializer,
                         {"bench.n": n, "topology.max.spout.pending": 1000, "topology.acker.executors": 1})
    name = "bench-inproc" if in_process else "bench-proc"
    with LocalCluster() as cluster:
        cluster.submit_topology(name, conf, topology)

        def acked() -> int:
            return int(cluster.get_topology_summary(name)["spouts"][0]["acked"])

        wait_until(lambda: acked() > 0, 180, interval=0.05, what="the first ack")
        t0, c0, a0 = time.perf_counter(), cpu(), acked()
        wait_until(lambda: acked() >= n, 600, interval=0.05, what=f"{n} acks")
        wall, used = time.perf_counter() - t0, cpu() - c0
        cluster.kill_topology(name, 0)
    done = n - a0
    return {"acked_per_s": done / wall, "cpu_ms_per_1k": used / done * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--serializer", default="json", choices=["json", "msgpack"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = make_project(Path(tmp), args.serializer)
        proc = run(root, args.n, False)
        inproc = run(root, args.n * 5, True)
    print(f"processes  ({args.serializer}): {proc['acked_per_s']:>9,.0f} tuples/s  "
          f"{proc['cpu_ms_per_1k']:.0f} storm_py CPU ms per 1k")
    print(f"in-process            : {inproc['acked_per_s']:>9,.0f} tuples/s  "
          f"{inproc['cpu_ms_per_1k']:.0f} storm_py CPU ms per 1k")
    print(f"ratio                 : {inproc['acked_per_s'] / proc['acked_per_s']:.1f}x")


if __name__ == "__main__":
    main()
