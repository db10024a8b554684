/*
 * storm_py UI: the topology graph (SVG, plain JavaScript). Input: Storm's /topology/:id/visualization map
 * {component: {":type", ":capacity", ":latency", ":inputs": [{":component", ":stream", ":grouping", ":rate"}]}}.
 * Components are laid out in columns by depth from the spouts; each edge is labelled with its rate (tuples/s)
 * and each bolt is filled by capacity (green 0 → red ≥ 1). A refresh with the same components only rewrites
 * labels and colours, so hundreds of components stay cheap.
 */
"use strict";

class StormGraph {
  constructor(svg, onSelect) {
    this.svg = svg;
    this.onSelect = onSelect;
    this.signature = null;
    this.nodes = new Map();
    this.edges = new Map();
  }

  static color(capacity) {
    const c = Math.max(0, Math.min(1, Number(capacity) || 0));
    return "hsl(" + Math.round(120 * (1 - c)) + ",65%,75%)";
  }

  static rate(r) {
    const n = Number(r) || 0;
    if (n >= 1000) return (n / 1000).toFixed(1) + "k/s";
    if (n >= 10) return n.toFixed(0) + "/s";
    return n.toFixed(1) + "/s";
  }

  static layout(vis) {
    const ids = Object.keys(vis).sort();
    const depth = new Map(ids.map(id => [id, vis[id][":type"] === "spout" ? 0 : 1]));
    for (let round = 0; round < ids.length; round++) {  // longest path from a spout; cycles stop at ids.length
      let changed = false;
      for (const id of ids) {
        if (vis[id][":type"] === "spout") continue;
        for (const input of vis[id][":inputs"] || []) {
          if (!depth.has(input[":component"])) continue;
          const d = depth.get(input[":component"]) + 1;
          if (d > depth.get(id) && d <= ids.length) { depth.set(id, d); changed = true; }
        }
      }
      if (!changed) break;
    }
    const columns = new Map();
    for (const id of ids) {
      const d = depth.get(id);
      if (!columns.has(d)) columns.set(d, []);
      columns.get(d).push(id);
    }
    const pos = new Map();
    const order = Array.from(columns.keys()).sort((a, b) => a - b);
    order.forEach((d, col) => columns.get(d).forEach((id, row) => pos.set(id, { x: 20 + col * 230, y: 20 + row * 52 })));
    const height = 40 + 52 * Math.max(1, ...Array.from(columns.values()).map(c => c.length));
    return { pos, width: 40 + 230 * order.length, height };
  }

  update(vis) {
    const ns = "http://www.w3.org/2000/svg";
    const make = (tag, attrs) => {
      const n = document.createElementNS(ns, tag);
      for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, String(v));
      return n;
    };
    const edgeList = [];
    for (const [id, c] of Object.entries(vis)) {
      for (const input of c[":inputs"] || []) {
        if (input[":component"] in vis) edgeList.push({ key: input[":component"] + "\u0000" + input[":stream"] + "\u0000" + id, source: input[":component"], stream: input[":stream"], target: id, rate: input[":rate"] });
      }
    }
    const signature = Object.keys(vis).sort().join("\u0001") + "\u0002" + edgeList.map(e => e.key).sort().join("\u0001");
    if (signature !== this.signature) {
      this.signature = signature;
      this.svg.textContent = "";
      this.nodes.clear();
      this.edges.clear();
      const { pos, width, height } = StormGraph.layout(vis);
      this.svg.setAttribute("width", width);
      this.svg.setAttribute("height", height);
      const defs = make("defs");
      const marker = make("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
      marker.appendChild(make("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#9aa5b8" }));
      defs.appendChild(marker);
      this.svg.appendChild(defs);
      const edgeLayer = make("g", { class: "edges" });
      const nodeLayer = make("g", { class: "nodes" });
      this.svg.appendChild(edgeLayer);
      this.svg.appendChild(nodeLayer);
      for (const e of edgeList) {
        const a = pos.get(e.source), b = pos.get(e.target);
        const x1 = a.x + 160, y1 = a.y + 19, x2 = b.x, y2 = b.y + 19;
        const self = e.source === e.target;
        const bend = self ? 60 : Math.max(30, Math.abs(x2 - x1) / 2);
        const d = self
          ? "M " + x1 + " " + y1 + " C " + (x1 + bend) + " " + (y1 - 50) + ", " + (x2 - bend) + " " + (y2 - 50) + ", " + x2 + " " + y2
          : "M " + x1 + " " + y1 + " C " + (x1 + bend) + " " + y1 + ", " + (x2 - bend) + " " + y2 + ", " + x2 + " " + y2;
        const g = make("g", { class: "edge-group", "data-source": e.source, "data-target": e.target, "data-stream": e.stream });
        const path = make("path", { class: "edge", d, "marker-end": "url(#arrow)" });
        const title = make("title");
        path.appendChild(title);
        const label = make("text", { class: "edge-label", x: (x1 + x2) / 2, y: (self ? Math.min(y1, y2) - 34 : (y1 + y2) / 2 - 4), "text-anchor": "middle" });
        g.appendChild(path);
        g.appendChild(label);
        edgeLayer.appendChild(g);
        this.edges.set(e.key, { label, title });
      }
      for (const id of Object.keys(vis).sort()) {
        const p = pos.get(id);
        const type = vis[id][":type"];
        const g = make("g", { class: "node " + type, "data-component": id, transform: "translate(" + p.x + "," + p.y + ")" });
        const rect = make("rect", { width: 160, height: 38 });
        const name = make("text", { x: 8, y: 15 });
        name.textContent = id.length > 24 ? id.slice(0, 23) + "…" : id;
        const detail = make("text", { x: 8, y: 30, class: "detail" });
        const title = make("title");
        title.textContent = id;
        g.appendChild(title);
        g.appendChild(rect);
        g.appendChild(name);
        g.appendChild(detail);
        g.addEventListener("click", () => this.onSelect && this.onSelect(id));
        nodeLayer.appendChild(g);
        this.nodes.set(id, { g, rect, detail });
      }
    }
    for (const [id, c] of Object.entries(vis)) {
      const node = this.nodes.get(id);
      if (!node) continue;
      const spout = c[":type"] === "spout";
      const fill = spout ? "" : StormGraph.color(c[":capacity"]);
      if (!spout && node.rect.getAttribute("fill") !== fill) node.rect.setAttribute("fill", fill);
      const text = spout ? "latency " + (c[":latency"] || "0") + " ms" : "capacity " + Number(c[":capacity"] || 0).toFixed(3);
      if (node.detail.textContent !== text) node.detail.textContent = text;
      node.g.setAttribute("data-capacity", String(c[":capacity"] || 0));
    }
    for (const e of edgeList) {
      const edge = this.edges.get(e.key);
      if (!edge) continue;
      const text = StormGraph.rate(e.rate);
      if (edge.label.textContent !== text) {
        edge.label.textContent = text;
        edge.title.textContent = e.source + " → " + e.target + " (" + e.stream + "): " + text;
      }
    }
  }
}
