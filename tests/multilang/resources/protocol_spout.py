"""pystorm spout for the protocol test: emits one tuple per message id of several JSON types (0 included), asks
for the target task ids of the first, and logs every id acked back as JSON.  usage: protocol_spout.py [json|msgpack]"""

import json
import sys

from pystorm import Spout

IDS = [0, 7, "zero", 1.5, [1, "a"], {"k": [2]}, True]


class ProtocolSpout(Spout):
    def initialize(self, conf, context):
        self.todo = list(IDS)

    def next_tuple(self):
        if not self.todo:
            return
        first = len(self.todo) == len(IDS)
        tup_id = self.todo.pop(0)
        tasks = self.emit(["value"], tup_id=tup_id, need_task_ids=first)
        if first:
            self.log(f"task ids {json.dumps(tasks)}")

    def ack(self, tup_id):
        self.log(f"acked {json.dumps(tup_id, sort_keys=True)}")

    def activate(self):
        self.log("spout activated")

    def deactivate(self):
        self.log("spout deactivated")

    def fail(self, tup_id):
        self.log(f"failed {json.dumps(tup_id, sort_keys=True)}")


if __name__ == "__main__":
    ProtocolSpout(serializer=sys.argv[1] if len(sys.argv) > 1 else "json").run()
