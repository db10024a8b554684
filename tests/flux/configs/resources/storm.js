// A small spout side of Storm's multilang protocol (JSON framing) for Node.js, exporting the `Spout` that Storm's
// flux-wrappers example spout (randomsentence.js) builds on; written for storm_py's Flux tests.
"use strict";
const fs = require("fs");
const path = require("path");
const readline = require("readline");

function send(msg) {
  process.stdout.write(JSON.stringify(msg) + "\nend\n");
}

function Spout() {
  this.taskIdCallbacks = [];
}

Spout.prototype.log = function (msg) {
  send({ command: "log", msg: String(msg) });
};

Spout.prototype.emit = function (emit, onTaskIds) {
  const msg = { command: "emit", tuple: emit.tuple };
  if (emit.id !== undefined) msg.id = emit.id;
  if (emit.stream !== undefined) msg.stream = emit.stream;
  if (onTaskIds) {
    this.taskIdCallbacks.push(onTaskIds);
  } else {
    msg.need_task_ids = false;
  }
  send(msg);
};

Spout.prototype.handle = function (msg, done) {
  if (msg.command === "next") this.nextTuple(done);
  else if (msg.command === "ack") this.ack(msg.id, done);
  else if (msg.command === "fail") this.fail(msg.id, done);
  else if (msg.command === "activate" && this.activate) this.activate(done);
  else if (msg.command === "deactivate" && this.deactivate) this.deactivate(done);
  else done();
};

Spout.prototype.run = function () {
  const self = this;
  let lines = [];
  let handshaken = false;
  const queue = [];
  let busy = false;
  const pump = function () {
    if (busy || queue.length === 0) return;
    busy = true;
    self.handle(queue.shift(), function () {
      send({ command: "sync" });
      busy = false;
      pump();
    });
  };
  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  rl.on("line", function (line) {
    if (line !== "end") {
      lines.push(line);
      return;
    }
    const msg = JSON.parse(lines.join("\n"));
    lines = [];
    if (!handshaken) {
      handshaken = true;
      fs.writeFileSync(path.join(msg.pidDir, String(process.pid)), "");
      send({ pid: process.pid });
      return;
    }
    if (Array.isArray(msg)) {
      const callback = self.taskIdCallbacks.shift();
      if (callback) callback(msg);
      return;
    }
    queue.push(msg);
    pump();
  });
};

module.exports = { Spout: Spout };
