"""``ttc studies list`` / ``ttc studies show ID``: the dashboard's view of studies, in a terminal.

Both read the local database (``TTC_DATABASE_URL``) or, with ``--server URL``, the service's
dashboard JSON — built by the same ``service.dashboard.views`` functions, so either source prints
the same columns. Reading never creates anything: without a database file there are no studies.
A server that cannot be reached or refuses the call exits 4.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Column, Table

from service.cli.exit_codes import EXIT_BAD_INPUT, EXIT_SERVICE
from service.cli.output import make_console

if TYPE_CHECKING:
    from service.db import Database

studies_app = typer.Typer(help="Studies recorded in the database or on a server.", no_args_is_help=True)
out = make_console()

ServerOpt = Annotated[str | None, typer.Option(help="read from a ttc service at this URL")]
JsonOpt = Annotated[bool, typer.Option("--json", help="machine-readable output only")]
EXIT_NOT_FOUND = EXIT_BAD_INPUT


def _fail(code: int, message: str) -> typer.Exit:
    make_console(stderr=True).print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    return typer.Exit(code)


def _remote(server: str, path: str) -> dict[str, Any]:
    import httpx

    url = server.rstrip("/") + path
    try:
        response = httpx.get(url, timeout=30)
    except httpx.TransportError as exc:
        raise _fail(EXIT_SERVICE, f"cannot reach {server}: {type(exc).__name__}: {exc}") from None
    if response.status_code == 404:
        raise LookupError(response.json().get("detail", path))
    if response.status_code != 200:
        refusal = f"{response.status_code} {response.text[:200]}"
        raise _fail(EXIT_SERVICE, f"{server} refused GET {path}: {refusal}")
    return response.json()


def _existing_database() -> Database | None:
    """The local database, or None where its SQLite file does not exist (it is not created)."""
    from sqlalchemy.engine import make_url

    from service.db import Database
    from service.settings import get_settings

    url = get_settings().database_url
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        from pathlib import Path

        if not Path(parsed.database).expanduser().is_file():
            return None
    db = Database(url)
    db.migrate()
    return db


def _local_list(limit: int) -> dict[str, Any]:
    from service.dashboard import views
    from service.db import measurement_store, study_store

    db = _existing_database()
    if db is None:
        return {"data": [], "count": 0}
    with db.read() as session:
        rows, count = study_store.list_studies(session, limit=limit)
        totals = measurement_store.probe_totals(session, study_ids=[s.id for s in rows])
        data = [views.study_summary(s, totals.get(s.id, measurement_store.ProbeTotals())) for s in rows]
    return {"data": data, "count": count}


def _local_show(study_id: str) -> dict[str, Any]:
    from service.dashboard import views
    from service.db import measurement_store, study_store

    db = _existing_database()
    if db is None:
        raise LookupError(f"no study {study_id!r} (no database yet)")
    with db.read() as session:
        study = study_store.get_study(session, study_id=study_id)
        if study is None:
            raise LookupError(f"no study {study_id!r}")
        return views.study_detail(study, measurement_store.list_probes(session, study_id=study_id),
                                  measurement_store.list_runs(session, study_id=study_id),
                                  study_store.last_event_id(session, study_id=study_id))


def _seconds(value: float | None) -> str:
    return "—" if value is None or not math.isfinite(value) else f"{value:.4g}s"


@studies_app.command("list")
def list_command(server: ServerOpt = None, limit: int = 50, as_json: JsonOpt = False) -> None:
    """Newest studies first: state, progress, best predicted TTC, probes spent."""
    listing = _remote(server, f"/dashboard/api/studies?limit={limit}") if server else _local_list(limit)
    if as_json:
        print(json.dumps(listing, indent=2))
        return
    table = Table("study", "workload", "state", "probes", "best predicted TTC", "created", box=None)
    for s in listing["data"]:
        table.add_row(s["id"], s["workload"] or "—", s["state"], f"{s['probes_done']}/{s['max_probes']}",
                      _seconds(s["best_predicted_ttc"]), s["created_at"][:19].replace("T", " "))
    out.print(table)
    out.print(f"[dim]{len(listing['data'])} of {listing['count']} studies[/]", highlight=False)


@studies_app.command("show")
def show_command(study_id: str, server: ServerOpt = None, as_json: JsonOpt = False) -> None:
    """One study: its plan and the ranking it was chosen from (once done), and every trial."""
    from service.cli.plan import print_plan, print_ranking  # the plan reads as after ``ttc tune``

    try:
        detail = _remote(server, f"/dashboard/api/studies/{study_id}") if server else _local_show(study_id)
    except LookupError as exc:
        raise _fail(EXIT_NOT_FOUND, str(exc)) from None
    if as_json:
        print(json.dumps(detail, indent=2))
        return
    study = detail["study"]
    out.print(f"[bold]Study {study['id']}[/] · {study['workload']} · {study['state']} · "
              f"{study['probes_done']}/{study['max_probes']} probes"
              + (f" · [red]{escape(study['error'])}[/]" if study["error"] else ""), highlight=False)
    if detail["plan"]:
        print_plan(detail["plan"])
        print_ranking(detail["plan"])
    config = Column("config", overflow="fold", min_width=24)
    table = Table("#", config, "s/it", "it to target", "predicted TTC", "state", "prune reason", box=None)
    for t in detail["trials"]:
        to_target = t["iterations_to_target"]
        table.add_row(str(t["number"]), t["key"], _seconds(t["seconds_per_iteration"]),
                      "—" if to_target is None else f"{to_target:.0f}",
                      "beyond evidence" if t.get("beyond_evidence") else _seconds(t["predicted_ttc"]),
                      t["state"], escape(t["prune_reason"] or ""))
    out.print(table)
