"""A small bolt side of Storm's multilang protocol (JSON framing), exposing what Storm's flux-wrappers example
bolt (splitsentence.py) uses: ``storm.BasicBolt`` with ``process(tup)``, ``storm.emit(values)`` and ``run()``.
Written for storm_py's Flux tests."""

import json
import os
import sys

_current = None


class Tuple:
    def __init__(self, msg):
        self.id = msg.get("id")
        self.component = msg.get("comp")
        self.stream = msg.get("stream")
        self.task = msg.get("task")
        self.values = msg.get("tuple")


def _read():
    lines = []
    while True:
        line = sys.stdin.readline()
        if not line:
            sys.exit(0)
        line = line.rstrip("\n")
        if line == "end":
            return json.loads("\n".join(lines))
        lines.append(line)


def _send(msg):
    sys.stdout.write(json.dumps(msg) + "\nend\n")
    sys.stdout.flush()


def emit(values, stream=None):
    msg = {"command": "emit", "tuple": values, "need_task_ids": False}
    if _current is not None:
        msg["anchors"] = [_current.id]
    if stream is not None:
        msg["stream"] = stream
    _send(msg)


def log(text):
    _send({"command": "log", "msg": str(text)})


class BasicBolt:
    def initialize(self, conf, context):
        pass

    def process(self, tup):
        pass

    def run(self):
        global _current
        setup = _read()
        open(os.path.join(setup["pidDir"], str(os.getpid())), "w").close()
        _send({"pid": os.getpid()})
        self.initialize(setup.get("conf"), setup.get("context"))
        while True:
            msg = _read()
            if isinstance(msg, list):
                continue
            tup = Tuple(msg)
            if tup.task == -1 and tup.stream == "__heartbeat":
                _send({"command": "sync"})
                continue
            _current = tup
            try:
                self.process(tup)
                _send({"command": "ack", "id": tup.id})
            except Exception as err:
                _send({"command": "error", "msg": str(err)})
                _send({"command": "fail", "id": tup.id})
            _current = None
