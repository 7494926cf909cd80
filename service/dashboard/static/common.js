/* Helpers shared by the dashboard's pages: formatting, DOM building, fetching. */
"use strict";

const TERMINAL = ["done", "unreachable", "failed", "cancelled"];
const STRATEGY_COLORS = {
  sync: "#4e79a7", async_groups: "#f28e2b", daso: "#59a14f", hsgd: "#e15759", dbs: "#76b7b2",
};

function fmtSeconds(s) {
  if (s === null || s === undefined || !isFinite(s)) return "—";
  if (s < 1e-3) return (s * 1e6).toPrecision(3) + " µs";
  if (s < 1) return (s * 1e3).toPrecision(3) + " ms";
  if (s < 120) return s.toPrecision(3) + " s";
  if (s < 7200) return (s / 60).toPrecision(3) + " min";
  return (s / 3600).toPrecision(3) + " h";
}

function fmtNumber(x, digits = 3) {
  if (x === null || x === undefined || !isFinite(x)) return "—";
  return Math.abs(x) >= 1000 ? Math.round(x).toLocaleString("en") : Number(x.toPrecision(digits)).toString();
}

function configLabel(c) {
  const opts = Object.entries(c.options || {}).map(([k, v]) => `${k}=${v}`).join(" ");
  return `${c.strategy} · ${c.nodes}×${c.devices_per_node} · g=${c.groups} · b=${c.batch_size} · ` +
    `lr ${fmtNumber(c.lr, 4)} · μ ${fmtNumber(c.momentum, 3)}` + (c.optimizer !== "sgd" ? ` · ${c.optimizer}` : "") + (opts ? ` · ${opts}` : "");
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v; else node.setAttribute(k, v);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function badge(state) { return el("span", { class: `badge ${state}` }, state); }

function progressBar(done, total) {
  const pct = Math.min(100, total ? (100 * done) / total : 0);
  return el("span", {}, el("span", { class: "progress" }, el("span", { style: `width:${pct}%` })),
    `${done} / ${total}`);
}

async function fetchJSON(url, pending = null) {
  const response = await (pending || fetch(url, { headers: { Accept: "application/json" } }));
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response.json();
}
