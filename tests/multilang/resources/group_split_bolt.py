"""pystorm bolt: splits sentences in groups of five, each word anchored to its sentence, and acks a group only once
all five sentences of it were read (a bolt that batches, as pystorm's ``BatchingBolt`` does).  usage:
group_split_bolt.py [json|msgpack]"""

import sys

from pystorm import Bolt

GROUP = 5


class GroupSplitBolt(Bolt):
    auto_ack = False
    auto_anchor = False

    def initialize(self, conf, context):
        self.held = []

    def process(self, tup):
        self.held.append(tup)
        if len(self.held) < GROUP:
            return
        for held in self.held:
            for word in held.values[0].split():
                self.emit([word], anchors=[held])
            self.ack(held)
        self.held = []


if __name__ == "__main__":
    GroupSplitBolt(serializer=sys.argv[1] if len(sys.argv) > 1 else "json").run()
