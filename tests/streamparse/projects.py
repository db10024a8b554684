"""streamparse projects for the tests: streamparse's own quickstart ``wordcount`` (made by ``sparse quickstart``),
and the same project with a finite reliable spout and a sink bolt writing the final counts, for exact results."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

WORDS = ["dog", "cat", "zebra", "elephant"]
ROUNDS = 25
#: what the finite spout logs once its last tuple is acked
ALL_ACKED = "every word acked"
#: the quickstart's count bolt adds 10 for "dog"
EXPECTED = {w: ROUNDS * (10 if w == "dog" else 1) for w in WORDS}
SENT = len(WORDS) * ROUNDS

FINITE_SPOUT = f'''
from streamparse import Spout


class FiniteWordSpout(Spout):
    outputs = ["word"]

    def initialize(self, conf, ctx):
        self.todo = list(enumerate({WORDS!r} * {ROUNDS}))
        self.pending = {{}}

    def next_tuple(self):
        if self.todo:
            i, word = self.todo.pop(0)
            self.pending[i] = word
            self.emit([word], tup_id=i)

    def ack(self, tup_id):
        self.pending.pop(tup_id)
        if not self.todo and not self.pending:
            self.logger.info("{ALL_ACKED}")

    def fail(self, tup_id):
        self.todo.append((tup_id, self.pending.pop(tup_id)))
'''

SINK = '''
import json
import os

from streamparse import Bolt


class SinkBolt(Bolt):
    """Writes the highest count seen per word to the file its component config names."""

    def initialize(self, conf, ctx):
        self.path = conf["sink.path"]
        self.counts = {}

    def process(self, tup):
        word, count = tup.values
        self.counts[word] = max(count, self.counts.get(word, 0))
        tmp = self.path + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(self.counts, fh)
        os.replace(tmp, self.path)
'''

EXACT_TOPOLOGY = '''
from streamparse import Grouping, Topology

from bolts.sink import SinkBolt
from bolts.wordcount import WordCountBolt
from spouts.finite import FiniteWordSpout


class Exact(Topology):
    word_spout = FiniteWordSpout.spec()
    count_bolt = WordCountBolt.spec(inputs={word_spout: Grouping.fields("word")}, par=2)
    sink = SinkBolt.spec(inputs={count_bolt: Grouping.GLOBAL}, config={"sink.path": %r})
'''


def quickstart(into: Path) -> Path:
    """``sparse quickstart wordcount`` in ``into``: streamparse's own example project."""
    sparse = Path(sys.executable).parent / "sparse"
    subprocess.run([str(sparse), "quickstart", "wordcount"], cwd=into, check=True, capture_output=True,
                   env={**os.environ, "LEIN_ROOT": "1"}, timeout=120)
    return into / "wordcount"


def exact_project(quickstart_dir: Path, into: Path, sink: Path, serializer: str = "json") -> Path:
    """The quickstart project plus a finite reliable spout, a sink bolt and ``topologies/exact.py``."""
    root = into / "exact"
    shutil.copytree(quickstart_dir, root)
    (root / "src" / "spouts" / "finite.py").write_text(FINITE_SPOUT)
    (root / "src" / "bolts" / "sink.py").write_text(SINK)
    (root / "topologies" / "exact.py").write_text(EXACT_TOPOLOGY % str(sink))
    config = json.loads((root / "config.json").read_text())
    config["serializer"] = serializer
    (root / "config.json").write_text(json.dumps(config))
    return root


def read_counts(sink: Path) -> Counter[str]:
    try:
        return Counter(json.loads(sink.read_text()))
    except (OSError, ValueError):
        return Counter()
