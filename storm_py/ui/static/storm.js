/* storm_py UI: shared helpers (REST calls, tables, token, refresh). Plain JavaScript, no dependencies. */
"use strict";

const Storm = (() => {
  const API = "/api/v1";
  const WINDOWS = [["600", "10m 0s"], ["10800", "3h 0m 0s"], ["86400", "1d 0h 0m 0s"], [":all-time", "All time"]];

  function param(name) { return new URLSearchParams(location.search).get(name); }

  class ApiError extends Error {
    constructor(status, body) {
      super((body && body.errorMessage) || ("HTTP " + status));
      this.status = status;
      this.code = body && body.error;
    }
  }

  /** Every call carries the cluster's token in its header (never in a URL or a cookie); a read refused for want
   *  of it asks for the token once, keeps it in this tab's session storage and tries again. */
  async function request(method, path, body) {
    for (;;) {
      const headers = { "Accept": "application/json" };
      const token = getToken();
      if (token) headers["Authorization"] = "Bearer " + token;
      if (body !== undefined) headers["Content-Type"] = "application/json";
      const reply = await fetch(API + path, {
        method, headers, cache: "no-store", credentials: "omit",
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      let data = {};
      try { data = await reply.json(); } catch (e) { data = {}; }
      if (reply.status === 401 && method === "GET") { await askToken(Boolean(token)); continue; }
      if (!reply.ok) throw new ApiError(reply.status, data);
      // a call the token got through answers a prompt still open (say, one raised while a wrong token was tried)
      if (token && answer && token === getToken()) answer();
      return data;
    }
  }

  let asking = null;
  let answer = null;
  /** Show the token form at the top of the page; resolves once a token is entered (one form for every call) or a
   *  token entered elsewhere on the page is accepted. */
  function askToken(refused) {
    if (asking) return asking;
    asking = new Promise((resolve) => {
      const input = el("input", { id: "token-prompt-input", type: "password", autocomplete: "off",
                                  placeholder: "nimbus.auth.token" });
      const form = el("form", { id: "token-prompt", class: "message token-prompt" },
        el("label", { for: "token-prompt-input" }, refused ? "That token was refused. " : "",
           "This cluster needs its token (nimbus.auth.token in its config, or the daemon's storm-py.token file; " +
           "the ui: link storm-py dev-cluster prints brings it along):"),
        input, el("button", { id: "token-prompt-use", type: "submit" }, "Use token"));
      form.addEventListener("submit", (event) => {
        event.preventDefault();
        const value = input.value.trim();
        if (!value) return;
        setToken(value);
        answer();
      });
      answer = () => { form.remove(); asking = null; answer = null; resolve(); };
      (document.querySelector("main") || document.body).prepend(form);
      input.focus();
    });
    return asking;
  }

  function getJson(path) { return request("GET", path); }
  function post(path, body) { return request("POST", path, body === undefined ? {} : body); }

  function getToken() {
    try { return sessionStorage.getItem("storm-py.token") || ""; } catch (e) { return ""; }
  }
  function setToken(value) {
    try { if (value) sessionStorage.setItem("storm-py.token", value); else sessionStorage.removeItem("storm-py.token"); }
    catch (e) { /* storage disabled: the token lives for this call only */ }
  }

  /** A link `storm-py dev-cluster` prints carries the token in its fragment (`#token=...`: a browser never sends
   *  a fragment to the server). Before any call, the token moves into this tab's session storage and leaves the
   *  address bar (and so the history and a copied link). */
  function takeTokenFromLink() {
    const fragment = new URLSearchParams(location.hash.slice(1));
    if (!fragment.has("token")) return;
    const token = (fragment.get("token") || "").trim();
    if (token) setToken(token);
    fragment.delete("token");
    const rest = fragment.toString();
    history.replaceState(history.state, "", location.pathname + location.search + (rest ? "#" + rest : ""));
  }
  takeTokenFromLink();

  /** An element with attributes and children (strings become text nodes: names from the API are never HTML). */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "onclick") node.addEventListener("click", v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const child of children.flat()) {
      if (child === undefined || child === null) continue;
      node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function num(value) {
    if (value === undefined || value === null || value === "") return "";
    const n = Number(value);
    if (!Number.isFinite(n)) return String(value);
    return Number.isInteger(n) ? n.toLocaleString("en-US") : String(value);
  }

  /** "8" workers, or "8 of 100" when fewer run than the topology asks for (not enough free slots). */
  function workersCell(r) {
    const wanted = r.requestedWorkers;
    return wanted !== undefined && wanted !== null && r.workersTotal < wanted
      ? num(r.workersTotal) + " of " + num(wanted) : num(r.workersTotal);
  }

  function link(href, text) { return el("a", { href }, text); }

  /** A worker's log, read through nimbus (same origin, so the token goes in a header); `served` is false when the
   *  worker's supervisor has no log viewer (its page gives no log link). */
  function workerLogLink(topologyId, host, port, served) {
    return served && host && port
      ? el("a", { href: workerLogHref(topologyId, host, port) }, "worker.log") : el("span", { class: "muted" }, "—");
  }

  function workerLogHref(topologyId, host, port) {
    return "log.html?topology_id=" + encodeURIComponent(topologyId) + "&host=" + encodeURIComponent(host) +
      "&port=" + encodeURIComponent(port);
  }

  function topologyHref(id, window) {
    return "topology.html?id=" + encodeURIComponent(id) + (window ? "&window=" + encodeURIComponent(window) : "");
  }

  function componentHref(topologyId, componentId, window) {
    return "component.html?topology_id=" + encodeURIComponent(topologyId) + "&id=" + encodeURIComponent(componentId) +
      (window ? "&window=" + encodeURIComponent(window) : "");
  }

  /**
   * Replace `container`'s table by rows of `columns` ({label, key, num, render(row)}); `rowKey` names rows so a
   * refresh that keeps the same rows only rewrites changed cells (cheap with hundreds of components).
   */
  function table(container, columns, rows, rowKey, empty) {
    let tbl = container.querySelector("table");
    const signature = columns.map(c => c.label).join("|");
    if (!tbl || tbl.dataset.columns !== signature) {
      container.textContent = "";
      tbl = el("table", {}, el("thead", {}, el("tr", {}, columns.map(c => el("th", { class: c.num ? "num" : null }, c.label)))), el("tbody"));
      tbl.dataset.columns = signature;
      container.appendChild(tbl);
    }
    const body = tbl.tBodies[0];
    if (!rows.length) {
      body.textContent = "";
      body.appendChild(el("tr", {}, el("td", { colspan: columns.length, class: "muted" }, empty || "None")));
      return;
    }
    const keys = rows.map((r, i) => rowKey ? String(rowKey(r)) : String(i));
    const existing = Array.from(body.rows);
    const same = existing.length === rows.length && existing.every((tr, i) => tr.dataset.key === keys[i]);
    if (!same) {
      body.textContent = "";
      rows.forEach((r, i) => {
        const tr = el("tr", { "data-key": keys[i] }, columns.map(() => el("td")));
        columns.forEach((c, j) => { if (c.num) tr.cells[j].className = "num"; });
        body.appendChild(tr);
      });
    }
    rows.forEach((r, i) => {
      const tr = body.rows[i];
      columns.forEach((c, j) => {
        const td = tr.cells[j];
        const value = c.render ? c.render(r) : (c.num ? num(r[c.key]) : (r[c.key] === undefined || r[c.key] === null ? "" : String(r[c.key])));
        if (value instanceof Node) {
          if (td.firstChild === null || !td.firstChild.isEqualNode(value)) { td.textContent = ""; td.appendChild(value); }
        } else if (td.textContent !== value) {
          td.textContent = value;
        }
      });
    });
  }

  /** A column of `table` showing the number under `key`. */
  function numColumn(label, key) { return { label, key, num: true }; }

  /** What a spout's acked count and complete latency say when it emits without message ids. */
  const UNTRACKED = "untracked (no message ids)";

  /** Whether a spout's row (or a topology's) shows tuples emitted without message ids: tuples went out, yet no
   *  tree was acked, failed or timed out, and max spout pending never held the spout back (only a tuple emitted
   *  with a message id is tracked to its end and counts toward it, so an untracked spout's acked count and
   *  complete latency stay empty for good). */
  function untracked(r) {
    return Number(r.emitted) > 0 && !Number(r.acked) && !Number(r.failed) && !Number(r.timedOut || 0) &&
      !Number(r.skippedMaxSpoutMs || 0);
  }

  /** A column of a number that exists only for tracked tuples: an untracked row says so instead. */
  function trackedColumn(label, key) {
    return { label, key, num: true,
             render: r => untracked(r) ? el("span", { class: "muted untracked" }, UNTRACKED) : num(r[key]) };
  }

  const COUNTERS = {
    spout: [numColumn("Emitted", "emitted"), numColumn("Transferred", "transferred"),
            trackedColumn("Complete latency (ms)", "completeLatency"), trackedColumn("Acked", "acked"),
            numColumn("Failed", "failed"), numColumn("Timed out", "timedOut")],
    bolt: [["Emitted", "emitted"], ["Transferred", "transferred"], ["Capacity", "capacity"],
           ["Execute latency (ms)", "executeLatency"], ["Executed", "executed"],
           ["Process latency (ms)", "processLatency"], ["Acked", "acked"], ["Failed", "failed"]].map(([l, k]) => numColumn(l, k)),
  };

  /** The counter columns of a `kind` ("spout" or "bolt") in Storm's order, leaving out the keys in `without`. */
  function counterColumns(kind, ...without) { return COUNTERS[kind].filter(c => !without.includes(c.key)); }

  function message(node, text, kind) {
    node.textContent = text || "";
    node.className = "message " + (kind || "error") + (text ? "" : " hidden");
  }

  function refreshSecs() {
    const raw = Number(param("refresh"));
    return Number.isFinite(raw) && raw > 0 ? raw : 3;
  }

  /** Call `fn` now and every `refresh` seconds (`?refresh=` overrides 3); a failure shows in `errorNode`. */
  function every(fn, errorNode) {
    let timer = null;
    const run = async () => {
      try {
        await fn();
        if (errorNode) message(errorNode, "");
      } catch (err) {
        if (errorNode) message(errorNode, "Could not load: " + err.message);
      }
      timer = setTimeout(run, refreshSecs() * 1000);
    };
    run();
    return { now() { clearTimeout(timer); run(); } };
  }

  function windowLinks(container, current, hrefOf) {
    container.textContent = "";
    container.appendChild(el("span", { class: "muted" }, "Window: "));
    for (const [id, label] of WINDOWS) {
      container.appendChild(el("a", { href: hrefOf(id), class: id === current ? "current" : null, "data-window": id }, label));
    }
  }

  function keyValueTable(container, obj) {
    const rows = Object.keys(obj || {}).sort().map(k => ({ key: k, value: typeof obj[k] === "object" ? JSON.stringify(obj[k]) : String(obj[k]) }));
    table(container, [{ label: "Key", key: "key" }, { label: "Value", key: "value" }], rows, r => r.key);
  }

  return { API, WINDOWS, ApiError, param, getJson, post, getToken, setToken, el, num, workersCell, link, workerLogLink, workerLogHref,
           topologyHref, componentHref, table, numColumn, counterColumns, message, every, windowLinks, keyValueTable,
           UNTRACKED, untracked, trackedColumn };
})();
