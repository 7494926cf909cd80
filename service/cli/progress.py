"""The live progress display of ``ttc tune``: probes done / budget, best predicted TTC, elapsed.

A rich progress bar on stderr, for people at a terminal; ``ttc tune`` leaves it out with
``--json`` or when stderr is not a terminal, so CI logs and pipes get no control codes.
"""

from __future__ import annotations

import math
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class TuneProgress:
    """Context manager; ``update`` after each probe, from the local runner or the server's events."""

    def __init__(self, console: Console, max_probes: int) -> None:
        self._best = math.inf
        self._bar = Progress(
            TextColumn("[bold]probes"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("· best predicted TTC [bold]{task.fields[best]}"),
            TextColumn("·"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self._task = self._bar.add_task("tune", total=max_probes, best="—")

    def __enter__(self) -> TuneProgress:
        self._bar.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._bar.stop()

    def update(self, probes_done: int, best_ttc: float | None) -> None:
        if best_ttc is not None and math.isfinite(best_ttc):
            self._best = min(self._best, best_ttc)
        best = f"{self._best:.4g}s" if math.isfinite(self._best) else "—"
        self._bar.update(self._task, completed=probes_done, best=best)
