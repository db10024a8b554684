/* storm_py UI: the component page's "Profiling and Debugging" panel: a stack dump, a CPU profile or a memory
   snapshot of one worker of the component or of all of them, and the results those workers keep.

   Results are read through nimbus's relay (/topology/:id/profiling/download/:host-port/:name: same origin, the
   token in a header, never in a URL): a flame graph opens in a new tab from the bytes read, a text result shows
   on the page, and every result can be saved as a file. */
"use strict";

const StormProfiling = (() => {
  const $ = id => document.getElementById(id);
  const { el } = Storm;
  const ALL = "*";
  const SHOWN_ROWS = 50;
  const LABELS = { stack: "Stack dump", cpu: "CPU profile", memory: "Memory snapshot" };
  let topologyId = "";
  let workers = [];
  /** Results asked for on this page and not listed yet, by file: the text ones show when they land. */
  const pending = new Map();
  let listing = false;

  function base() { return "/topology/" + encodeURIComponent(topologyId) + "/profiling"; }

  function message(text, kind) { Storm.message($("profiling-message"), text, kind); }

  function chosen() {
    const value = $("profiling-worker").value;
    return value === ALL ? workers.slice() : workers.filter(w => w === value);
  }

  function seconds() {
    const raw = Number($("profiling-seconds").value);
    return Number.isInteger(raw) && raw >= 1 && raw <= 3600 ? raw : null;
  }

  async function start(action) {
    const targets = chosen();
    if (!targets.length) { message("No worker runs this component yet.", "error"); return; }
    const secs = seconds();
    if (action === "cpu" && secs === null) { message("The CPU profile's seconds must be a whole number from 1 to 3600.", "error"); return; }
    const path = w => base() + (action === "stack" ? "/dumpjstack/" + encodeURIComponent(w)
      : action === "memory" ? "/dumpheap/" + encodeURIComponent(w)
      : "/start/" + encodeURIComponent(w) + "/" + Math.max(1, Math.floor(secs / 60)) + "?seconds=" + secs);
    const started = [];
    try {
      for (const w of targets) {
        const reply = await Storm.post(path(w));
        pending.set(reply.file, { action, where: reply.id });
        started.push(reply.id + " (" + reply.tool + ", " + reply.seconds + " s)");
      }
    } catch (err) {
      message(LABELS[action] + " refused: " + err.message, "error");
      return;
    }
    message(LABELS[action] + " started on " + started.join(", ") + "; the result is listed below once it is written.", "ok");
    list();
  }

  /** A result's bytes through nimbus's relay, with the token in the header. */
  async function fetchResult(relay) {
    const headers = {};
    const token = Storm.getToken();
    if (token) headers["Authorization"] = "Bearer " + token;
    const reply = await fetch(relay, { headers, cache: "no-store", credentials: "omit" });
    if (!reply.ok) {
      let body = {};
      try { body = await reply.json(); } catch (e) { body = {}; }
      throw new Storm.ApiError(reply.status, body);
    }
    return reply.blob();
  }

  async function show(row) {
    const text = await (await fetchResult(row.relay)).text();
    $("profiling-view-title").textContent = LABELS[row.action] + " of " + row.where + " (" + row.name + ")";
    $("profiling-view").textContent = text;  // text, never markup: a frame's name is whatever the code was called
    $("profiling-view-box").hidden = false;
  }

  function save(blob, name) {
    const url = URL.createObjectURL(blob);
    const a = el("a", { href: url, download: name, hidden: true });
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  }

  async function open(target, row) {
    try {
      if (target.dataset.open === "show") await show(row);
      else if (target.dataset.open === "tab") {
        // the tab opens now, while the click still counts as the user's (a tab opened after an await is blocked);
        // the flame graph is a document of this origin's own bytes, under this page's policy: no script in it runs
        const tab = window.open("", "_blank");
        if (tab) tab.opener = null;
        try {
          const blob = new Blob([await (await fetchResult(row.relay)).arrayBuffer()], { type: "image/svg+xml" });
          const url = URL.createObjectURL(blob);
          if (tab) tab.location.href = url; else location.assign(url);
          setTimeout(() => URL.revokeObjectURL(url), 60000);
        } catch (err) {
          if (tab) tab.close();
          throw err;
        }
      } else save(await fetchResult(row.relay), topologyId + "-" + row.where.replace(":", "-") + "-" + row.name);
    } catch (err) {
      message("Cannot read " + row.name + ": " + err.message, "error");
    }
  }

  let rowsShown = [];

  function links(row) {
    const a = (open, text) => el("a", { href: "#", "data-open": open, "data-key": row.key }, text);
    if (row.name.endsWith(".svg")) return el("span", {}, a("tab", "flame graph"), " · ", a("save", "save"));
    if (row.name.endsWith(".json")) return el("span", {}, a("save", "speedscope file"));
    return el("span", {}, a("show", "show"), " · ", a("save", "save"));
  }

  async function list() {
    if (listing || !workers.length) return;
    listing = true;
    try {
      const rows = [];
      for (const w of workers) {
        const reply = await Storm.getJson(base() + "/dumps/" + encodeURIComponent(w));
        for (const r of reply.dumps || []) rows.push({ ...r, where: reply.hostPort, key: reply.hostPort + "/" + r.name });
      }
      rows.sort((x, y) => y.time - x.time || (x.key < y.key ? -1 : 1));
      rowsShown = rows.slice(0, SHOWN_ROWS);
      Storm.table($("profiling-results"), [
        { label: "Time", render: r => new Date(r.time * 1000).toISOString() },
        { label: "Worker", key: "where" },
        { label: "Action", render: r => LABELS[r.action] || r.action },
        { label: "Size", key: "size", num: true },
        { label: "Result", render: links },
      ], rowsShown, r => r.key, "No results yet.");
      for (const r of rowsShown) {
        const asked = pending.get(r.file);
        if (asked === undefined) continue;
        pending.delete(r.file);
        message(LABELS[r.action] + " of " + r.where + " is written: " + r.name, "ok");
        if (r.name.endsWith(".txt")) await show(r).catch(err => message("Cannot read " + r.name + ": " + err.message, "error"));
      }
    } finally {
      listing = false;
    }
  }

  /** Called with each reading of the component page: the workers to offer, then the results listed again. */
  async function update(page) {
    topologyId = page.topologyId;
    // the actions only for a caller who may profile this topology; its results for every reader
    $("profiling-actions").hidden = !(page.actions || []).includes("profile");
    workers = Array.from(new Set((page.executorStats || []).filter(r => r.host && r.port)
      .map(r => r.host + ":" + r.port))).sort();
    const select = $("profiling-worker");
    const current = select.value;
    const options = [[ALL, "All workers of this component (" + workers.length + ")"], ...workers.map(w => [w, w])];
    const signature = options.map(o => o[0]).join("|");
    if (select.dataset.options !== signature) {
      select.textContent = "";
      for (const [value, label] of options) select.appendChild(el("option", { value }, label));
      select.dataset.options = signature;
      select.value = options.some(o => o[0] === current) ? current : ALL;
    }
    await list();
  }

  function wire() {
    $("profiling-stack").addEventListener("click", () => start("stack"));
    $("profiling-cpu").addEventListener("click", () => start("cpu"));
    $("profiling-memory").addEventListener("click", () => start("memory"));
    $("profiling-results").addEventListener("click", (event) => {
      const target = event.target.closest("a[data-open]");
      if (!target) return;
      event.preventDefault();
      const row = rowsShown.find(r => r.key === target.dataset.key);
      if (row) open(target, row);
    });
  }
  wire();

  return { update };
})();
