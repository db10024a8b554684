"""pystorm bolt: splits a sentence into words (auto-anchored, auto-acked).  usage: split_bolt.py [json|msgpack]"""

import sys

from pystorm import Bolt


class SplitBolt(Bolt):
    def process(self, tup):
        for word in tup.values[0].split():
            self.emit([word])


if __name__ == "__main__":
    SplitBolt(serializer=sys.argv[1] if len(sys.argv) > 1 else "json").run()
