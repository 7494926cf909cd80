/* Study page, below the plan: the ranking table, parameter importances and parallel coordinates.
   The server computes every number (service/dashboard/insights.py); this file only draws. */
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined) node.setAttribute(k, v);
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function trialHref(number) { return `/studies/${encodeURIComponent(studyId)}/trials/${number}`; }

function beyondEvidence(title) {
  return el("span", { class: "beyond", title: title || "the prediction lies past what the measured curve supports" },
    "beyond evidence");
}

/* The plan's ranking (predictor.ranking rows): why each config that looked faster lost. */
function renderRanking(data) {
  const card = document.getElementById("ranking-card");
  const rows = (data.plan && data.plan.ranking) || [];
  card.hidden = rows.length === 0;
  const numbers = new Map(data.trials.map((t) => [t.key, t.number]));
  document.querySelector("#ranking tbody").replaceChildren(...rows.map((r, i) => {
    const last = numbers.get(r.probe_keys[r.probe_keys.length - 1]);
    const predicted = r.predicted && r.predicted.ttc_seconds;
    return el("tr", { "data-status": r.status, "data-config": r.config_key },
      el("td", { class: "num" }, i + 1),
      el("td", { class: "mono" }, last === undefined ? configLabel(r.config)
        : el("a", { href: trialHref(last) }, configLabel(r.config))),
      el("td", {}, badge(r.status)),
      el("td", { class: "num" }, fmtSeconds(r.score)),
      el("td", { class: "num" }, predicted ? fmtSeconds(predicted)
        : r.predicted ? beyondEvidence(r.confidence && r.confidence.reason) : "—"),
      el("td", {}, r.confidence ? r.confidence.level : "—"),
      el("td", { class: "muted wrap" }, r.reason));
  }));
}

function renderImportances({ importances }) {
  const box = document.getElementById("importances");
  if (!importances.importances) {
    box.className = "muted";
    box.replaceChildren(el("p", { class: "empty-note" }, importances.message));
    return;
  }
  const top = Math.max(...importances.importances.map((r) => r.importance), 1e-12);
  box.className = "";
  box.replaceChildren(
    el("div", { class: "bars" }, importances.importances.map((r) => el("div", { class: "bar-row", "data-param": r.param },
      el("span", { class: "mono" }, r.param),
      el("span", { class: "bar" }, el("span", { style: `width:${(100 * r.importance) / top}%` })),
      el("span", { class: "num" }, `${(100 * r.importance).toFixed(1)}%`)))),
    el("p", { class: "muted small" }, `Optuna's ${importances.evaluator} importance evaluator over ` +
      `${importances.trials} trials with a value (each trial's value: its ranking score).`));
}

const PC = { width: 760, height: 320, top: 54, bottom: 26, side: 46 };

function valueColor(at) {  // best (0) dark blue → worst (1) light orange
  const a = [32, 76, 160], b = [242, 178, 110];
  const mix = a.map((x, i) => Math.round(x + (b[i] - x) * Math.min(Math.max(at, 0), 1)));
  return `rgb(${mix.join(",")})`;
}

function renderParallel({ parallel }) {
  const box = document.getElementById("parallel");
  if (!parallel.lines.length) {
    box.className = "parallel muted";
    box.replaceChildren(el("p", { class: "empty-note" }, parallel.message));
    return;
  }
  const { width, height, top, bottom, side } = PC;
  const step = (width - 2 * side) / Math.max(parallel.axes.length - 1, 1);
  const x = (i) => side + i * step, y = (at) => top + (1 - at) * (height - top - bottom);
  const axes = parallel.axes.map((axis, i) => svg("g", { class: "pc-axis", "data-axis": axis.name },
    svg("line", { x1: x(i), x2: x(i), y1: top, y2: height - bottom }),
    svg("text", { x: x(i), y: 14, class: "pc-name" }, axis.name + (axis.scale === "log" ? " (log)" : "")),
    axis.ticks.map((t) => svg("text", { x: x(i) + 4, y: y(t.at) + 4, class: "pc-tick" },
      axis.name === "value" ? fmtSeconds(Number(t.label)) : t.label))));
  const valueAt = (line) => (line.beyond ? 2 : line.at[line.at.length - 1]);  // beyond: drawn first, above
  const ordered = [...parallel.lines].sort((a, b) => valueAt(b) - valueAt(a));
  const last = parallel.axes.length - 1, above = top - 6;
  const lines = ordered.map((line) => svg("a", { href: trialHref(line.number) },
    svg("polyline", {
      points: line.at.map((at, i) => `${x(i)},${at === null ? above : y(at)}`).join(" "),
      class: line.beyond ? "pc-line beyond" : line.best ? "pc-line best" : "pc-line",
      stroke: line.beyond ? null : valueColor(line.best ? 0 : valueAt(line)), "data-trial": line.number,
    }, svg("title", {}, `#${line.number} ` + (line.beyond ? `beyond evidence (score ${fmtSeconds(line.value)})`
      : `value ${fmtSeconds(line.value)}`)))));
  const marker = parallel.lines.some((l) => l.beyond)
    ? svg("text", { x: x(last) - 10, y: above - 10, class: "pc-beyond" }, "beyond evidence") : null;
  box.className = "parallel";
  box.replaceChildren(
    svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "parallel coordinates" }, lines, axes, marker),
    el("p", { class: "muted small" }, `${parallel.note}; colour: value (dark = best), the best drawn thick. ` +
      "Click a line for its trial."));
}

async function loadInsights() {
  try {
    const data = await fetchJSON(`/dashboard/api/studies/${encodeURIComponent(studyId)}/insights`);
    renderImportances(data);
    renderParallel(data);
  } catch (e) {
    document.getElementById("importances").textContent = `Could not load: ${e.message}`;
  }
}
