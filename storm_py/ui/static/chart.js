/* storm_py UI: time-series charts in SVG (rates and latency over the last 10 minutes); no library. */
"use strict";

/* A line chart drawn into an <svg>: update(points, lines, from, to, empty) with points [{time, <key>: number|null}],
   lines [{key, label, color}], the times (epoch seconds) the x axis spans and what to say when no point has a
   value (default: no data in these 10 minutes).  The points drawn are kept in the svg's data-series attribute (JSON), so what the chart
   shows can be read from the page. */
class StormChart {
  constructor(svg, title, unit) {
    this.svg = svg;
    this.title = title;
    this.unit = unit;
    this.width = 560;
    this.height = 200;
    svg.setAttribute("viewBox", "0 0 " + this.width + " " + this.height);
    svg.setAttribute("class", "chart");
  }

  static node(tag, attrs, text) {
    const n = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, String(v));
    if (text !== undefined) n.textContent = text;
    return n;
  }

  static tick(value) {
    if (value >= 1000) return (value / 1000).toFixed(value >= 10000 ? 0 : 1) + "k";
    return value >= 10 ? value.toFixed(0) : value.toFixed(value >= 1 ? 1 : 2);
  }

  update(points, lines, from, to, empty) {
    const svg = this.svg;
    const N = StormChart.node;
    const left = 48, right = 110, top = 22, bottom = 24;
    const w = this.width - left - right, h = this.height - top - bottom;
    svg.dataset.series = JSON.stringify(points);
    svg.replaceChildren();
    svg.appendChild(N("text", { x: left, y: 14, class: "chart-title" }, this.title + " (" + this.unit + ")"));
    const values = [];
    for (const p of points) for (const l of lines) if (typeof p[l.key] === "number") values.push(p[l.key]);
    const max = values.length && Math.max(...values) > 0 ? Math.max(...values) * 1.1 : 1;
    const t0 = from;
    const t1 = Math.max(to, from + 1);
    const x = t => left + Math.min(1, Math.max(0, (t - t0) / (t1 - t0))) * w;
    const y = v => top + h - v / max * h;
    svg.appendChild(N("rect", { x: left, y: top, width: w, height: h, class: "chart-frame" }));
    for (let i = 0; i <= 4; i++) {
      const v = max * i / 4;
      svg.appendChild(N("line", { x1: left, x2: left + w, y1: y(v), y2: y(v), class: "chart-grid" }));
      svg.appendChild(N("text", { x: left - 4, y: y(v) + 4, class: "chart-tick", "text-anchor": "end" },
        StormChart.tick(v)));
    }
    if (!values.length) {
      svg.appendChild(N("text", { x: left + w / 2, y: top + h / 2, class: "chart-tick", "text-anchor": "middle" },
        empty || "no data in these 10 minutes"));
    }
    {
      const clock = t => new Date(t * 1000).toISOString().slice(11, 16);
      svg.appendChild(N("text", { x: left, y: top + h + 16, class: "chart-tick" }, clock(t0)));
      svg.appendChild(N("text", { x: left + w, y: top + h + 16, class: "chart-tick", "text-anchor": "end" },
        clock(t1)));
    }
    lines.forEach((l, i) => {
      let d = "";
      let pen = "M";
      for (const p of points) {
        const v = p[l.key];
        if (typeof v !== "number") { pen = "M"; continue; }
        d += pen + x(p.time).toFixed(1) + "," + y(v).toFixed(1) + " ";
        pen = "L";
      }
      if (d) svg.appendChild(N("path", { d, stroke: l.color, class: "chart-line", "data-key": l.key }));
      for (const p of points) {
        if (typeof p[l.key] === "number") {
          svg.appendChild(N("circle", { cx: x(p.time).toFixed(1), cy: y(p[l.key]).toFixed(1), r: 2.5, fill: l.color }));
        }
      }
      const last = points.length ? points[points.length - 1][l.key] : null;
      const ly = top + 10 + i * 16;
      svg.appendChild(N("line", { x1: left + w + 8, x2: left + w + 22, y1: ly - 4, y2: ly - 4, stroke: l.color,
        class: "chart-line" }));
      svg.appendChild(N("text", { x: left + w + 26, y: ly, class: "chart-legend" },
        l.label + " " + (typeof last === "number" ? StormChart.tick(last) : "-")));
    });
  }
}

/* The two charts of a topology or component page: rates, then latency. */
const StormCharts = {
  RATES: [
    { key: "emitted", label: "emitted", color: "#1f77b4" },
    { key: "acked", label: "acked", color: "#2ca02c" },
    { key: "failed", label: "failed", color: "#d62728" },
    { key: "timedOut", label: "timed out", color: "#ff7f0e" },
  ],
  LATENCY: [{ key: "completeLatency", label: "complete", color: "#9467bd" }],
  BOLT_RATES: [
    { key: "executed", label: "executed", color: "#17becf" },
    { key: "emitted", label: "emitted", color: "#1f77b4" },
  ],
  BOLT_LATENCY: [{ key: "executeLatency", label: "execute", color: "#8c564b" }],

  /* Draw ``series`` (the REST timeseries reply) into the svgs #rates-chart and #latency-chart; ``latencyNote``, when
     given, is what an empty latency chart says (a spout emitting without message ids has no complete latency). */
  draw(series, bolt, latencyNote) {
    const rates = document.getElementById("rates-chart");
    const latency = document.getElementById("latency-chart");
    if (!rates || !latency) return;
    // a point is its bucket, drawn at the bucket's middle (the newest at now)
    const half = series.bucketSecs / 2;
    const points = series.points.map(p => Object.assign({}, p, { time: Math.min(series.now, p.time + half) }));
    const from = series.now - Number(series.window);
    new StormChart(rates, "Rates, last 10 minutes", "tuples/s").update(points,
      bolt ? StormCharts.BOLT_RATES : StormCharts.RATES, from, series.now);
    new StormChart(latency, bolt ? "Execute latency" : "Complete latency", "ms").update(points,
      bolt ? StormCharts.BOLT_LATENCY : StormCharts.LATENCY, from, series.now, latencyNote);
    window.stormSeries = series.points;
  },
};
