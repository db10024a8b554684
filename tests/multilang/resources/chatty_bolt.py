"""A bolt written against the bare protocol (no library): records its handshake to a file, then for each tuple
logs at warn level, updates the metric "seen", reports an error, emits the tuple on with task ids, and acks.

usage: chatty_bolt.py HANDSHAKE_FILE
"""

import json
import os
import sys

QUEUED = []


def read_tuple():
    """The next tuple or heartbeat (queued while waiting for task ids), never a task-id list."""
    if QUEUED:
        return QUEUED.pop(0)
    msg = read()
    while isinstance(msg, list):
        msg = read()
    return msg


def read():
    lines = []
    while True:
        line = sys.stdin.readline()
        if not line:
            sys.exit(0)
        if line.rstrip("\n") == "end":
            return json.loads("".join(lines))
        lines.append(line)


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\nend\n")
    sys.stdout.flush()


def main():
    hello = read()
    open(os.path.join(hello["pidDir"], str(os.getpid())), "w").close()
    with open(sys.argv[1], "w") as f:
        json.dump({"handshake": hello, "cwd": os.getcwd(),
                   "pid_file": os.path.exists(os.path.join(hello["pidDir"], str(os.getpid())))}, f)
    send({"pid": os.getpid()})
    while True:
        msg = read_tuple()
        if msg["stream"] == "__heartbeat":
            send({"command": "log", "msg": "chatty heartbeat from task {}".format(msg["task"]), "level": 1})
            send({"command": "sync"})
            continue
        send({"command": "log", "msg": "chatty got {}".format(msg["tuple"]), "level": 3})
        send({"command": "metrics", "name": "seen", "params": 1})
        send({"command": "error", "msg": "chatty complains about {}".format(msg["tuple"])})
        send({"command": "emit", "anchors": [msg["id"]], "tuple": msg["tuple"]})
        tasks = read()
        while not isinstance(tasks, list):
            QUEUED.append(tasks)
            tasks = read()
        send({"command": "log", "msg": f"chatty task ids {json.dumps(tasks)}", "level": 2})
        send({"command": "ack", "id": msg["id"]})


main()
