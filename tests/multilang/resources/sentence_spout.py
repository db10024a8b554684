"""pystorm spout: emits sentence i with message id i for i < N, replays what fails, and logs once all are acked.

usage: sentence_spout.py N [json|msgpack]
"""

import sys

from pystorm import Spout
from sentences import SENTENCES


class SentenceSpout(Spout):
    def initialize(self, conf, context):
        self.total = int(sys.argv[1])
        self.next_id = 0
        self.replay = []
        self.acked = set()

    def next_tuple(self):
        if self.replay:
            i = self.replay.pop()
        elif self.next_id < self.total:
            i = self.next_id
            self.next_id += 1
        else:
            return
        self.emit([SENTENCES[i % len(SENTENCES)]], tup_id=i)

    def ack(self, tup_id):
        self.acked.add(tup_id)
        if len(self.acked) == self.total:
            self.log(f"all {self.total} sentences acked")

    def fail(self, tup_id):
        self.replay.append(tup_id)


if __name__ == "__main__":
    SentenceSpout(serializer=sys.argv[2] if len(sys.argv) > 2 else "json").run()
