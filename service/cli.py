"""The ``ttc`` command line (DESIGN.md §7 *CLI*).

Exit codes: 0 plan/run reached, 1 internal error, 2 bad spec or config, 3 target not reachable
within the budget.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import math
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from predictor import TargetUnreachable
from predictor.types import json_safe
from service.cli_progress import TuneProgress
from service.cli_studies import studies_app
from service.db import Database
from service.orchestration import StudyRunner
from service.run_configs import (
    ConfigArgumentError,
    RunTarget,
    check_fits,
    execute_configs,
    parse_config_argument,
    predict_config,
)
from service.settings import get_settings
from worker.spec import Spec, SpecError, load_spec

EXIT_OK, EXIT_INTERNAL, EXIT_BAD_INPUT, EXIT_UNREACHABLE = 0, 1, 2, 3

app = typer.Typer(add_completion=False, help="Find the training configuration that converges soonest.")
app.add_typer(studies_app, name="studies")
err = Console(stderr=True)
out = Console()

SpecArg = Annotated[Path, typer.Argument(help="job spec, YAML or JSON")]
JsonOpt = Annotated[bool, typer.Option("--json", help="machine-readable output only")]
MaxTtcOpt = Annotated[float | None, typer.Option(
    "--max-ttc", help="exit 3 when the plan's predicted TTC exceeds this many seconds (a CI gate)")]


def _fail(code: int, message: str) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(code)


def _emit(payload: Any, as_json: bool, out_file: Path | None = None) -> None:
    text = json.dumps(json_safe(payload), indent=2)
    if out_file is not None:
        out_file.write_text(text + "\n")
    if as_json:
        print(text)


def _progress(as_json: bool, max_probes: int) -> TuneProgress | None:
    """The live display, for people only: not with --json, not when stderr is a pipe or a CI log."""
    return None if as_json or not err.is_terminal else TuneProgress(err, max_probes)


@app.command()
def tune(
    spec_path: SpecArg,
    as_json: JsonOpt = False,
    out_file: Annotated[Path | None, typer.Option("--out", help="also write the plan here")] = None,
    server: Annotated[str | None, typer.Option(help="run on a ttc service at this URL")] = None,
    max_ttc: MaxTtcOpt = None,
) -> None:
    """Probe the search space and print the plan with the lowest predicted time to convergence."""
    try:
        spec = load_spec(spec_path)
    except SpecError as exc:
        raise _fail(EXIT_BAD_INPUT, f"invalid spec {spec_path}:\n{exc}") from None
    settings = get_settings()
    if server is not None:
        payload = _tune_on_server(server, spec, settings.api_token, as_json)
    else:
        payload = _tune_locally(spec, settings.database_url, settings.ray_address, as_json)
    _emit(payload, as_json, out_file)
    if not as_json:
        _print_plan(payload)
    predicted = json_safe(payload)["predicted"]["ttc_seconds"]
    if max_ttc is not None and (predicted is None or predicted > max_ttc):
        raise _fail(EXIT_UNREACHABLE, f"the plan's predicted TTC {_seconds(predicted)} exceeds "
                                      f"--max-ttc {max_ttc:g}s")


def _tune_locally(spec: Spec, database_url: str, ray_address: str | None, as_json: bool) -> dict[str, Any]:
    db = Database(database_url)
    db.migrate()
    bar = _progress(as_json, spec.budget.max_probes)
    on_progress = None if bar is None else (lambda p: bar.update(p.probes_done, p.best_ttc))
    runner = StudyRunner(db, ray_address, on_progress=on_progress)
    study_id = runner.submit(spec)
    if not as_json:
        err.print(f"study {study_id} · recorded in {database_url}", highlight=False)
    try:
        with bar or contextlib.nullcontext():
            plan = runner.run(study_id)
    except TargetUnreachable as exc:
        raise _fail(EXIT_UNREACHABLE, str(exc)) from None
    return plan.to_dict()


def _tune_on_server(server: str, spec: Spec, token: str | None, as_json: bool) -> dict[str, Any]:
    """The remote half of ``tune``: same plan, same exit codes as the local mode."""
    from service.remote import RemoteError, tune_remote

    bar = _progress(as_json, spec.budget.max_probes)
    finished = 0

    def show(kind: str, data: dict[str, Any]) -> None:
        nonlocal finished
        if kind == "submitted":
            err.print(f"study {data['study_id']} · on {server}", highlight=False)
        elif kind == "probe_finished" and bar is not None:
            finished += 1
            bar.update(finished, data.get("predicted_ttc"))

    try:
        with bar or contextlib.nullcontext():
            outcome = tune_remote(server, spec, token, on_event=None if as_json else show)
    except RemoteError as exc:
        raise _fail(EXIT_BAD_INPUT if exc.bad_input else EXIT_INTERNAL, str(exc)) from None
    if outcome.state == "unreachable":
        raise _fail(EXIT_UNREACHABLE, outcome.error or "target unreachable within the budget")
    if outcome.plan is None:
        raise _fail(EXIT_INTERNAL, f"study {outcome.study_id} ended {outcome.state}: {outcome.error}")
    return outcome.plan


def _seconds(value: float | None) -> str:
    """Seconds for people; ``None`` is an unbounded (JSON-safe infinite) value."""
    return "∞" if value is None or not math.isfinite(value) else f"{value:.4g}s"


def _print_plan(plan: dict[str, Any]) -> None:
    plan = json_safe(plan)
    config, predicted, baseline = plan["config"], plan["predicted"], plan["baseline"]
    speedup = (baseline["predicted_ttc_seconds"] or math.inf) / predicted["ttc_seconds"]
    out.print(f"[bold]Plan for study {plan['study_id']}[/]", highlight=False)
    out.print(
        f"  config     {config['strategy']} · {config['nodes']}×{config['devices_per_node']} devices · "
        f"g={config['groups']} · batch {config['batch_size']}/device · lr {config['lr']:.4g} · "
        f"momentum {config['momentum']:.2g} · {config['optimizer']}",
        highlight=False,
    )
    out.print(
        f"  predicted  TTC {_seconds(predicted['ttc_seconds'])} (80%: {_seconds(predicted['ttc_low'])}–"
        f"{_seconds(predicted['ttc_high'])}) = {predicted['seconds_per_iteration']:.3g} s/it × "
        f"{predicted['iterations']:.0f} it",
        highlight=False,
    )
    out.print(
        f"  baseline   sync, lr {baseline['config']['lr']:.4g}, momentum 0.9: "
        f"{_seconds(baseline['predicted_ttc_seconds'])} → speedup {speedup:.2f}×",
        highlight=False,
    )
    out.print(
        f"  probes     {plan['probes']['count']} · {plan['probes']['cluster_seconds']:.4g} cluster-seconds",
        highlight=False,
    )


def _load_inputs(spec_path: Path, config: str, with_baseline: bool) -> tuple[Spec, list[RunTarget]]:
    """The spec and the configurations to train, checked against the spec's cluster (exit 2 if bad)."""
    try:
        spec = load_spec(spec_path)
        targets = parse_config_argument(config, with_baseline=with_baseline)
        for target in targets:
            check_fits(spec, target.config)
    except (SpecError, ConfigArgumentError) as exc:
        raise _fail(EXIT_BAD_INPUT, str(exc)) from None
    return spec, targets


