"""pystorm spout that emits sentence i under id i for i < N, and whose first run (MARKER absent) exits or hangs
in next_tuple after AFTER emits, or (``slowlong``) writes a 1.5 MB ``log`` message over about three seconds there
and goes on; later runs behave; each logs once all N are acked.

usage: faulty_spout.py exit|hang|slowlong N AFTER MARKER
"""

import os
import sys
import time

from pystorm import Spout
from sentences import SENTENCES
from slow_log import write_slowly

MODE, TOTAL, AFTER, MARKER = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]


class FaultySpout(Spout):
    def initialize(self, conf, context):
        self.next_id = 0
        self.acked = set()
        self.armed = not os.path.exists(MARKER)
        if self.armed:
            open(MARKER, "w").close()

    def next_tuple(self):
        if self.armed and self.next_id >= AFTER and MODE == "slowlong":
            write_slowly()
            self.armed = False
        if self.armed and self.next_id >= AFTER:
            if MODE == "exit":
                os._exit(4)
            while True:
                time.sleep(60)
        if self.next_id < TOTAL:
            self.emit([SENTENCES[self.next_id % len(SENTENCES)]], tup_id=self.next_id)
            self.next_id += 1

    def ack(self, tup_id):
        self.acked.add(tup_id)
        if len(self.acked) == TOTAL:
            self.log(f"all {TOTAL} sentences acked")


if __name__ == "__main__":
    FaultySpout().run()
