"""pystorm bolt: counts words, emits [word, count] (auto-anchored, auto-acked).  usage: count_bolt.py [json|msgpack]"""

import sys
from collections import Counter

from pystorm import Bolt


class CountBolt(Bolt):
    def initialize(self, conf, context):
        self.counts = Counter()

    def process(self, tup):
        word = tup.values[0]
        self.counts[word] += 1
        self.emit([word, self.counts[word]])


if __name__ == "__main__":
    CountBolt(serializer=sys.argv[1] if len(sys.argv) > 1 else "json").run()
