"""pystorm split bolt that answers each heartbeat only after DELAY real seconds.  usage: slow_heartbeat_bolt.py DELAY"""

import sys
import time

from pystorm import Bolt

DELAY = float(sys.argv[1])


class SlowHeartbeatSplit(Bolt):
    @staticmethod
    def is_heartbeat(tup):
        beat = tup.task == -1 and tup.stream == "__heartbeat"
        if beat:
            time.sleep(DELAY)
        return beat

    def process(self, tup):
        for word in tup.values[0].split():
            self.emit([word])


if __name__ == "__main__":
    SlowHeartbeatSplit().run()
