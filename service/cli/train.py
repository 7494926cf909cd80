"""``ttc train SPEC``: tune as ``ttc tune`` does, then train to the target from the study's best state,
re-planned at checkpoints (issue 13). Embedded by default (SQLite and a local Ray, as ``ttc tune``),
or on a service with ``--server``.

Exit codes (``service.cli.exit_codes``): 0 the target was reached, 2 a bad spec or option, 3 the target
was not reached (no plan, or the run stopped short of it), 1 an internal error or a run segment that
failed on the cluster, 4 the service is unreachable or refused the call, 130 interrupted (Ctrl-C:
the training is cancelled, and its study when it was still tuning).
"""

from __future__ import annotations

import json
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
from service.cli.plan import seconds_text

if TYPE_CHECKING:
    from predictor.training import TrainingPlanner
    from predictor.types import ProbeResult
    from service.settings import Settings
    from worker.spec import Spec

err = make_console(stderr=True)
out = make_console()


def _fail(code: int, message: str) -> typer.Exit:
    err.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    return typer.Exit(code)


def train(
    spec_path: Annotated[Path, typer.Argument(help="job spec, YAML or JSON")],
    as_json: Annotated[bool, typer.Option("--json", help="print the Training result JSON only")] = False,
    server: Annotated[str | None, typer.Option(help="train on a ttc service at this URL")] = None,
    max_overhead: Annotated[float | None, typer.Option(
        "--max-overhead", help="tuning (study and re-plans) may cost at most this share of the run "
                               "(overrides the spec's budget.max_overhead)")] = None,
    max_iterations: Annotated[int, typer.Option(
        min=1, help="the run stops here when the target is not reached (exit 3)")] = 100_000,
) -> None:
    """Tune, then train to the target from the study's best state, re-planning at checkpoints."""
    from service.settings import get_settings

    spec = _load(spec_path, max_overhead)
    settings = get_settings()
    if server is not None:
        payload = _train_on_server(server, spec, settings.api_token, max_iterations, as_json)
    else:
        payload = _train_locally(spec, settings, max_iterations, as_json)
    if as_json:
        print(json.dumps(payload, indent=2))
    else:
        print_training(payload)
    if not payload["reached"]:
        raise _fail(EXIT_UNREACHABLE, f"the target was not reached ({payload['iterations']} iterations, "
                                      f"final loss {payload['final_loss']})")


def _load(spec_path: Path, max_overhead: float | None) -> Spec:
    from worker.spec import SpecError, load_spec, parse_spec

    try:
        spec = load_spec(spec_path)
        if max_overhead is not None:
            data = spec.model_dump(mode="json")
            data["budget"] = {**data.get("budget", {}), "max_overhead": max_overhead}
            spec = parse_spec(data)
    except SpecError as exc:
        source = f"{spec_path}" + ("" if max_overhead is None else f" with --max-overhead {max_overhead:g}")
        raise _fail(EXIT_BAD_INPUT, f"invalid spec {source}:\n{exc}") from None
    return spec


def _train_locally(spec: Spec, settings: Settings, max_iterations: int, as_json: bool) -> dict[str, Any]:
    from predictor import TargetUnreachable
    from service.db import Database
    from service.runners.held_lease import HeldLease, local_owner
    from service.runners.study_runner import Progress, StudyCancelled, StudyRunner
    from service.runners.training_runner import TrainingFailed, TrainingRunner
    from worker.spec import SpecError

    quiet_ray()
    db = Database(settings.database_url)
    db.migrate()

    def on_segment(result: ProbeResult, role: str, planner: TrainingPlanner) -> None:
        if not as_json:
            eta = current_eta(planner.eta, result.end_iteration) if role != "fork" else None
            _print_segment("fork " if role == "fork" else "run  ", result, result.iterations, eta)

    def on_study(progress: Progress) -> None:
        """A warm-up segment's ETA (predictor.study: wide unless a finished run of the job is a prior)."""
        if not as_json and progress.eta is not None and progress.last is not None:
            _print_segment("warm-up", progress.last, progress.last.end_iteration, progress.eta)

    studies = StudyRunner(db, settings.ray_address, on_progress=on_study)
    runner = TrainingRunner(db, settings.ray_address, studies=studies, on_segment=on_segment)
    owner = local_owner()
    study_id = runner.submit(spec, max_iterations=max_iterations, owner=owner,
                             lease_seconds=settings.lease_seconds)
    if not as_json:
        err.print(f"study {study_id} · training recorded in {settings.database_url}", highlight=False)
    lease = HeldLease(db, study_id, owner, settings.lease_seconds,
                      on_interrupt=lambda: runner.fail(study_id, "cancelled", INTERRUPTED))
    try:
        with lease:
            result = runner.run(study_id, lease.lost)
    except SpecError as exc:  # InfeasibleCluster
        runner.fail(study_id, "failed", f"{type(exc).__name__}: {exc}")
        raise _fail(EXIT_BAD_INPUT, str(exc)) from None
    except TargetUnreachable as exc:
        raise _fail(EXIT_UNREACHABLE, f"the study found no plan: {exc}") from None
    except TrainingFailed as exc:
        raise _fail(EXIT_INTERNAL, f"a run segment failed on the cluster: {exc}") from None
    except StudyCancelled as exc:
        raise _fail(EXIT_INTERNAL, lease.why_stopped(exc)) from None
    except KeyboardInterrupt:
        raise _fail(EXIT_INTERRUPTED, f"interrupted: the training of study {study_id} cancelled") from None
    return result.to_dict()


