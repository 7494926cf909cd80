/* Trial page: the probe's lineage curve with the fitted curve and its band, s/it, why it lost. */
"use strict";

Chart.defaults.animation = false;
Chart.defaults.font.family = "system-ui, sans-serif";
Chart.defaults.maintainAspectRatio = false;

const [, , studyId, , trialNumber] = location.pathname.split("/").map(decodeURIComponent);

function fact(name, value) { return [el("dt", {}, name), el("dd", {}, value)]; }

function beyondEvidence(title) {
  return el("span", { class: "beyond", title: title || "" }, "beyond evidence");
}

function renderFacts(d) {
  const t = d.trial;
  const predicted = t.predicted_ttc === null ? "—"
    : t.beyond_evidence ? el("span", {}, beyondEvidence(), ` (extrapolated ${fmtSeconds(t.predicted_ttc)})`)
      : fmtSeconds(t.predicted_ttc);
  document.getElementById("facts").replaceChildren(...[
    fact("s / iteration", `${fmtSeconds(t.seconds_per_iteration)} mean · ${fmtSeconds(d.steady_seconds_per_iteration)} steady (later half)`),
    fact("iterations", `${fmtNumber(d.iterations)} (from iteration ${fmtNumber(d.start_iteration)})`),
    fact("seconds", `${fmtSeconds(d.seconds)} · ${fmtSeconds(t.probe_cluster_seconds)} cluster-seconds`),
    fact("iterations to target", t.reached ? `${fmtNumber(t.iterations_to_target)} (reached)` : fmtNumber(t.iterations_to_target)),
    fact("predicted TTC", predicted),
    d.ranking ? fact("ranking", `#${d.ranking.rank} · ${d.ranking.status} · score ${fmtSeconds(d.ranking.score)}`) : null,
    d.optuna.optuna_state ? fact("Optuna trial", `#${d.optuna.optuna_number} · ${d.optuna.optuna_state.toLowerCase()}` +
      (d.optuna.value !== null && d.optuna.value !== undefined ? ` · value ${fmtSeconds(d.optuna.value)}` : "")) : null,
    fact("probe key", el("span", { class: "mono" }, t.key)),
  ].filter(Boolean).flat());
}

function renderWhy(d) {
  const box = document.getElementById("why");
  box.setAttribute("data-plan", d.is_plan ? "yes" : "no");
  if (d.is_plan) {
    box.className = "";
    box.replaceChildren(el("p", {}, badge("plan"), ` This trial's config is the plan: ${d.ranking.reason}.`));
    return;
  }
  box.className = d.why.length ? "" : "muted";
  box.replaceChildren(d.why.length ? el("ul", { class: "why" }, d.why.map((w) => el("li", {}, w)))
    : el("p", {}, d.trial.state === "running" ? "Still running." : "Nothing set it aside; no plan has ranked it yet."));
}

function chartData(d) {
  const own = d.lineage[d.lineage.length - 1];
  const color = STRATEGY_COLORS[d.trial.config.strategy] || "#2f6fde";
  const points = (curve) => curve.filter(([, y]) => y !== null && y > 0).map(([x, y]) => ({ x, y }));
  const datasets = d.lineage.slice(0, -1).map((p) => ({
    label: `parent #${p.number}`, data: points(p.curve), borderColor: "#98a2b3", borderWidth: 1.2, pointRadius: 0,
  }));
  datasets.push({ label: `trial #${own.number}`, data: points(own.curve), borderColor: color, borderWidth: 2, pointRadius: 0 });
  const fit = d.fit;
  if (fit.k) {
    const series = (ys) => fit.k.map((x, i) => ({ x, y: ys[i] }));
    datasets.push(
      { label: "80% band", data: series(fit.high), borderColor: "transparent", backgroundColor: "rgba(47,111,222,.15)",
        pointRadius: 0, fill: "+1" },
      { label: "band low", data: series(fit.low), borderColor: "transparent", pointRadius: 0, fill: false },
      { label: "fit", data: series(fit.loss), borderColor: "#17202e", borderDash: [6, 4], borderWidth: 1.5, pointRadius: 0 },
    );
  }
  if (d.study.target !== null) {
    const xs = datasets.flatMap((s) => s.data.map((p) => p.x));
    datasets.push({ label: "target", data: [{ x: Math.min(...xs), y: d.study.target }, { x: Math.max(...xs), y: d.study.target }],
      borderColor: "#1a7f4b", borderWidth: 1, pointRadius: 0 });
  }
  return { datasets };
}

function render(d) {
  const t = d.trial;
  document.title = `ttc · trial ${t.number} of ${d.study.id}`;
  document.getElementById("trial-number").textContent = `#${t.number}`;
  const link = document.getElementById("study-link");
  link.textContent = d.study.id;
  link.href = document.getElementById("back").href = `/studies/${encodeURIComponent(d.study.id)}`;
  document.getElementById("state").replaceChildren(badge(t.state));
  document.getElementById("config").textContent = configLabel(t.config);
  renderFacts(d);
  renderWhy(d);
  const note = document.getElementById("fit-note"), empty = document.getElementById("fit-empty");
  if (d.fit.k) {
    note.replaceChildren(d.fit.beyond_evidence ? beyondEvidence() : "", ` ${d.fit.formula}: a ${fmtNumber(d.fit.a)}, ` +
      `p ${fmtNumber(d.fit.p)}, floor c ${fmtNumber(d.fit.c)}, fitted over the lineage's last three quarters; ${d.fit.note}.`);
  } else {
    note.textContent = `No fit: ${d.fit.message}.`;
  }
  empty.hidden = Boolean(d.lineage.some((p) => p.curve.length));
  empty.textContent = "No loss curve was recorded for this trial.";
  new Chart(document.getElementById("chart-trial"), {
    type: "line", data: chartData(d),
    options: { parsing: false, scales: { x: { type: "linear", title: { display: true, text: "iteration" } },
      y: { type: "logarithmic", title: { display: true, text: "loss" } } },
    plugins: { legend: { labels: { filter: (item) => item.text !== "band low" } } },
    interaction: { mode: "nearest", intersect: false } },
  });
}

async function load() {
  try {
    const pending = window.firstLoad;
    window.firstLoad = null;
    render(await fetchJSON(`/dashboard/api/studies/${encodeURIComponent(studyId)}/trials/${trialNumber}`, pending));
  } catch (e) {
    const error = document.getElementById("error");
    error.textContent = `Could not load the trial: ${e.message}`;
    error.hidden = false;
  }
}

load();
