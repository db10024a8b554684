/* storm_py UI: the cluster page (Storm's index.html). */
"use strict";

(() => {
  const $ = id => document.getElementById(id);
  const { el, table } = Storm;
  let configLoaded = false;

  // who the token names, its role and the cluster actions it may take (the cluster summary's user, role, actions)
  function showCaller(cluster) {
    $("caller-section").hidden = !cluster.user;
    table($("caller"), [
      { label: "User", key: "user" },
      { label: "Role", key: "role" },
      { label: "Cluster actions", render: r => (r.actions || []).join(", ") || "none (read only)" },
    ], [cluster]);
  }

  async function refresh() {
    const [cluster, nimbus, topologies, supervisors] = await Promise.all([
      Storm.getJson("/cluster/summary"), Storm.getJson("/nimbus/summary"),
      Storm.getJson("/topology/summary"), Storm.getJson("/supervisor/summary"),
    ]);
    table($("cluster-summary"), [
      { label: "Version", key: "stormVersion" },
      { label: "Supervisors", key: "supervisors", num: true },
      { label: "Topologies", key: "topologies", num: true },
      { label: "Used slots", key: "slotsUsed", num: true },
      { label: "Free slots", key: "slotsFree", num: true },
      { label: "Total slots", key: "slotsTotal", num: true },
      { label: "Executors", key: "executorsTotal", num: true },
      { label: "Tasks", key: "tasksTotal", num: true },
    ], [cluster]);
    showCaller(cluster);
    table($("nimbus-summary"), [
      { label: "Host", key: "host" },
      { label: "Port", key: "port" },
      { label: "Status", render: r => el("span", { class: "status " + r.status }, r.status) },
      { label: "Version", key: "version" },
      { label: "Uptime", key: "nimbusUpTime" },
    ], nimbus.nimbuses || [], r => r.host + ":" + r.port);
    table($("topology-summary"), [
      { label: "Name", render: r => Storm.link(Storm.topologyHref(r.id), r.name) },
      { label: "Id", key: "id" },
      { label: "Status", render: r => el("span", { class: "status " + r.status }, r.status) },
      { label: "Uptime", key: "uptime" },
      { label: "Num workers", render: Storm.workersCell, num: true },
      { label: "Num executors", key: "executorsTotal", num: true },
      { label: "Num tasks", key: "tasksTotal", num: true },
      { label: "Replication count", key: "replicationCount", num: true },
      { label: "Scheduler info", key: "schedulerInfo" },
      // the resource aware scheduler's requested and assigned memory (MB) and CPU (% of a core)
      ...((topologies.topologies || []).some(r => r.requestedTotalMem !== undefined) ? [
        { label: "Requested memory", render: r => Storm.num(r.requestedTotalMem) + " MB", num: true },
        { label: "Assigned memory", render: r => Storm.num(r.assignedTotalMem) + " MB", num: true },
        { label: "Requested CPU", render: r => Storm.num(r.requestedCpu) + " %", num: true },
        { label: "Assigned CPU", render: r => Storm.num(r.assignedCpu) + " %", num: true },
      ] : []),
    ], topologies.topologies || [], r => r.id, "No topologies are running.");
    table($("supervisor-summary"), [
      { label: "Id", key: "id" },
      { label: "Host", key: "host" },
      { label: "Uptime", key: "uptime" },
      { label: "Slots", key: "slotsTotal", num: true },
      { label: "Used slots", key: "slotsUsed", num: true },
      { label: "Log viewer port", render: r => r.logviewerPort ? String(r.logviewerPort) : "—" },
      { label: "Version", key: "version" },
    ], supervisors.supervisors || [], r => r.id, "No supervisors.");
    if (!configLoaded) {
      Storm.keyValueTable($("nimbus-configuration"), await Storm.getJson("/cluster/configuration"));
      configLoaded = true;
    }
    document.body.dataset.loaded = String(Date.now());
  }

  Storm.every(refresh, $("load-error"));
})();
