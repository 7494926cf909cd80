/* Studies list: one row per study, refreshed every few seconds while any study is active. */
"use strict";

const REFRESH_MS = 2000;

function studyRow(s) {
  const spent = s.probe_cluster_seconds !== null
    ? `${s.probes_done} · ${fmtSeconds(s.probe_cluster_seconds)} cluster`
    : `${s.probes_done}` + (s.probes_running ? ` (+${s.probes_running} running)` : "");
  return el("tr", { "data-study": s.id, "data-state": s.state },
    el("td", { class: "mono" }, el("a", { href: `/studies/${s.id}` }, s.id)),
    el("td", {}, s.workload || "—"),
    el("td", {}, badge(s.state), s.error ? el("span", { class: "muted", title: s.error }, " ⓘ") : null),
    el("td", {}, progressBar(s.probes_done, s.max_probes)),
    el("td", { class: "num" }, fmtSeconds(s.best_predicted_ttc)),
    el("td", { class: "num" }, spent),
    el("td", { class: "muted" }, new Date(s.created_at).toLocaleString()),
  );
}

async function refresh() {
  const error = document.getElementById("error");
  let active = true;
  try {
    const { data } = await fetchJSON("/dashboard/api/studies");
    document.querySelector("#studies tbody").replaceChildren(...data.map(studyRow));
    document.getElementById("empty").hidden = data.length > 0;
    active = data.some((s) => !TERMINAL.includes(s.state));
    error.hidden = true;
  } catch (e) {
    error.textContent = `Could not load studies: ${e.message}`;
    error.hidden = false;
  }
  document.getElementById("live").hidden = !active;
  setTimeout(refresh, active ? REFRESH_MS : 5 * REFRESH_MS);
}

refresh();
