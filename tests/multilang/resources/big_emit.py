"""A bare-protocol process (JSON) that answers the handshake and then emits one tuple of SIZE bytes at once.

usage: big_emit.py SIZE
"""

import json
import os
import sys
import time

SIZE = int(sys.argv[1])
BIG = (json.dumps({"command": "emit", "tuple": ["x" * SIZE], "anchors": [], "need_task_ids": False})
       + "\nend\n").encode()


def read_message():
    lines = []
    for line in sys.stdin:
        if line.rstrip("\n") == "end":
            return json.loads("".join(lines))
        lines.append(line)
    sys.exit(0)


if __name__ == "__main__":
    read_message()  # the handshake
    sys.stdout.write(json.dumps({"pid": os.getpid()}) + "\nend\n")
    sys.stdout.flush()
    with open(1, "wb", closefd=False) as out:
        out.write(BIG)
    while True:
        time.sleep(60)
