"""A PostgreSQL server of the test's own (initdb into a temporary directory, a free port), so a test
can stop or kill it without touching the machine's shared server on 5432."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from service.db.optuna_mirror import dispose_optuna_storages
from tests.service.service_helpers import free_port

BINARIES = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name))


def available() -> bool:
    """initdb and pg_ctl are installed, and a non-root user can run them."""
    return bool(BINARIES) and (os.geteuid() != 0 or shutil.which("runuser") is not None)


class PrivatePostgres:
    def __init__(self) -> None:
        self.bin = BINARIES[-1]
        self.dir = Path(tempfile.mkdtemp(prefix="ttc-pg-"))
        self.data = self.dir / "data"
        self.port = free_port()
        self.url = f"postgresql+psycopg2://postgres@127.0.0.1:{self.port}/postgres"
        self._as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self._as:
            shutil.chown(self.dir, "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run([*self._as, str(self.bin / tool), *args], check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.dir / "log"), "-w", "start")

    def stop(self) -> None:
        """A clean, fast shutdown (``pg_ctl stop -m fast``): every connection is dropped."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def kill(self) -> None:
        """SIGKILL to the postmaster, as a crashed host would; waits for its backends to go."""
        pid = int((self.data / "postmaster.pid").read_text().split()[0])
        children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while any(Path(f"/proc/{p}").exists() for p in [str(pid), *children]) and time.monotonic() < deadline:
            time.sleep(0.2)  # backends notice their postmaster's death and exit

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError):  # already down
            self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@contextmanager
def running() -> Iterator[PrivatePostgres]:
    """A private server, removed afterwards (a test module's fixture; skips where it cannot run)."""
    if not available():
        pytest.skip("needs PostgreSQL's initdb and pg_ctl (and runuser when root)")
    server = PrivatePostgres()
    try:
        server.start()
        yield server
    finally:
        dispose_optuna_storages()
        server.close()
