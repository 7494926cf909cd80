/* Study page: plan card, trials table (sortable, filterable), charts, live updates over SSE. */
"use strict";

const studyId = decodeURIComponent(location.pathname.split("/").filter(Boolean).pop());
const EVENT_KINDS = ["state", "probe_started", "probe_finished", "probes_predicted", "plan", "resumed",
  "training", "training_segment", "training_resumed"];
const view = { data: null, sort: { key: "number", dir: 1 }, charts: null, training: null, stream: null, timer: null };

const SORT_VALUES = {
  number: (t) => t.number,
  config: (t) => t.key,
  seconds_per_iteration: (t) => t.seconds_per_iteration,
  iterations_to_target: (t) => t.iterations_to_target,
  predicted_ttc: (t) => t.predicted_ttc,
  state: (t) => t.state,
  prune_reason: (t) => t.prune_reason,
};

function figure(label, value, detail) {
  return el("div", {}, el("div", { class: "label" }, label), el("div", { class: "figure" }, value),
    detail ? el("div", { class: "muted" }, detail) : null);
}

function renderPlan({ study, plan }) {
  const card = document.getElementById("plan-card"), body = document.getElementById("plan-body");
  card.toggleAttribute("data-ready", Boolean(plan));
  if (!plan) {
    const why = TERMINAL.includes(study.state)
      ? el("span", { class: "error" }, `No plan: the study is ${study.state}${study.error ? ` — ${study.error}` : ""}.`)
      : `The plan appears when the study finishes — ${study.probes_done} of ${study.max_probes} probes so far, ` +
        `best predicted TTC ${fmtSeconds(study.best_predicted_ttc)}.`;
    body.className = "muted";
    body.replaceChildren(why);
    return;
  }
  const p = plan.predicted, baseline = plan.baseline.predicted_ttc_seconds;
  const confidence = plan.confidence || { level: "low", reason: "" };
  const supported = p.ttc_seconds !== null && p.ttc_seconds !== undefined;
  const top = p.ttc_high === null ? "open (the loss levelled off above the target)" : fmtSeconds(p.ttc_high);
  const sources = p.sources ? " · spread from " + Object.entries(p.sources)
    .map(([name, share]) => `${name} ${Math.round(share * 100)}%`).join(", ") : "";
  const where = plan.target ? ` · ${plan.target.reason}` + (plan.target.suggested
    ? `; after the knee: target ${plan.target.suggested.value}, TTC ${fmtSeconds(plan.target.suggested.ttc_p50)}` : "") : "";
  const priors = plan.priors ? ` · read ${plan.priors} finished run${plan.priors === 1 ? "" : "s"} of this job` : "";
  body.className = "plan";
  body.replaceChildren(
    supported
      ? figure("Forecast TTC (p50)", fmtSeconds(p.ttc_seconds),
        `p10–p90 ${fmtSeconds(p.ttc_low)} – ${top} · ` +
        `${fmtNumber(p.seconds_per_iteration)} s/it × ${fmtNumber(p.iterations)} it${sources} · ` +
        `confidence ${confidence.level}: ${confidence.reason}` +
        (p.evidence_seconds != null ? ` · at least ${fmtSeconds(p.evidence_seconds)} (measured)` : "") + where + priors)
      : figure("Forecast TTC", beyondEvidence(confidence.reason), `no forecast: ${confidence.reason}`),
    supported && baseline
      ? figure("Speedup over baseline", `${(baseline / p.ttc_seconds).toFixed(2)}×`,
        `baseline (sync) ${fmtSeconds(baseline)}`)
      : figure("Speedup over baseline", "—", baseline ? `baseline (sync) ${fmtSeconds(baseline)}`
        : "the baseline (sync) has no supported prediction"),
    figure("Probe cost", `${plan.probes.count} probes`, `${fmtSeconds(plan.probes.cluster_seconds)} cluster-seconds`),
    el("div", { style: "grid-column: 1 / -1" }, el("div", { class: "label" }, "Configuration"),
      el("div", { class: "mono", id: "plan-config" }, configLabel(plan.config))),
    ...(plan.worth_tuning === false ? [notWorthTuning(plan)] : []),
  );
}

/* The job is too short for tuning to pay: the plan is then the best measured config, and says why. */
function notWorthTuning(plan) {
  return el("div", { style: "grid-column: 1 / -1", id: "plan-not-worth" },
    el("div", { class: "label" }, "Not worth tuning"),
    el("div", {}, plan.worth_tuning_reason || "the job is too short for tuning to pay"));
}

