/* storm_py UI: the component page (Storm's component.html): stats per window, streams, executors, errors. */
"use strict";

(() => {
  const $ = id => document.getElementById(id);
  const { el, table } = Storm;
  const topologyId = Storm.param("topology_id") || "";
  const componentId = Storm.param("id") || "";
  const window_ = Storm.param("window") || ":all-time";
  const here = w => Storm.componentHref(topologyId, componentId, w);

  async function refresh() {
    const page = await Storm.getJson("/topology/" + encodeURIComponent(topologyId) + "/component/" +
      encodeURIComponent(componentId) + "?window=" + encodeURIComponent(window_));
    const spout = page.componentType === "spout";
    document.title = page.id + " — storm_py UI";
    $("title").textContent = (spout ? "Spout " : "Bolt ") + page.id;
    $("crumb").textContent = page.id;
    $("topology-link").textContent = page.name;
    $("topology-link").href = Storm.topologyHref(page.topologyId, window_);
    table($("component-summary"), [
      { label: "Id", key: "id" },
      { label: "Topology", render: r => Storm.link(Storm.topologyHref(r.topologyId), r.name) },
      { label: "Type", key: "componentType" },
      { label: "Topology status", render: r => el("span", { class: "status " + r.topologyStatus }, r.topologyStatus) },
      { label: "Executors", key: "executors", num: true },
      { label: "Tasks", key: "tasks", num: true },
    ], [page]);
    const windowCell = { label: "Window", render: r => Storm.link(here(r.window), r.windowPretty) };
    if (spout) {
      $("stats-title").textContent = "Spout stats";
      table($("component-stats"), [windowCell, ...Storm.counterColumns("spout")], page.spoutSummary || [], r => r.window);
    } else {
      $("stats-title").textContent = "Bolt stats";
      table($("component-stats"), [windowCell, ...Storm.counterColumns("bolt")], page.boltStats || [], r => r.window);
    }
    Storm.windowLinks($("windows"), page.window, here);
    table($("input-stats"), [
      { label: "Component", render: r => Storm.link(Storm.componentHref(page.topologyId, r.component, window_), r.component) },
      { label: "Stream", key: "stream" },
      { label: "Execute latency (ms)", key: "executeLatency", num: true },
      { label: "Executed", key: "executed", num: true },
      { label: "Process latency (ms)", key: "processLatency", num: true },
    ], page.inputStats || [], r => r.component + ":" + r.stream, spout ? "Spouts have no inputs." : "No input yet.");
    table($("output-stats"), [
      { label: "Stream", key: "stream" },
      { label: "Emitted", key: "emitted", num: true },
      { label: "Transferred", key: "transferred", num: true },
    ].concat(spout ? [
      Storm.trackedColumn("Complete latency (ms)", "completeLatency"),
      Storm.trackedColumn("Acked", "acked"),
      { label: "Failed", key: "failed", num: true },
    ] : []), page.outputStats || [], r => r.stream, "No output yet.");
    table($("executors"), [
      { label: "Id", key: "id" },
      { label: "Uptime", key: "uptime" },
      { label: "Host:Port", render: r => r.host + ":" + r.port },
      ...(spout ? Storm.counterColumns("spout") : Storm.counterColumns("bolt", "processLatency")),
      Storm.numColumn("Queue", "receiveQueuePopulation"),
      { label: "Log", render: r => Storm.workerLogLink(page.topologyId, r.host, r.port, r.workerLogLink) },
    ], page.executorStats || [], r => r.id + "@" + r.host + ":" + r.port, "No executors are running.");
    table($("errors"), [
      { label: "Time", render: r => new Date(r.errorTime * 1000).toISOString() },
      { label: "Host:Port", render: r => r.errorHost + ":" + r.errorPort },
      { label: "Error", render: r => el("pre", { class: "error" }, r.error) },
      { label: "Log", render: r => Storm.workerLogLink(page.topologyId, r.errorHost, r.errorPort, r.errorWorkerLogLink) },
    ], page.componentErrors || [], null, "No errors.");
    const allTime = (page.spoutSummary || []).find(r => r.window === ":all-time");
    const untracked = spout && allTime !== undefined && Storm.untracked(allTime);
    StormCharts.draw(await Storm.getJson("/topology/" + encodeURIComponent(page.topologyId) + "/component/" +
      encodeURIComponent(componentId) + "/timeseries"), !spout, untracked ? Storm.UNTRACKED : undefined);
    StormProfiling.update(page).catch(err => Storm.message($("profiling-message"), "Cannot list the results: " + err.message));
    document.body.dataset.loaded = String(Date.now());
  }

  Storm.every(refresh, $("load-error"));
})();
