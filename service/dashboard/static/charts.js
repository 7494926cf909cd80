/* The study page's four Chart.js charts; each is built once and updated in place on refresh. */
"use strict";

Chart.defaults.animation = false;  // live refreshes redraw at once; screenshots are deterministic
Chart.defaults.font.family = "system-ui, sans-serif";
Chart.defaults.maintainAspectRatio = false;

const STRATEGY_ORDER = Object.keys(STRATEGY_COLORS);

function byStrategy(trials, point) {
  const groups = new Map();
  for (const t of trials) {
    const p = point(t);
    if (p === null) continue;
    if (!groups.has(t.config.strategy)) groups.set(t.config.strategy, []);
    groups.get(t.config.strategy).push({ ...p, key: t.key, number: t.number });
  }
  return [...groups.entries()]
    .sort(([a], [b]) => STRATEGY_ORDER.indexOf(a) - STRATEGY_ORDER.indexOf(b))
    .map(([strategy, data]) => ({
      label: strategy, data, backgroundColor: STRATEGY_COLORS[strategy] || "#999",
      borderColor: STRATEGY_COLORS[strategy] || "#999", pointRadius: 4, pointHoverRadius: 6,
    }));
}

const keyTooltip = {
  callbacks: {
    label: (ctx) => `#${ctx.raw.number ?? ""} ${ctx.raw.key ?? ""}: ` + (ctx.raw.predicted
      ? `beyond evidence (extrapolated ${fmtSeconds(ctx.raw.predicted)})`
      : `(${fmtNumber(typeof ctx.raw.x === "number" ? ctx.raw.x : NaN)}, ${fmtNumber(ctx.raw.y)})`),
  },
};

function groupLabel(c) { return `${c.strategy} g=${c.groups}`; }

function landscapeData(trials, plan) {
  const labels = [...new Set(trials.map((t) => groupLabel(t.config)))].sort((a, b) => {
    const [sa, ga] = a.split(" g="), [sb, gb] = b.split(" g=");
    return STRATEGY_ORDER.indexOf(sa) - STRATEGY_ORDER.indexOf(sb) || Number(ga) - Number(gb);
  });
  const supported = (t) => t.predicted_ttc && !t.beyond_evidence;
  const datasets = byStrategy(trials, (t) => (supported(t) ? { x: groupLabel(t.config), y: t.predicted_ttc } : null));
  // Predictions past the evidence (predictor.confidence) are marked in a band above the supported
  // ones instead of plotted: one absurd extrapolation would stretch the log axis by decades.
  const shown = trials.filter(supported).map((t) => t.predicted_ttc);
  const beyond = trials.filter((t) => t.predicted_ttc && t.beyond_evidence);
  const ceiling = shown.length ? Math.max(...shown) * 3 : (beyond.length ? Math.min(...beyond.map((t) => t.predicted_ttc)) : 1);
  if (beyond.length) {
    datasets.push({
      label: "beyond evidence", data: beyond.map((t) => ({
        x: groupLabel(t.config), y: ceiling, key: t.key, number: t.number, predicted: t.predicted_ttc })),
      pointStyle: "triangle", pointRadius: 7, borderColor: "#b54708", backgroundColor: "#fff", borderWidth: 1.5,
    });
  }
  const planTtc = plan && plan.predicted.ttc_seconds;
  if (plan) {
    datasets.unshift({
      label: planTtc ? "plan" : "plan (beyond evidence)",
      data: [{ x: groupLabel(plan.config), y: planTtc || ceiling, key: "chosen plan" }],
      pointStyle: "star", pointRadius: 12, borderColor: "#111", backgroundColor: "#111", borderWidth: 2,
    });
  }
  return { labels, datasets, max: beyond.length || (plan && !planTtc) ? ceiling * 1.8 : undefined };
}

function curvesData(trials) {
  return {
    datasets: trials.filter((t) => t.curve.length).map((t) => ({
      label: `#${t.number} ${t.key}`,
      data: t.curve.filter(([, loss]) => loss !== null && loss > 0).map(([x, y]) => ({ x, y })),
      borderColor: (STRATEGY_COLORS[t.config.strategy] || "#999") + (t.state === "complete" ? "cc" : "55"),
      borderWidth: 1.2, pointRadius: 0, showLine: true, fill: false,
    })),
  };
}

function scalingData(trials) {
  return { datasets: byStrategy(trials, (t) => (t.seconds_per_iteration ? { x: t.devices, y: t.seconds_per_iteration } : null)) };
}

function calibrationData(runs) {
  const points = runs.filter((r) => r.predicted_ttc && r.measured_ttc)
    .map((r) => ({ x: r.predicted_ttc, y: r.measured_ttc, key: `${r.label} ${r.key}` }));
  const values = points.flatMap((p) => [p.x, p.y]);
  const lo = Math.min(...values) * 0.8, hi = Math.max(...values) * 1.25;
  return {
    datasets: [
      { label: "runs", data: points, backgroundColor: "#2f6fde", pointRadius: 6 },
      { label: "measured = predicted", data: points.length ? [{ x: lo, y: lo }, { x: hi, y: hi }] : [],
        showLine: true, borderColor: "#999", borderDash: [5, 4], pointRadius: 0 },
    ],
  };
}

function axis(title, type = "linear", extra = {}) { return { type, title: { display: true, text: title }, ...extra }; }

/* A log axis of seconds with "2.5 ms"-style tick labels. */
function secondsAxis(title) {
  return axis(title, "logarithmic", { ticks: { callback: (value) => fmtSeconds(value), maxTicksLimit: 8 } });
}

function makeCharts() {
  const scatter = (id, x, y, extra = {}) => new Chart(document.getElementById(id), {
    type: "scatter", data: { datasets: [] },
    options: { scales: { x, y }, plugins: { tooltip: keyTooltip }, ...extra },
  });
  return {
    landscape: scatter("chart-landscape",
      { type: "category", labels: [], offset: true, title: { display: true, text: "strategy, g" } },
      secondsAxis("predicted TTC")),
    curves: new Chart(document.getElementById("chart-curves"), {
      type: "line", data: { datasets: [] },
      options: { parsing: false, scales: { x: axis("iteration"), y: axis("loss", "logarithmic") },
        plugins: { legend: { display: false } }, interaction: { mode: "nearest", intersect: false } },
    }),
    scaling: scatter("chart-scaling", axis("devices", "linear", { min: 0, grace: "5%", ticks: { precision: 0 } }),
      secondsAxis("seconds / iteration")),
    calibration: scatter("chart-calibration", secondsAxis("predicted TTC"), secondsAxis("measured TTC")),
  };
}

function updateCharts(charts, data) {
  const landscape = landscapeData(data.trials, data.plan);
  charts.landscape.options.scales.x.labels = landscape.labels;
  charts.landscape.data.datasets = landscape.datasets;
  charts.landscape.options.scales.y.max = landscape.max;
  charts.curves.data = curvesData(data.trials);
  charts.scaling.data = scalingData(data.trials);
  charts.calibration.data = calibrationData(data.runs);
  const measured = data.runs.some((r) => r.measured_ttc);
  document.getElementById("calibration-empty").hidden = measured;
  document.getElementById("chart-calibration").style.visibility = measured ? "visible" : "hidden";
  Object.values(charts).forEach((chart) => chart.update("none"));
}