function trialRow(t) {
  return el("tr", { "data-trial": t.number, "data-state": t.state },
    el("td", { class: "num" }, el("a", { href: trialHref(t.number) }, t.number)),
    el("td", { class: "mono", title: t.key }, configLabel(t.config)),
    el("td", { class: "num" }, fmtSeconds(t.seconds_per_iteration)),
    el("td", { class: "num" }, t.reached ? `${fmtNumber(t.iterations_to_target)} (reached)` : fmtNumber(t.iterations_to_target)),
    el("td", { class: "num" }, t.beyond_evidence
      ? el("span", { title: `predicted ${fmtSeconds(t.predicted_ttc)}` }, beyondEvidence()) : fmtSeconds(t.predicted_ttc)),
    el("td", {}, badge(t.state)),
    el("td", { class: "muted" }, t.prune_reason || ""),
  );
}

function renderTrials() {
  const { trials } = view.data;
  const text = document.getElementById("filter").value.trim().toLowerCase();
  const state = document.getElementById("state-filter").value;
  const { key, dir } = view.sort, value = SORT_VALUES[key];
  const shown = trials
    .filter((t) => !state || t.state === state)
    .filter((t) => !text || `${t.key} ${configLabel(t.config)} ${t.state} ${t.prune_reason || ""}`.toLowerCase().includes(text))
    .sort((a, b) => {
      const va = value(a), vb = value(b);
      if (va === vb) return a.number - b.number;
      if (va === null || va === undefined) return 1;  // blanks last in both directions
      if (vb === null || vb === undefined) return -1;
      return (va < vb ? -1 : 1) * dir;
    });
  document.querySelector("#trials tbody").replaceChildren(...shown.map(trialRow));
  document.getElementById("trial-count").textContent =
    shown.length === trials.length ? `(${trials.length})` : `(${shown.length} of ${trials.length})`;
  document.querySelectorAll("#trials th[data-sort]").forEach((th) => {
    th.classList.toggle("sorted-asc", th.dataset.sort === key && dir === 1);
    th.classList.toggle("sorted-desc", th.dataset.sort === key && dir === -1);
  });
}

function render(data) {
  view.data = data;
  const { study } = data;
  document.title = `ttc · study ${study.id}`;
  document.getElementById("study-id").textContent = study.id;
  document.getElementById("state").replaceChildren(badge(study.state));
  const cluster = study.spec.cluster || {};
  document.getElementById("summary").textContent =
    `${study.workload || "workload"} on ${cluster.nodes}×${cluster.devices_per_node} ` +
    `${(cluster.device || {}).name || ""} (${cluster.backend || "simulated"}) · target ` +
    `${(study.spec.target || {}).metric || "train_loss"} ≤ ${(study.spec.target || {}).value} · ` +
    `${study.probes_done} / ${study.max_probes} probes`;
  renderPlan(data);
  renderRanking(data);
  renderTrials();
  if (!view.insightsFor || view.insightsFor !== data.last_event_id) {
    view.insightsFor = data.last_event_id;  // importances move with each finished probe
    loadInsights();
  }
  view.charts = view.charts || makeCharts();
  updateCharts(view.charts, data);
  view.training = renderTraining(view.training, data);
}

async function load() {
  const error = document.getElementById("error");
  try {
    const pending = window.firstLoad;  // started by the page's head, used once
    window.firstLoad = null;
    render(await fetchJSON(`/dashboard/api/studies/${encodeURIComponent(studyId)}`, pending));
    error.hidden = true;
  } catch (e) {
    error.textContent = `Could not load the study: ${e.message}`;
    error.hidden = false;
  }
  follow();
}

/* Refetch once per burst of events: a probe's start and finish often arrive together. */
function schedule() {
  clearTimeout(view.timer);
  view.timer = setTimeout(load, 200);
}

/* While the study is active, listen to its event stream (polling when the stream fails). */
function follow() {
  const training = view.data && view.data.training;
  const active = view.data && (!TERMINAL.includes(view.data.study.state) ||
    Boolean(training && !TERMINAL.includes(training.state)));
  document.getElementById("live").hidden = !active;
  if (!active) {
    if (view.stream) view.stream.close();
    view.stream = null;
    return;
  }
  if (view.stream || !window.EventSource) {
    if (!window.EventSource) view.timer = setTimeout(load, 2000);
    return;
  }
  view.stream = new EventSource(`/v1/studies/${encodeURIComponent(studyId)}/events?after=${view.data.last_event_id}`);
  EVENT_KINDS.forEach((kind) => view.stream.addEventListener(kind, schedule));
  view.stream.onerror = () => {  // the server ended the stream or went away: fall back to polling
    view.stream.close();
    view.stream = null;
    view.timer = setTimeout(load, 2000);
  };
}

document.querySelectorAll("#trials th[data-sort]").forEach((th) => th.addEventListener("click", () => {
  const key = th.dataset.sort;
  view.sort = { key, dir: view.sort.key === key ? -view.sort.dir : 1 };
  if (view.data) renderTrials();
}));
document.getElementById("filter").addEventListener("input", () => view.data && renderTrials());
document.getElementById("state-filter").addEventListener("change", () => view.data && renderTrials());

load();