@app.command()
def run(
    spec_path: SpecArg,
    config: Annotated[str, typer.Option("--config", help="plan file, config JSON/file, or a JSON list")],
    max_seconds: Annotated[float, typer.Option(help="cluster seconds before giving up")] = math.inf,
    max_iterations: Annotated[int, typer.Option(help="iterations before giving up")] = 100_000,
    with_baseline: Annotated[bool, typer.Option(help="with a plan, also run its baseline")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Train configurations to the target and print the measured time to convergence."""
    spec, targets = _load_inputs(spec_path, config, with_baseline)
    settings = get_settings()
    db = Database(settings.database_url)
    db.migrate()
    results = execute_configs(spec, targets, db, settings.ray_address, max_seconds, max_iterations)
    if as_json:
        _emit(results if len(results) > 1 else results[0], True)
    else:
        for result in results:
            _print_run(result)
    if not all(r["reached"] for r in results):
        raise typer.Exit(EXIT_UNREACHABLE)


def _print_run(result: dict[str, Any]) -> None:
    c = result["config"]
    label = result.get("label", "config")
    line = (
        f"[bold]{label}[/] {c['strategy']} g={c['groups']} b={c['batch_size']} lr={c['lr']:.4g} "
        f"μ={c['momentum']:.2g}: "
    )
    if result["reached"]:
        line += (
            f"reached in {result['ttc_seconds']:.4g}s ({result['iterations']} it, "
            f"{result['seconds_per_iteration']:.3g} s/it)"
        )
    else:
        line += f"[red]did not reach the target[/] in {result['iterations']} it"
    predicted = result.get("predicted_ttc_seconds")
    if predicted:
        line += f" · predicted {predicted:.4g}s"
    out.print(line, highlight=False)


@app.command()
def predict(
    spec_path: SpecArg,
    config: Annotated[str, typer.Option("--config", help="config JSON or file")],
    as_json: JsonOpt = False,
) -> None:
    """Predict one configuration's TTC from a single short probe of it."""
    spec, targets = _load_inputs(spec_path, config, with_baseline=False)
    predictions = predict_config(spec, [t.config for t in targets], get_settings().ray_address)
    _emit(predictions if len(predictions) > 1 else predictions[0], True)
    if any(p["predicted"] is None for p in predictions):
        raise typer.Exit(EXIT_UNREACHABLE)


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="default TTC_HOST or 127.0.0.1")] = None,
    port: Annotated[int | None, typer.Option(help="default TTC_PORT or 8000")] = None,
) -> None:
    """Run the REST service (and the dashboard): studies run here, probes on Ray."""
    import uvicorn

    from service.app import create_app

    settings = get_settings()
    logging.getLogger().setLevel(logging.INFO)
    app = create_app(settings)
    # torch, Ray and Optuna leave ~300k long-lived objects; a full collection walking them takes
    # ~150 ms, a stall every client would see. Frozen, they are never walked again.
    gc.collect()
    gc.freeze()
    uvicorn.run(app, host=host or settings.host, port=port or settings.port,
                log_level="info", access_log=False)


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        code = app(standalone_mode=False)  # not standalone, click returns an Exit's code instead of raising
        sys.exit(code if isinstance(code, int) else EXIT_OK)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except SystemExit:
        raise
    except Exception as exc:  # the CLI's edge: report, never dump a traceback on the user
        import click

        if isinstance(exc, click.exceptions.ClickException):
            exc.show()
            sys.exit(EXIT_BAD_INPUT)
        if isinstance(exc, click.exceptions.Abort):
            sys.exit(130)
        logging.getLogger("ttc").debug("internal error", exc_info=True)
        err.print(f"[bold red]internal error:[/] {type(exc).__name__}: {exc}", highlight=False)
        sys.exit(EXIT_INTERNAL)
