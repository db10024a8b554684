"""pystorm split bolt that misbehaves once: after AFTER tuples its first run exits, hangs, writes text that is not
the protocol, or emits on a stream nobody declared; later runs (MARKER exists) behave.

usage: faulty_bolt.py exit|hang|garbage|undeclared AFTER MARKER
"""

import os
import sys
import time

from pystorm import Bolt

MODE, AFTER, MARKER = sys.argv[1], int(sys.argv[2]), sys.argv[3]


class FaultyBolt(Bolt):
    def initialize(self, conf, context):
        self.seen = 0
        self.armed = not os.path.exists(MARKER)
        if self.armed:
            open(MARKER, "w").close()

    def process(self, tup):
        self.seen += 1
        if self.armed and self.seen > AFTER:
            if MODE == "exit":
                os._exit(3)
            if MODE == "hang":
                while True:
                    time.sleep(60)
            if MODE == "garbage":
                os.write(1, b"hello, this is not the protocol\n")
                self.armed = False
            if MODE == "undeclared":
                self.emit(["oops"], stream="nowhere")
                self.armed = False
        for word in tup.values[0].split():
            self.emit([word])


if __name__ == "__main__":
    FaultyBolt().run()
