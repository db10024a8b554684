// A small Node.js implementation of Storm's multilang protocol (JSON framing), written for storm_py's tests.
"use strict";
const fs = require("fs");
const path = require("path");
const readline = require("readline");

function send(msg) {
  process.stdout.write(JSON.stringify(msg) + "\nend\n");
}

// Runs a bolt: process(tuple, emit) is called for every tuple; the tuple is acked after it returns.
function runBolt(processTuple) {
  let lines = [];
  let handshaken = false;
  const pendingIds = [];
  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  rl.on("line", (line) => {
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
      send({ command: "log", msg: "node bolt " + msg.context.componentid + " ready", level: 2 });
      return;
    }
    if (Array.isArray(msg)) {
      pendingIds.push(msg); // task ids of an emit: not needed here
      return;
    }
    if (msg.task === -1 && msg.stream === "__heartbeat") {
      send({ command: "sync" });
      return;
    }
    const emit = (values) => send({ command: "emit", anchors: [msg.id], tuple: values, need_task_ids: false });
    processTuple(msg, emit);
    send({ command: "ack", id: msg.id });
  });
}

module.exports = { runBolt };
