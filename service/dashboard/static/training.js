/* The study page's training card (ttc train, issue 13): the run's loss against its cluster-seconds,
   one colour per phase, dashed lines where the run switched config, dotted ones where it re-planned,
   the target, and the one-shot plan's predicted TTC; then the phases table. */
"use strict";

const PHASE_COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1"];

function verticalLine(label, x, low, high, color, dash) {
  return { label, data: [{ x, y: low }, { x, y: high }], borderColor: color, borderDash: dash,
           borderWidth: 1.5, pointRadius: 0, showLine: true, fill: false };
}

function trainingDatasets(timeline, plan, spec) {
  const points = timeline.points.filter(([, , loss]) => loss !== null && loss > 0);
  const losses = points.map(([, , loss]) => loss).concat(timeline.target ? [timeline.target] : []);
  const low = Math.min(...losses), high = Math.max(...losses);
  const datasets = timeline.phases.map((phase, i) => ({
    label: `phase ${i + 1}: ${configLabel(phase.config)}`,
    data: points.filter(([x]) => x >= phase.start - 1e-12 && x <= phase.end + 1e-12).map(([x, k, y]) => ({ x, y, k })),
    borderColor: PHASE_COLORS[i % PHASE_COLORS.length], backgroundColor: PHASE_COLORS[i % PHASE_COLORS.length],
    borderWidth: 2, pointRadius: 0, showLine: true, fill: false,
  }));
  timeline.phases.slice(1).forEach((phase, i) =>
    datasets.push(verticalLine(`switch ${i + 1}: ${phase.reason}`, phase.start, low, high, "#111", [6, 4])));
  (timeline.replans || []).forEach((x, i) => datasets.push(verticalLine(`re-plan ${i + 1}`, x, low, high, "#999", [2, 3])));
  if (timeline.target) {
    datasets.push({ label: `target ${timeline.target}`, borderColor: "#b42318", borderDash: [4, 4], borderWidth: 1,
      pointRadius: 0, showLine: true, data: [{ x: 0, y: timeline.target }, { x: timeline.run_cluster_seconds, y: timeline.target }] });
  }
  if (plan && plan.predicted && plan.predicted.ttc_seconds && spec.cluster) {
    const share = (plan.config.nodes * plan.config.devices_per_node) / (spec.cluster.nodes * spec.cluster.devices_per_node);
    datasets.push(verticalLine("one-shot plan's predicted TTC", plan.predicted.ttc_seconds * share, low, high, "#2f6fde", [1, 4]));
  }
  return datasets;
}

function makeTrainingChart() {
  return new Chart(document.getElementById("chart-training"), {
    type: "line", data: { datasets: [] },
    options: {
      parsing: false,
      scales: { x: axis("run cluster-seconds", "linear", { ticks: { callback: (v) => fmtSeconds(v) } }),
                y: axis("loss", "logarithmic") },
      plugins: { legend: { labels: { boxWidth: 12 } } }, interaction: { mode: "nearest", intersect: false },
    },
  });
}

function phaseRow(phase, i) {
  return el("tr", { "data-phase": i + 1 },
    el("td", { class: "num" }, i + 1),
    el("td", { class: "mono" }, configLabel(phase.config)),
    el("td", { class: "num" }, fmtNumber(phase.iterations)),
    el("td", { class: "num" }, fmtSeconds(phase.cluster_seconds)),
    el("td", { class: "num" }, `${fmtNumber(phase.loss_in, 4)} → ${fmtNumber(phase.loss_out, 4)}`),
    el("td", { class: "muted" }, phase.reason || ""),
  );
}

/* One checkpoint's ETA: the forecast of the run's seconds left (p50, p10–p90). */
function etaLabel(eta) {
  const top = eta.remaining_p90 === null ? "open" : fmtSeconds(eta.remaining_p90);
  return `${fmtSeconds(eta.remaining_p50)} left at iteration ${fmtNumber(eta.iteration)} ` +
    `(p10–p90 ${fmtSeconds(eta.remaining_p10)} – ${top})`;
}

/* The run's latest ETA while it runs, and how it narrowed: every checkpoint's, oldest first. */
function etaText(result) {
  const etas = result.eta || [];
  if (!etas.length) return "";
  const history = ` · ETA by checkpoint: ${etas.map(etaLabel).join("; ")}`;
  return result.reached ? history : ` · ETA ${etaLabel(etas.at(-1))}${history}`;
}

/* Draw (or hide) the training card; returns the chart, built once and updated in place. */
function renderTraining(chart, data) {
  const training = data.training, card = document.getElementById("training-card");
  card.hidden = !training;
  if (!training) return chart;
  document.getElementById("training-state").replaceChildren(badge(training.state));
  const result = training.result, timeline = training.timeline;
  const summary = document.getElementById("training-summary");
  if (!result) {
    summary.textContent = training.error || "The run starts when the study has its plan.";
  } else {
    summary.textContent = (result.reached ? `Reached the target at iteration ${fmtNumber(result.iterations)}` :
      `At iteration ${fmtNumber(result.iterations)}, loss ${fmtNumber(result.final_loss, 4)}`) +
      ` · TTC ${fmtSeconds(result.ttc_seconds)} (tuning ${fmtSeconds(result.tuning_cluster_seconds)} of it)` +
      ` · ${result.phases.length} phase${result.phases.length === 1 ? "" : "s"}` +
      etaText(result) + (training.error ? ` · ${training.error}` : "");
  }
  document.querySelector("#phases tbody").replaceChildren(...(result ? result.phases.map(phaseRow) : []));
  card.toggleAttribute("data-ready", Boolean(timeline && timeline.points.length));
  if (!timeline) return chart;
  chart = chart || makeTrainingChart();
  chart.data.datasets = trainingDatasets(timeline, data.plan, data.study.spec);
  chart.update("none");
  return chart;
}