def _train_on_server(
    server: str, spec: Spec, token: str | None, max_iterations: int, as_json: bool
) -> dict[str, Any]:
    from service.client.studies import RemoteError
    from service.client.trainings import train_remote

    def show(kind: str, data: dict[str, Any]) -> None:
        if as_json:
            return
        if kind == "submitted":
            err.print(f"study {data['study_id']} · training on {server}", highlight=False)
        elif kind == "progress" and data.get("result"):
            result = data["result"]
            entry = current_eta(result.get("eta") or [], result["iterations"])
            eta = f" · {eta_text(entry)}" if entry is not None else ""
            err.print(f"  {data['segments']} segments · {result['iterations']} it · loss "
                      f"{result['final_loss']}{eta}", highlight=False)

    try:
        outcome = train_remote(server, spec, token, max_iterations, on_update=show)
    except RemoteError as exc:
        raise _fail(EXIT_BAD_INPUT if exc.bad_input else EXIT_SERVICE, str(exc)) from None
    if outcome.result is None:
        code = EXIT_UNREACHABLE if outcome.state == "unreachable" else EXIT_INTERNAL
        raise _fail(code, f"training of study {outcome.study_id} ended {outcome.state}: {outcome.error}")
    if outcome.state == "failed":
        raise _fail(EXIT_INTERNAL, f"training of study {outcome.study_id} failed: {outcome.error}")
    return outcome.result


def _print_segment(what: str, result: ProbeResult, iterations: int, eta: dict[str, Any] | None) -> None:
    """One line on stderr per segment as it arrives: what it was, where it ended, the ETA then."""
    err.print(f"  {what} {escape(result.probe_key)}: {iterations} it → loss {result.final_loss:.4g}"
              + (f" · {eta_text(eta)}" if eta is not None else "")
              + (f" [red]{escape(result.error)}[/]" if result.error else ""), highlight=False)


def current_eta(etas: list[dict[str, Any]], iteration: int) -> dict[str, Any] | None:
    """The ETA read at ``iteration``, the run's end now, if one was: the segment that reached the
    target has none (nothing is left), and an earlier checkpoint's ETA printed beside it would read
    as time still to go."""
    return etas[-1] if etas and etas[-1]["iteration"] == iteration else None


def eta_text(entry: dict[str, Any]) -> str:
    """One checkpoint's ETA (predictor.eta): the time left, p50 with its p10–p90."""
    return (f"ETA {seconds_text(entry['remaining_p50'])} left (p10–p90 {seconds_text(entry['remaining_p10'])}"
            f"–{seconds_text(entry['remaining_p90'])})")


def print_training(result: dict[str, Any]) -> None:
    """The phases of the run, then the result, for people."""
    from service.cli.plan import _config_text

    for number, phase in enumerate(result["phases"], 1):
        out.print(f"[bold]phase {number}[/] {_config_text(phase['config'])}", highlight=False)
        out.print(f"  {phase['iterations']} it · {phase['cluster_seconds']:.4g} cluster-seconds · loss "
                  f"{_loss(phase['loss_in'])} → {_loss(phase['loss_out'])} · {escape(phase['reason'] or '')}",
                  highlight=False)
    verdict = "[green]reached the target[/]" if result["reached"] else "[red]did not reach the target[/]"
    out.print(f"{verdict} at iteration {result['iterations']} · TTC {seconds_text(result['ttc_seconds'])} "
              f"(tuning {seconds_text(result['tuning_cluster_seconds'])} of it) · final loss "
              f"{_loss(result['final_loss'])}", highlight=False)


def _loss(value: float | None) -> str:
    return "–" if value is None else f"{value:.4g}"
