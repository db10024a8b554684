"""pystorm bolts of the multilang word-count benchmark (pystorm defaults: auto-anchor, auto-ack).

usage: wc_bolts.py split|count [json|msgpack]
"""

import sys

from pystorm import Bolt


class SplitBolt(Bolt):
    def process(self, tup):
        for word in tup.values[0].split():
            self.emit([word])


class CountBolt(Bolt):
    def initialize(self, conf, context):
        self.counts = {}

    def process(self, tup):
        word = tup.values[0]
        self.counts[word] = self.counts.get(word, 0) + 1


if __name__ == "__main__":
    serializer = sys.argv[2] if len(sys.argv) > 2 else "json"
    (SplitBolt if sys.argv[1] == "split" else CountBolt)(serializer=serializer).run()
