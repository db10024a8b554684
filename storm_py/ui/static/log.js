/* storm_py UI: one worker's log as plain text, a page (start/length) at a time, read through nimbus's
   /topology/:id/workerlog (same origin, the token in a header; the log viewer itself is never opened). */
"use strict";

(() => {
  const $ = id => document.getElementById(id);
  const topologyId = Storm.param("topology_id") || "";
  const host = Storm.param("host") || "";
  const port = Storm.param("port") || "";
  const file = Storm.param("file") || "worker.log";
  const length = Number(Storm.param("length")) || 65536;
  const start = Storm.param("start");

  function href(from) {
    return Storm.workerLogHref(topologyId, host, port) + "&file=" + encodeURIComponent(file) + "&length=" + length +
      (from === null ? "" : "&start=" + from);
  }

  async function load() {
    $("topology-link").textContent = topologyId;
    $("topology-link").href = Storm.topologyHref(topologyId);
    $("title").textContent = file + " of " + host + ":" + port;
    const query = "host=" + encodeURIComponent(host) + "&port=" + encodeURIComponent(port) +
      "&file=" + encodeURIComponent(file) + "&length=" + length + (start === null ? "" : "&start=" + encodeURIComponent(start));
    try {
      const page = await Storm.getJson("/topology/" + encodeURIComponent(topologyId) + "/workerlog?" + query);
      $("log-text").textContent = page.data;  // text, never markup: a log line is whatever a component wrote
      $("log-range").textContent = "bytes " + page.start + "–" + page.next + " of " + page.size;
      $("log-older").href = href(Math.max(0, page.start - length));
      $("log-older").hidden = page.start === 0;
      $("log-newer").href = href(page.next);
      $("log-newer").hidden = page.next >= page.size;
      $("log-tail").href = href(null);
      document.body.dataset.loaded = String(Date.now());
    } catch (err) {
      Storm.message($("load-error"), "Cannot read the log: " + err.message, "error");
    }
  }

  load();
})();
