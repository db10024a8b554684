"""Multilang word count: pystorm split and count bolts behind ShellBolt, against a bare driver feeding the same
processes (the ceiling: what the pystorm processes do with nothing but pipes around them), in the same run.

Topology: an in-process spout emits N sentences (8 words each; tracked, one acker) -> ShellBolt "split"
(pystorm) -> ShellBolt "count" (pystorm, no emits); throughput = sentences acked per second.  The bare driver
writes the sentences to a split process, turns each of its emits into a tuple for a count process and reads the
acks, from three threads (as the peer measurement ``wc_multilang.py`` does); throughput = sentences per second
until the count process acked every word.  Both report the CPU seconds of the two pystorm processes together
(``getrusage`` of reaped children) and of this process (the driver, or storm_py's worker with its spout, acker
and the shell bolts' threads, also split by thread: the worker loop, the shell bolts' threads, the rest): on a
shared machine the wall rates move with the load, the CPU per sentence less.  ``cpu_ratio`` is the driver's CPU
over storm_py's worker's for the same sentences (1.0: storm_py's side of the pipes costs what the bare driver's
does).

``--only shellbolt`` (or ``bare``) runs one half alone, e.g. under a profiler; the ShellBolt half also reports the
worker loop's passes per sentence (``loop_passes_per_sentence``, those that found work: ``work_passes_...``).

usage: python bench/multilang_wc.py [--n 20000] [--serializer json|msgpack] [--floor] [--only shellbolt|bare]
       [--max-pending N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import msgpack

from storm_py import BasicBolt, LocalCluster, Spout, TopologyBuilder
from storm_py.clock import wait_until
from storm_py.multilang import ShellBolt

RESOURCES = Path(__file__).parent / "resources"
SENTENCES = [
    "the quick brown fox jumps over the lazy", "storm processes unbounded streams of tuples very fast",
    "a spout emits tuples and bolts process them", "every tuple tree is tracked by the acker",
    "python workers exchange messages over zeromq with msgpack", "the counter bolt keeps a count per word",
    "fields grouping sends the same word to one", "at least once processing replays failed tuple trees",
    "batches make the transport cheap and the acker", "words flow from the splitter into the counter",
]
ACKED: list[int] = [0]


class SentenceSpout(Spout):
    def __init__(self, n: int) -> None:
        self.n = n

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector
        self.i = 0

    def next_tuple(self) -> None:
        if self.i < self.n:
            self.collector.emit([SENTENCES[self.i % 10]], self.i)
            self.i += 1

    def ack(self, msg_id: Any) -> None:
        ACKED[0] += 1

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["sentence"])


class Bolt(ShellBolt):
    def __init__(self, kind: str, serializer: str) -> None:
        super().__init__(sys.executable, "wc_bolts.py", kind, serializer)
        self.kind = kind

    def declare_output_fields(self, declarer: Any) -> None:
        if self.kind == "split":
            declarer.declare(["word"])


THREADS: dict[str, float] = {}
PASSES: dict[str, float] = {}
MAX_PENDING: list[int] = []


def thread_cpu() -> dict[str, float]:
    """CPU seconds of this process's live threads, summed by role (the worker loop, the shell bolts' watcher
    threads, the cluster's other threads), read from ``/proc`` (Linux)."""
    out: dict[str, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for t in threading.enumerate():
        try:
            fields = Path(f"/proc/self/task/{t.native_id}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if t is threading.main_thread():  # its CPU since the process started: in this_process_cpu_s instead
            continue
        role = "loop" if t.name.startswith("worker-") else "shell" if t.name.startswith("shell-") else "cluster"
        out[role] = out.get(role, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return out


def process_counts(pids: list[str]) -> dict[str, int]:
    """Read and write system calls, bytes and context switches of processes (``/proc``, Linux), summed."""
    out = {"reads": 0, "writes": 0, "read_bytes": 0, "written_bytes": 0, "switches": 0, "user": 0, "sys": 0}
    for pid in pids:
        try:
            io = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
            status = [line for task in Path(f"/proc/{pid}/task").iterdir()
                      for line in (task / "status").read_text().splitlines() if "ctxt_switches:" in line]
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out["user"] += int(stat[11])
        out["sys"] += int(stat[12])
        out["reads"] += int(io["syscr"])
        out["writes"] += int(io["syscw"])
        out["read_bytes"] += int(io["rchar"])
        out["written_bytes"] += int(io["wchar"])
        out["switches"] += sum(int(line.split()[1]) for line in status)
    return out


def children() -> list[str]:
    """Pids of this process's children (the pystorm processes)."""
    pids = []
    for task in Path("/proc/self/task").iterdir():
        try:
            pids += (task / "children").read_text().split()
        except OSError:  # a thread that ended meanwhile
            continue
    return pids


def io_counts(n: int) -> dict[str, Any]:
    """Per sentence: the pystorm processes' and this process's pipe system calls and context switches, and the
    bytes per write (``/proc`` counts since each process started; this process's counted since ``IO_START``)."""
    kids = process_counts(children())
    own = process_counts(["self"])
    own = {k: v - IO_START.get(k, 0) for k, v in own.items()}
    out: dict[str, Any] = {}
    for who, c in (("pystorm", kids), ("this_process", own)):
        out[f"{who}_reads_per_sentence"] = round(c["reads"] / n, 2)
        out[f"{who}_writes_per_sentence"] = round(c["writes"] / n, 2)
        out[f"{who}_bytes_per_write"] = round(c["written_bytes"] / max(1, c["writes"]))
        out[f"{who}_bytes_per_read"] = round(c["read_bytes"] / max(1, c["reads"]))
        out[f"{who}_switches_per_sentence"] = round(c["switches"] / n, 2)
        tick = os.sysconf("SC_CLK_TCK")
        out[f"{who}_user_sys_us_per_sentence"] = [round(c[k] / tick / n * 1e6) for k in ("user", "sys")]
    return out


IO_START: dict[str, int] = {}
IO: dict[str, Any] = {}


class PySplit(BasicBolt):
    """The split bolt in Python, in the worker (``--floor``)."""

    def execute(self, tup: Any, collector: Any) -> None:
        for word in tup.values[0].split():
            collector.emit([word])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["word"])


class PyCount(BasicBolt):
    """The count bolt in Python, in the worker (``--floor``)."""

    def prepare(self, conf: Any, context: Any) -> None:
        self.counts: dict[str, int] = {}

    def execute(self, tup: Any, collector: Any) -> None:
        word = tup.values[0]
        self.counts[word] = self.counts.get(word, 0) + 1

    def declare_output_fields(self, declarer: Any) -> None:
        pass


def run_topology(n: int, serializer: str, floor: bool = False) -> float:
    ACKED[0] = 0
    THREADS.clear()
    builder = TopologyBuilder()
    builder.set_spout("sentences", SentenceSpout(n)).set_max_spout_pending(1000)
    builder.set_bolt("split", PySplit() if floor else Bolt("split", serializer)).shuffle_grouping("sentences")
    builder.set_bolt("count", PyCount() if floor else Bolt("count", serializer)).fields_grouping("split", ["word"])
    conf: dict[str, Any] = {"topology.multilang.serializer": serializer, "topology.message.timeout.secs": 300}
    if MAX_PENDING:
        conf["topology.shellbolt.max.pending"] = MAX_PENDING[0]
    with LocalCluster() as cluster:
        IO_START.update(process_counts(["self"]))
        t0 = time.perf_counter()
        cluster.submit_topology("mlwc", conf, builder.create_topology())
        wait_until(lambda: ACKED[0] >= n, 600, interval=0.01, what="every sentence acked")
        rate = n / (time.perf_counter() - t0)
        THREADS.update(thread_cpu())
        loops = [w.loop for w in cluster.workers()]
        PASSES["loop_passes_per_sentence"] = round(sum(loop.passes for loop in loops) / n, 3)
        PASSES["work_passes_per_sentence"] = round(sum(loop.work_passes for loop in loops) / n, 3)
        IO.update(io_counts(n))
        return rate


class Bare:
    """One pystorm process fed by hand."""

    def __init__(self, kind: str, serializer: str, pid_dir: str) -> None:
        import subprocess

        self.json = serializer == "json"
        self.proc = subprocess.Popen([sys.executable, str(RESOURCES / "wc_bolts.py"), kind, serializer],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=1 << 16)
        self.unpacker = msgpack.Unpacker(raw=False)
        self.write([self.encode({"conf": {}, "context": {"taskid": 1, "componentid": kind}, "pidDir": pid_dir})])
        self.read()

    def encode(self, msg: Any) -> bytes:
        return (json.dumps(msg) + "\nend\n").encode() if self.json else msgpack.packb(msg)

    def write(self, chunks: list[bytes]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"".join(chunks))
        self.proc.stdin.flush()

    def read(self) -> Any:
        out = self.proc.stdout
        assert out is not None
        if self.json:
            lines = []
            while (line := out.readline()) != b"end\n":
                lines.append(line)
            return json.loads(b"".join(lines))
        while True:
            for msg in self.unpacker:
                return msg
            self.unpacker.feed(out.read1(1 << 16))

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)


def run_bare(n: int, serializer: str) -> float:
    pid_dir = tempfile.mkdtemp(prefix="mlwc-")
    IO_START.update(process_counts(["self"]))
    split, count = Bare("split", serializer, pid_dir), Bare("count", serializer, pid_dir)
    lock = threading.Lock()
    done = threading.Event()

    def feed() -> None:
        for start in range(0, n, 500):
            split.write([split.encode({"id": str(i), "comp": "s", "stream": "default", "task": 9,
                                       "tuple": [SENTENCES[i % 10]]}) for i in range(start, min(n, start + 500))])

    def relay() -> None:
        acks = k = 0
        buf: list[bytes] = []
        while acks < n:
            msg = split.read()
            if msg.get("command") == "emit":
                k += 1
                buf.append(count.encode({"id": str(k), "comp": "split", "stream": "default", "task": 1,
                                         "tuple": msg["tuple"]}))
                if len(buf) >= 500:
                    with lock:
                        count.write(buf)
                    buf = []
            elif msg.get("command") == "ack":
                acks += 1
        with lock:
            count.write(buf)

    def drain() -> None:
        acks = 0
        while acks < 8 * n:
            if count.read().get("command") == "ack":
                acks += 1
        done.set()

    threads = [threading.Thread(target=f, daemon=True) for f in (feed, relay, drain)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    done.wait()
    rate = n / (time.perf_counter() - t0)
    IO.update(io_counts(n))
    split.close()
    count.close()
    return rate


def measured(run: Any, n: int, serializer: str) -> dict[str, float]:
    """Sentences per second, and CPU seconds of the pystorm processes and of this process, for one run."""
    IO.clear()
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = time.process_time()
    rate = run(n, serializer)
    own = time.process_time() - own
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    bolts = (after.ru_utime + after.ru_stime) - (reaped.ru_utime + reaped.ru_stime)
    out = {"sentences_per_s": round(rate), "bolt_processes_cpu_s": round(bolts, 2),
           "this_process_cpu_s": round(own, 2), "this_process_us_per_sentence": round(own / n * 1e6)}
    if run is not run_bare:
        out.update({f"{role}_threads_cpu_s": round(secs, 2) for role, secs in sorted(THREADS.items())})
        out.update(PASSES)
    out.update(IO)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--serializer", default="json", choices=("json", "msgpack"))
    ap.add_argument("--floor", action="store_true",
                    help="also run the same topology with the split and count bolts in Python in the worker: what "
                         "storm_py's spout, bolts, groupings and acker cost per sentence without any process")
    ap.add_argument("--max-pending", type=int, help="topology.shellbolt.max.pending (default: Storm's 100)")
    ap.add_argument("--only", choices=("shellbolt", "bare"), help="run one half alone (no ratios)")
    a = ap.parse_args()
    out: dict[str, Any] = {"n": a.n, "serializer": a.serializer}
    if a.max_pending:
        MAX_PENDING.append(a.max_pending)
        out["max_pending"] = a.max_pending
    if a.only != "shellbolt":
        out["bare"] = measured(run_bare, a.n, a.serializer)
    if a.only != "bare":
        out["shellbolt"] = measured(run_topology, a.n, a.serializer)
    if a.floor:
        out["floor"] = measured(lambda k, _s: run_topology(k, _s, floor=True), a.n, a.serializer)
    if a.only is None:
        bare, shell = out["bare"], out["shellbolt"]
        out["ratio"] = round(shell["sentences_per_s"] / bare["sentences_per_s"], 3)
        out["cpu_ratio"] = round(bare["this_process_cpu_s"] / shell["this_process_cpu_s"], 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
