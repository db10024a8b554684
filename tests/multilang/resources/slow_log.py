"""A multilang ``log`` message of 1.5 MB written to stdout in 100 KB pieces, one every 0.2 s (JSON framing)."""

import json
import os
import time

#: what the message logs after its padding, found in the component's log
TAIL = "end of the slow message"


def write_slowly():
    data = (json.dumps({"command": "log", "msg": "s" * 1_500_000 + TAIL, "level": 2}) + "\nend\n").encode()
    for i in range(0, len(data), 100_000):
        os.write(1, data[i:i + 100_000])
        time.sleep(0.2)
