"""The ``ttc`` command line (DESIGN.md §7 *CLI*).

Exit codes: 0 plan/run/training reached, 1 internal error (or every probe failed on the cluster), 2 bad
spec or config (or a Ray cluster that cannot hold the spec's cluster), 3 target not reachable
within the budget, 4 the service is unreachable or refused the call (``--server``: connection
failed, 401, 5xx).

Imports of torch, Ray, Optuna, SQLAlchemy and FastAPI happen inside the commands that need them:
``ttc --help`` and ``ttc studies list --server`` then start in a fraction of a second instead of
the ~9 s that importing them all takes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from service.cli.exit_codes import (
    EXIT_BAD_INPUT,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_SERVICE,
    EXIT_UNREACHABLE,
    INTERRUPTED,
)
from service.cli.output import make_console, quiet_ray
from service.cli.plan import print_plan, seconds_text
from service.cli.studies import studies_app
from service.cli.train import train as train_command

if TYPE_CHECKING:
    from predictor.types import ProbeResult
    from service.cli.progress import TuneProgress
    from service.runners.run_configs import RunTarget
    from service.settings import Settings
    from worker.spec import Spec

app = typer.Typer(add_completion=False, help="Find the training configuration that converges soonest.")
app.add_typer(studies_app, name="studies")
app.command("train")(train_command)
err = make_console(stderr=True)
out = make_console()

SpecArg = Annotated[Path, typer.Argument(help="job spec, YAML or JSON")]
JsonOpt = Annotated[bool, typer.Option("--json", help="machine-readable output only")]
MaxTtcOpt = Annotated[float | None, typer.Option(
    "--max-ttc", min=0.0, help="exit 3 unless the plan's TTC is within this many seconds with at least "
                               "--gate-probability (a CI gate)")]
DEFAULT_GATE_PROBABILITY = 0.8  # the gate passes a plan whose forecast's p80 is within the limit
GateProbabilityOpt = Annotated[float, typer.Option(
    "--gate-probability", min=0.0, max=1.0,
    help="the probability P(TTC ≤ --max-ttc) the gate requires, from the plan's forecast")]


def _fail(code: int, message: str) -> typer.Exit:
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    return typer.Exit(code)


def _report_failure(key: str, error: str) -> None:
    """A probe that failed on the cluster, said at once and whole (its prune reason says the same)."""
    err.print(f"[red]probe failed:[/] {escape(key)}: {escape(error)}", highlight=False)


def _emit(payload: Any, as_json: bool, out_file: Path | None = None) -> None:
    from predictor.types import json_safe

    text = json.dumps(json_safe(payload), indent=2)
    if out_file is not None:
        out_file.write_text(text + "\n")
    if as_json:
        print(text)


def _progress(as_json: bool, max_probes: int) -> TuneProgress | None:
    """The live display, for people only: not with --json, not when stderr is a pipe or a CI log."""
    from service.cli.progress import TuneProgress

    return None if as_json or not err.is_terminal else TuneProgress(err, max_probes)


@app.command()
def tune(
    spec_path: SpecArg,
    as_json: JsonOpt = False,
    out_file: Annotated[Path | None, typer.Option("--out", help="also write the plan here")] = None,
    server: Annotated[str | None, typer.Option(help="run on a ttc service at this URL")] = None,
    max_ttc: MaxTtcOpt = None,
    gate_probability: GateProbabilityOpt = DEFAULT_GATE_PROBABILITY,
) -> None:
    """Probe the search space and print the plan with the lowest predicted time to convergence."""
    from predictor.types import json_safe
    from service.settings import get_settings
    from worker.spec import SpecError, load_spec

    try:
        spec = load_spec(spec_path)
    except SpecError as exc:
        raise _fail(EXIT_BAD_INPUT, f"invalid spec {spec_path}:\n{exc}") from None
    settings = get_settings()
    if server is not None:
        payload = _tune_on_server(server, spec, settings.api_token, as_json)
    else:
        payload = _tune_locally(spec, settings, as_json)
    _emit(payload, as_json, out_file)
    if not as_json:
        print_plan(payload)
    if max_ttc is not None:
        _gate(json_safe(payload)["predicted"], max_ttc, gate_probability, as_json)


def _gate(predicted: dict[str, Any], max_ttc: float, required: float, as_json: bool) -> None:
    """The CI gate: pass when P(TTC ≤ ``max_ttc``) ≥ ``required`` on the plan's forecast; fail
    whatever the forecast when the run was measured past the limit without reaching the target."""
    from predictor.quantile_cdf import probability_within

    measured = predicted.get("evidence_seconds")
    if measured is not None and measured > max_ttc:
        raise _fail(EXIT_UNREACHABLE, f"the plan's run takes longer than --max-ttc {max_ttc:g}s: it was "
                                      f"measured for {seconds_text(measured)} without reaching the target")
    chance = probability_within(max_ttc, predicted.get("ttc_p10", predicted.get("ttc_low")),
                                predicted.get("ttc_p50", predicted.get("ttc_seconds")),
                                predicted.get("ttc_p90", predicted.get("ttc_high")), measured)
    verdict = f"P(TTC ≤ {max_ttc:g}s) = {chance:.2f} (the gate requires {required:.2f})"
    if chance < required:
        median = seconds_text(predicted.get("ttc_p50"))
        raise _fail(EXIT_UNREACHABLE, f"{verdict}: the plan's TTC p50 is {median}")
    if not as_json:
        out.print(f"  gate       passed: {verdict}", highlight=False)


def _check_cluster(spec: Spec, ray_address: str | None) -> float:
    """A ``backend: ray`` spec the cluster cannot hold is a bad spec: exit 2 before any study exists.
    Returns the seconds Ray took to start or connect (0 on the simulated backend)."""
    if spec.cluster.backend != "ray":
        return 0.0
    from worker.ray_backend.connect import ensure_ray
    from worker.ray_backend.feasibility import check_feasible
    from worker.spec import SpecError

    started = time.perf_counter()
    ensure_ray(ray_address)
    connected = time.perf_counter() - started
    try:
        check_feasible(spec)
    except SpecError as exc:
        raise _fail(EXIT_BAD_INPUT, str(exc)) from None
    return connected


def _tune_locally(spec: Spec, settings: Settings, as_json: bool) -> dict[str, Any]:
    from predictor import TargetUnreachable
    from service.db import Database
    from service.runners.held_lease import HeldLease, local_owner
    from service.runners.study_runner import StudyCancelled, StudyRunner
    from service.runners.study_wall import StudyWall
    from worker.spec import SpecError

    quiet_ray()
    ray_seconds = _check_cluster(spec, settings.ray_address)
    db = Database(settings.database_url)
    db.migrate()
    bar = _progress(as_json, spec.budget.max_probes)
    on_progress = None if bar is None else (lambda p: bar.update(p.probes_done, p.best_ttc))
    failures: list[str] = []
    results: list[ProbeResult] = []

    def on_probe(result: ProbeResult) -> None:
        results.append(result)
        if result.error:
            failures.append(result.error)
            _report_failure(result.config.key(), result.error)

    runner = StudyRunner(db, settings.ray_address, on_progress=on_progress, on_probe=on_probe)
    owner = local_owner()
    study_id = runner.submit(spec, owner=owner, lease_seconds=settings.lease_seconds)
    if not as_json:
        err.print(f"study {study_id} · recorded in {settings.database_url}", highlight=False)
    lease = HeldLease(db, study_id, owner, settings.lease_seconds,
                      on_interrupt=lambda: runner.cancel(study_id, INTERRUPTED))
    started = time.perf_counter()
    try:
        with lease, bar or contextlib.nullcontext():
            plan = runner.run(study_id, lease.lost)
    except SpecError as exc:  # InfeasibleCluster: Ray nodes left since _check_cluster
        runner.fail(study_id, f"{type(exc).__name__}: {exc}")
        raise _fail(EXIT_BAD_INPUT, str(exc)) from None
    except StudyCancelled as exc:
        raise _fail(EXIT_INTERNAL, lease.why_stopped(exc)) from None
    except KeyboardInterrupt:
        raise _fail(EXIT_INTERRUPTED, f"interrupted: study {study_id} cancelled") from None
    except TargetUnreachable as exc:
        if results and len(failures) == len(results):
            raise _fail(EXIT_INTERNAL, f"every probe failed on the cluster ({len(results)}); the first: "
                                       f"{failures[0]}") from None
        raise _fail(EXIT_UNREACHABLE, str(exc)) from None
    if spec.cluster.backend == "ray" and not as_json:  # where a real cluster's study time went
        wall = StudyWall.of(ray_seconds, time.perf_counter() - started, results)
        err.print(wall.text(), highlight=False)
    return plan.to_dict()


def _tune_on_server(server: str, spec: Spec, token: str | None, as_json: bool) -> dict[str, Any]:
    """The remote half of ``tune``: same plan, same exit codes as the local mode."""
    from service.client.studies import RemoteError, tune_remote

    bar = _progress(as_json, spec.budget.max_probes)
    finished = 0

    def show(kind: str, data: dict[str, Any]) -> None:
        nonlocal finished
        if kind == "submitted" and not as_json:
            err.print(f"study {data['study_id']} · on {server}", highlight=False)
        elif kind == "probe_finished":
            if data.get("error"):
                _report_failure(data.get("key", f"#{data.get('probe')}"), data["error"])
            if bar is not None:
                finished += 1
                bar.update(finished, data.get("predicted_ttc"))
        elif kind == "probes_predicted" and bar is not None:  # the batch told: its predictions
            for row in data["probes"]:
                bar.update(finished, row["predicted_ttc"])

    try:
        with bar or contextlib.nullcontext():
            outcome = tune_remote(server, spec, token, on_event=show)
    except RemoteError as exc:
        raise _fail(EXIT_BAD_INPUT if exc.bad_input else EXIT_SERVICE, str(exc)) from None
    if outcome.state == "unreachable":
        raise _fail(EXIT_UNREACHABLE, outcome.error or "target unreachable within the budget")
    if outcome.plan is None:
        raise _fail(EXIT_INTERNAL, f"study {outcome.study_id} ended {outcome.state}: {outcome.error}")
    return outcome.plan


def _load_inputs(spec_path: Path, config: str, with_baseline: bool) -> tuple[Spec, list[RunTarget]]:
    """The spec and the configurations to train, checked against the spec's cluster (exit 2 if bad)."""
    from service.runners.run_configs import ConfigArgumentError, check_fits, parse_config_argument
    from worker.spec import SpecError, load_spec

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
    server: Annotated[str | None, typer.Option(
        help="record the measured runs on a ttc service at this URL (training still runs here)")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Train configurations to the target and print the measured time to convergence."""
    from service.client.runs import check_service, record_runs_remote
    from service.client.studies import RemoteError
    from service.db import Database
    from service.runners.run_configs import record_runs
    from service.settings import get_settings

    spec, targets = _load_inputs(spec_path, config, with_baseline)
    settings = get_settings()
    quiet_ray()
    try:
        if server is not None:
            check_service(server)
        results = _execute(spec, targets, settings.ray_address, max_seconds, max_iterations)
        if server is not None:
            record_runs_remote(server, settings.api_token, targets, results)
        else:
            db = Database(settings.database_url)
            db.migrate()
            record_runs(db, targets, results)
    except RemoteError as exc:
        raise _fail(EXIT_BAD_INPUT if exc.bad_input else EXIT_SERVICE, str(exc)) from None
    if as_json:
        _emit(results if len(results) > 1 else results[0], True)
    else:
        for result in results:
            _print_run(result)
    if not all(r["reached"] for r in results):
        raise typer.Exit(EXIT_UNREACHABLE)


def _execute(
    spec: Spec, targets: list[RunTarget], ray_address: str | None, max_seconds: float, max_iterations: int
) -> list[dict[str, Any]]:
    """``execute_configs``, with a cluster that cannot hold the spec reported as exit 2."""
    from service.runners.run_configs import execute_configs
    from worker.spec import SpecError

    try:
        return execute_configs(spec, targets, ray_address, max_seconds, max_iterations)
    except SpecError as exc:  # InfeasibleCluster
        raise _fail(EXIT_BAD_INPUT, str(exc)) from None


def _print_run(result: dict[str, Any]) -> None:
    c = result["config"]
    label = result.get("label", "config")
    line = (
        f"[bold]{label}[/] {c['strategy']} {c['nodes']}×{c['devices_per_node']} g={c['groups']} "
        f"b={c['batch_size']} lr={c['lr']:.4g} "
        f"μ={c['momentum']:.2g}: "
    )
    if result["reached"]:
        line += (
            f"reached in {result['ttc_seconds']:.4g}s ({result['iterations']} it, "
            f"{result['seconds_per_iteration']:.3g} s/it)"
        )
    else:
        line += f"[red]did not reach the target[/] in {result['iterations']} it"
        if result.get("error"):
            line += f": {escape(result['error'])}"
    predicted = result.get("predicted_ttc_seconds")
    if predicted is not None and math.isfinite(predicted):
        line += f" · predicted {predicted:.4g}s"
    else:
        line += " · no supported prediction"
    out.print(line, highlight=False)


@app.command()
def predict(
    spec_path: SpecArg,
    config: Annotated[str, typer.Option("--config", help="config JSON or file")],
) -> None:
    """Predict one configuration's TTC from a single short probe of it (printed as JSON)."""
    from predictor.types import Config
    from service.runners.run_configs import predict_config
    from service.settings import get_settings
    from worker.spec import SpecError

    spec, targets = _load_inputs(spec_path, config, with_baseline=False)
    quiet_ray()
    try:
        predictions = predict_config(spec, [t.config for t in targets], get_settings().ray_address)
    except SpecError as exc:  # InfeasibleCluster
        raise _fail(EXIT_BAD_INPUT, str(exc)) from None
    _emit(predictions if len(predictions) > 1 else predictions[0], True)
    unsupported = [p for p in predictions if p["predicted"] is None or p["predicted"]["ttc_seconds"] is None]
    for p in unsupported:
        err.print(f"no supported prediction for {escape(Config.from_dict(p['config']).key())}: "
                  f"{escape(p['confidence']['reason'])}", highlight=False)
    if unsupported:
        raise typer.Exit(EXIT_UNREACHABLE)


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="default TTC_HOST or 127.0.0.1")] = None,
    port: Annotated[int | None, typer.Option(help="default TTC_PORT or 8000")] = None,
    workers: Annotated[int, typer.Option(min=1, max=64, help="API worker processes")] = 1,
    studies: Annotated[bool, typer.Option(help="run studies (in an orchestrator process); "
                                               "--no-studies serves the API only")] = True,
) -> None:
    """Run the REST service and the dashboard: the API in --workers processes, studies in an
    orchestrator process of their own, probes on Ray."""
    from service.serve import serve as run_service
    from service.settings import get_settings

    settings = get_settings()
    logging.getLogger().setLevel(logging.INFO)
    run_service(host or settings.host, port or settings.port, workers, studies)


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    # Run from a workload module's directory, `ttc` imports it as `python -m` would; appended, so
    # a local file never shadows an installed package. The Ray workers get it via runtime_env.
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    try:
        # standalone: typer reports a bad option or argument itself (exit 2, naming it), whichever
        # click it carries (typer 0.29 vendors its own, whose exceptions are not click's), and
        # turns an Exit into the process's exit code
        app()
    except Exception as exc:  # the CLI's edge: report, never dump a traceback on the user
        logging.getLogger("ttc").debug("internal error", exc_info=True)
        err.print(f"[bold red]internal error:[/] {type(exc).__name__}: {escape(str(exc))}", highlight=False)
        sys.exit(EXIT_INTERNAL)
