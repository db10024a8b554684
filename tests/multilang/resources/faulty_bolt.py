"""pystorm split bolt that misbehaves once: after AFTER tuples its first run exits, hangs, writes text that is not
the protocol, emits on a stream nobody declared, or attacks its worker: 64 MiB on stderr without a newline
(``stderr``), ``{`` and 64 MiB with no ``end`` line (``unended``), a msgpack bin declared 2 GiB long followed by
64 MiB (``bigbin``); or, harmlessly, writes a 1.5 MB ``log`` message slowly, over about three seconds
(``slowlong``); later runs (MARKER exists) behave.

usage: faulty_bolt.py exit|hang|garbage|undeclared|stderr|unended|bigbin|slowlong|behave AFTER MARKER [json|msgpack]
"""

import os
import sys
import time

from pystorm import Bolt
from slow_log import write_slowly

MODE, AFTER, MARKER = sys.argv[1], int(sys.argv[2]), sys.argv[3]
SERIALIZER = sys.argv[4] if len(sys.argv) > 4 else "json"
#: what each attack writes first, and to which descriptor; 64 MiB follow
ATTACKS = {"stderr": (2, b"no newline ever "), "unended": (1, b"{"), "bigbin": (1, b"\xc6\x80\x00\x00\x00")}


def attack(fd, head):
    """Write ``head`` and 64 MiB after it to ``fd`` until the worker stops reading (then wait to be killed)."""
    try:
        os.write(fd, head)
        block = b"a" * (1 << 16)
        for _ in range(1024):
            os.write(fd, block)
    except OSError:
        pass
    while True:
        time.sleep(60)


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
            if MODE in ATTACKS:
                attack(*ATTACKS[MODE])
            if MODE == "slowlong":
                write_slowly()
                self.armed = False
        for word in tup.values[0].split():
            self.emit([word])


if __name__ == "__main__":
    FaultyBolt(serializer=SERIALIZER).run()
