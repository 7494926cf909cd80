"""The plan as ``ttc tune`` and ``ttc studies show`` print it for people (one module both use)."""

from __future__ import annotations

import math
from typing import Any

from rich.markup import escape

from service.cli.output import make_console

out = make_console()  # off a terminal the plan's lines stay whole (a CI log has no width)


def seconds_text(value: float | None) -> str:
    """Seconds for people; ``None`` is an unbounded (JSON-safe infinite) value."""
    return "∞" if value is None or not math.isfinite(value) else f"{value:.4g}s"


def _config_text(config: dict[str, Any]) -> str:
    return (f"{config['strategy']} · {config['nodes']}×{config['devices_per_node']} devices · "
            f"g={config['groups']} · batch {config['batch_size']}/device · lr {config['lr']:.4g} · "
            f"momentum {config['momentum']:.2g} · {config['optimizer']}")


def _number(value: float | None) -> str:
    return "∞" if value is None or not math.isfinite(value) else f"{value:.3g}"


def _forecast_text(predicted: dict[str, Any]) -> str:
    """p50 with its 80% interval (p10–p90); an open p90 is shown as such."""
    p10 = predicted.get("ttc_p10", predicted.get("ttc_low"))
    p50 = predicted.get("ttc_p50", predicted.get("ttc_seconds"))
    p90 = predicted.get("ttc_p90", predicted.get("ttc_high"))
    top = "open (the loss levelled off above the target)" if p90 is None else seconds_text(p90)
    return f"{seconds_text(p50)} (p10–p90: {seconds_text(p10)}–{top})"


def _at_least(predicted: dict[str, Any]) -> str:
    """What was measured of the run without reaching the target: it takes longer than that."""
    seconds, iterations = predicted.get("evidence_seconds"), predicted.get("evidence_iterations")
    if seconds is None or iterations is None:
        return ""
    return (f"; at least {seconds_text(seconds)}: its run measured {iterations:.0f} it "
            "without reaching the target")


def _print_target(target: dict[str, Any] | None) -> None:
    """Where the target sits on the curve and, in the flat region, the lowest target after the knee."""
    if not target:
        return
    out.print(f"  target     {target['reason']}", highlight=False)
    suggested = target.get("suggested")
    if suggested:
        out.print(f"  suggested  target {suggested['value']:g}, after the knee: "
                  f"TTC {_forecast_text(suggested)}", highlight=False)


def print_plan(plan: dict[str, Any]) -> None:
    """The plan, its warm-up, and its forecast: p50 with its p10–p90 whatever the width, where the
    width comes from, how far the evidence supports the point (confidence) and where the target
    sits on the curve (issue 34: a forecast is never withheld)."""
    from predictor.types import json_safe

    plan = json_safe(plan)
    config, predicted, baseline = plan["config"], plan["predicted"], plan["baseline"]
    confidence = plan.get("confidence") or {"level": "low", "reason": ""}
    out.print(f"[bold]Plan for study {plan['study_id']}[/]", highlight=False)
    if plan.get("warmup"):
        warmup = plan["warmup"]
        out.print(f"  warm-up    {warmup['iterations']} it of {_config_text(warmup['config'])}",
                  highlight=False)
        out.print(f"  then       {_config_text(config)}", highlight=False)
    else:
        out.print(f"  config     {_config_text(config)}", highlight=False)
    speed, iterations = _number(predicted.get("seconds_per_iteration")), _number(predicted.get("iterations"))
    out.print(f"  predicted  TTC {_forecast_text(predicted)} = {speed} s/it × {iterations} it"
              f"{_at_least(predicted)}", highlight=False)
    sources = predicted.get("sources")
    if sources:
        shares = " · ".join(f"{name} {share:.0%}" for name, share in sources.items())
        out.print(f"  spread     from {shares}", highlight=False)
    out.print(f"  confidence {confidence['level']}: {confidence['reason']}", highlight=False)
    _print_target(plan.get("target"))
    if plan.get("priors"):
        runs = "run" if plan["priors"] == 1 else "runs"
        out.print(f"  priors     the forecast read {plan['priors']} finished {runs} of this job",
                  highlight=False)
    base = baseline["config"]
    label = (f"sync · {base['nodes']}×{base['devices_per_node']} devices · lr {base['lr']:.4g} · "
             f"momentum {base['momentum']:.3g}")
    if baseline["predicted_ttc_seconds"] is None:
        out.print(f"  baseline   {label}: no supported prediction (not probed far enough)", highlight=False)
    else:
        speedup = (f" → speedup {baseline['predicted_ttc_seconds'] / predicted['ttc_seconds']:.2f}×"
                   if predicted.get("ttc_seconds") else "")
        out.print(f"  baseline   {label}: {seconds_text(baseline['predicted_ttc_seconds'])}{speedup}",
                  highlight=False)
    out.print(
        f"  probes     {plan['probes']['count']} · {plan['probes']['cluster_seconds']:.4g} cluster-seconds",
        highlight=False,
    )
    if plan.get("worth_tuning") is False:
        out.print(f"  not worth tuning: {plan.get('worth_tuning_reason', '')}", highlight=False)


def print_ranking(plan: dict[str, Any]) -> None:
    """The plan's ranking (predictor.ranking rows, best first): every config the plan was chosen
    among, its score, its prediction — or *beyond evidence* where the evidence supports no number —
    and why it lost. Lines stay whole off a terminal, like the plan's."""
    from rich.table import Column, Table

    rows = plan.get("ranking") or []
    if not rows:
        return
    out.print(f"[bold]Ranking[/] · {len(rows)} configs, best first "
              "(score: the risk-aware TTC the plan was chosen on)", highlight=False)
    table = Table("#", Column("config", overflow="fold", min_width=24), "status", "score", "predicted TTC",
                  "confidence", Column("why", overflow="fold"), box=None)
    for rank, row in enumerate(rows, 1):
        predicted = row.get("predicted")
        ttc = (predicted or {}).get("ttc_seconds")
        shown = seconds_text(ttc) if ttc is not None else ("beyond evidence" if predicted else "—")
        confidence = (row.get("confidence") or {}).get("level", "—")
        table.add_row(str(rank), row["config_key"], row["status"], seconds_text(row.get("score")), shown,
                      confidence, escape(row.get("reason") or ""))
    out.print(table)
