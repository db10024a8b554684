/* storm_py UI: the topology page (Storm's topology.html): stats per window, components, graph, actions. */
"use strict";

(() => {
  const $ = id => document.getElementById(id);
  const { el, table } = Storm;
  const id = Storm.param("id") || "";
  const window_ = Storm.param("window") || ":all-time";
  const graph = new StormGraph($("graph"), cid => { location.href = Storm.componentHref(id, cid, window_); });
  let topologyId = id;

  const errorCell = r => r.lastError ? el("pre", { class: "error" }, r.lastError.split("\n").slice(-3).join("\n")) : "";
  const componentLink = key => r => Storm.link(Storm.componentHref(topologyId, r[key], window_), r[key]);
  const parallelism = [Storm.numColumn("Executors", "executors"), Storm.numColumn("Tasks", "tasks")];

  async function refresh() {
    const page = await Storm.getJson("/topology/" + encodeURIComponent(id) + "?window=" + encodeURIComponent(window_));
    topologyId = page.id;
    document.title = page.name + " — storm_py UI";
    showDebug(page);
    showActions(page);
    $("title").textContent = "Topology " + page.name;
    $("crumbs").textContent = "Topology " + page.name;
    table($("topology-summary"), [
      { label: "Name", key: "name" },
      { label: "Id", key: "id" },
      { label: "Status", render: r => el("span", { class: "status " + r.status, id: "status" }, r.status) },
      { label: "Uptime", key: "uptime" },
      { label: "Num workers", render: Storm.workersCell, num: true },
      { label: "Num executors", key: "executorsTotal", num: true },
      { label: "Num tasks", key: "tasksTotal", num: true },
      { label: "Message timeout", key: "msgTimeout", num: true },
      { label: "Scheduler info", key: "schedulerInfo" },
      { label: "Last checkpoint", render: r => r.lastCheckpoint ? "txid " + r.lastCheckpoint.txid +
        (r.lastCheckpoint.ageSecs === null ? "" : ", " + r.lastCheckpoint.ageSecs.toFixed(1) + " s ago") : "" },
    ], [page]);
    // supervisors whose last launch of one of the topology's workers failed, and why (they keep retrying)
    const failures = page.launchFailures || [];
    $("launch-failures-section").hidden = failures.length === 0;
    table($("launch-failures"), [
      { label: "Host", key: "host" },
      { label: "Error", render: r => el("pre", { class: "error" }, r.error) },
    ], failures, r => r.host + "/" + r.error);
    // the topology's own Python environment (a wheelhouse uploaded with it), per supervisor: building, ready or
    // failed with the failure's text; none for a topology without one
    const envs = page.environmentStates || [];
    $("environment-section").hidden = envs.length === 0;
    table($("environment"), [
      { label: "Host", key: "host" },
      { label: "State", render: r => el("span", { class: "env-state " + r.state }, r.state) },
      { label: "Detail", render: r => r.state === "failed" ? el("pre", { class: "error" }, r.detail) : r.detail },
    ], envs, r => r.host + "/" + r.state + "/" + r.detail);
    table($("topology-stats"), [
      { label: "Window", render: r => Storm.link(Storm.topologyHref(topologyId, r.window), r.windowPretty) },
      ...Storm.counterColumns("spout"),
    ], page.topologyStats || [], r => r.window);
    Storm.windowLinks($("windows"), page.window, w => Storm.topologyHref(topologyId, w));
    table($("spouts"), [
      { label: "Id", render: componentLink("spoutId") },
      ...parallelism,
      ...Storm.counterColumns("spout"),
      { label: "Last error", render: errorCell },
    ], page.spouts || [], r => r.spoutId);
    table($("bolts"), [
      { label: "Id", render: componentLink("boltId") },
      ...parallelism,
      ...Storm.counterColumns("bolt"),
      { label: "Last error", render: errorCell },
    ], page.bolts || [], r => r.boltId);
    table($("workers"), [
      { label: "Host", key: "host" },
      { label: "Port", key: "port" },
      { label: "Uptime", key: "uptime" },
      { label: "Executors", key: "executorsTotal", num: true },
      { label: "Components", render: r => Object.entries(r.componentNumTasks || {}).map(([c, n]) => c + " (" + n + ")").join(", ") },
      { label: "Log", render: r => Storm.workerLogLink(topologyId, r.host, r.port, r.workerLogLink) },
    ], page.workers || [], r => r.supervisorId + ":" + r.port, "No workers are running.");
    const lag = [];
    for (const s of Object.values(page.spoutLag || {})) {
      for (const [topic, parts] of Object.entries(s.spoutLagResult || {})) {
        for (const [partition, p] of Object.entries(parts)) {
          lag.push(Object.assign({ spoutId: s.spoutId, topic: topic, partition: Number(partition) }, p));
        }
      }
    }
    lag.sort((a, b) => a.spoutId.localeCompare(b.spoutId) || a.topic.localeCompare(b.topic) || a.partition - b.partition);
    $("lag-section").hidden = lag.length === 0;  // only topologies with a spout reading a log (Kafka) have lag
    table($("lag"), [
      { label: "Id", render: componentLink("spoutId") },
      { label: "Topic", key: "topic" },
      { label: "Partition", key: "partition", num: true },
      { label: "Log head offset", key: "logHeadOffset", num: true },
      { label: "Committed offset", key: "consumerCommittedOffset", num: true },
      { label: "Lag", key: "lag", num: true },
    ], lag, r => r.spoutId + "/" + r.topic + "/" + r.partition, "No spout reports lag.");
    await showAutoscale();
    const errors = [];
    for (const c of (page.spouts || []).concat(page.bolts || [])) {
      for (const e of c.errors || []) errors.push(Object.assign({ component: c.spoutId || c.boltId }, e));
    }
    table($("errors"), [
      { label: "Component", render: componentLink("component") },
      { label: "Time", render: r => new Date(r.time_secs * 1000).toISOString() },
      { label: "Host", render: r => r.host + (r.port ? ":" + r.port : "") },
      { label: "Error", render: r => el("pre", { class: "error" }, r.error) },
      { label: "Log", render: r => Storm.workerLogLink(topologyId, r.host, r.port, r.errorWorkerLogLink) },
    ], errors.slice(0, 50), null, "No errors.");
    const settings = page.componentSettings || [];  // windowed bolts' window keys, the checkpoint spout's state keys
    $("settings-section").hidden = settings.length === 0;
    table($("component-settings"), [
      { label: "Component", render: componentLink("component") },
      { label: "Key", key: "key" },
      { label: "Value", render: r => JSON.stringify(r.value) },
    ], settings, r => r.component + "/" + r.key);
    if (!$("configuration").firstChild) Storm.keyValueTable($("configuration"), page.configuration);
    const vis = await Storm.getJson("/topology/" + encodeURIComponent(topologyId) + "/visualization?window=600");
    graph.update(vis);
    const spouts = page.spouts || [];
    const untracked = spouts.length > 0 && spouts.every(Storm.untracked);
    StormCharts.draw(await Storm.getJson("/topology/" + encodeURIComponent(topologyId) + "/timeseries"), false,
      untracked ? Storm.UNTRACKED : undefined);
    document.body.dataset.loaded = String(Date.now());
  }

  // the autoscaler's decisions and diagnoses (GET /topology/:id/autoscale), newest first; shown while it is on
  // or once it decided something
  async function showAutoscale() {
    const scale = await Storm.getJson("/topology/" + encodeURIComponent(topologyId) + "/autoscale");
    const decisions = (scale.decisions || []).slice().reverse();
    const diagnoses = (scale.diagnoses || []).slice().reverse();
    $("autoscale-section").hidden = !scale.enabled && decisions.length === 0;
    const when = r => new Date(r.time * 1000).toISOString();
    table($("autoscale-summary"), [
      { label: "Enabled", render: r => String(r.enabled) },
      { label: "Target capacity", key: "targetCapacity", num: true },
      { label: "Cooldown secs", key: "cooldownSecs", num: true },
      { label: "Period secs", key: "periodSecs", num: true },
      { label: "Bolts (executors / tasks, bounds)", render: r => Object.entries(r.bolts || {}).map(([b, v]) =>
        b + " " + v.executors + "/" + v.tasks + " [" + v.min + ".." + v.max + "]").join(", ") },
    ], [scale]);
    table($("autoscale-decisions"), [
      { label: "Time", render: when },
      { label: "Component", render: componentLink("component") },
      { label: "From", key: "from", num: true },
      { label: "To", key: "to", num: true },
      { label: "Reason", key: "reason" },
    ], decisions.slice(0, 100), r => r.time + "/" + r.component, "No decisions yet.");
    $("autoscale-diagnoses-box").hidden = diagnoses.length === 0;
    table($("autoscale-diagnoses"), [
      { label: "Time", render: when },
      { label: "Component", render: componentLink("component") },
      { label: "Diagnosis", key: "kind" },
      { label: "Reason", key: "reason" },
    ], diagnoses.slice(0, 100), r => r.time + "/" + r.component + "/" + r.kind);
  }

  // the actions nimbus lets the caller take on this topology (page.actions): the others are not shown at all
  function showActions(page) {
    const allowed = new Set(page.actions || []);
    for (const group of document.querySelectorAll("[data-action]")) {
      group.hidden = !group.dataset.action.split(" ").some(a => allowed.has(a));
    }
    $("no-actions").hidden = allowed.size > 0;
    document.body.dataset.actions = Array.from(allowed).join(" ");
  }

  let debugShown = false;
  function showDebug(page) {
    // Storm's debug toggle: sample a share of every component's emits to the event logger (events.log)
    const on = Boolean(page.debug);
    $("debug").dataset.on = String(on);
    $("debug").textContent = on ? "Stop Debug" : "Debug";
    if (!debugShown) { $("debug-pct").value = page.samplingPct; debugShown = true; }
    $("debug-state").textContent = !page.eventLoggers
      ? "no event logger (topology.eventlogger.executors is 0)"
      : on ? "sampling " + page.samplingPct + " % to events.log" : "";
  }

  const loop = Storm.every(refresh, $("load-error"));

  $("token").value = Storm.getToken();
  $("token").addEventListener("change", () => Storm.setToken($("token").value.trim()));

  async function act(label, path, body) {
    Storm.setToken($("token").value.trim());
    Storm.message($("action-message"), label + " …", "ok");
    try {
      await Storm.post(path, body);
      Storm.message($("action-message"), label + " done.", "ok");
      loop.now();
    } catch (err) {
      const why = err.status === 401
        ? "Refused: " + label.toLowerCase() + " needs the cluster's token (nimbus.auth.token). Enter it and retry."
        : label + " failed: " + err.message;
      Storm.message($("action-message"), why, "error");
    }
  }

  const base = () => "/topology/" + encodeURIComponent(topologyId);
  const wait = () => Math.max(0, Number($("wait-secs").value) || 0);
  $("activate").addEventListener("click", () => act("Activate", base() + "/activate"));
  $("deactivate").addEventListener("click", () => act("Deactivate", base() + "/deactivate"));
  $("rebalance").addEventListener("click", () => {
    const workers = Number($("rebalance-workers").value);
    const options = workers > 0 ? { numWorkers: workers } : {};
    act("Rebalance", base() + "/rebalance/" + wait(), { rebalanceOptions: options });
  });
  $("debug").addEventListener("click", () => {
    const on = $("debug").dataset.on === "true";
    const pct = Math.min(100, Math.max(0, Number($("debug-pct").value) || 0));
    act(on ? "Stop debug" : "Debug", base() + "/debug/" + (on ? "disable" : "enable") + "/" + pct);
  });
  $("kill").addEventListener("click", () => {
    if (window.confirm("Kill topology " + topologyId + " after " + wait() + " s?")) act("Kill", base() + "/kill/" + wait());
  });
})();
