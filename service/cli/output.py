"""How the CLI writes: whole lines in CI logs, and no library noise on stderr.

Off a terminal, rich wraps at 80 columns (its default when a stream has no width), so a CI log
showed "· sgd" alone on a line and table headers cut to "pr". A log has no width to fit: there,
lines are written whole and tables as wide as their content. ``COLUMNS`` still wins when set.
Colour and the live progress bar stay terminal-only (rich drops styles off a terminal).

Ray logs to stderr on its own account — on every command, that token authentication is enabled
for the local cluster it starts. That is Ray talking to operators, not ttc to its user: the CLI
keeps Ray's loggers to errors. Ray's import sets its logger's level, so this runs after it.
"""

from __future__ import annotations

import logging
import os

from rich.console import Console

UNBOUNDED_WIDTH = 100_000


def make_console(stderr: bool = False) -> Console:
    """A console that wraps at the terminal's width, or not at all when writing to a log or pipe."""
    console = Console(stderr=stderr)
    if console.is_terminal or "COLUMNS" in os.environ:
        return console
    return Console(stderr=stderr, width=UNBOUNDED_WIDTH, soft_wrap=True)


def quiet_ray() -> None:
    """Only Ray's errors reach stderr (its warnings and info stay in Ray's own log files)."""
    import ray  # noqa: F401  # its import configures the "ray" logger; set the level after that

    logging.getLogger("ray").setLevel(logging.ERROR)

