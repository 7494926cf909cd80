"""``ttc serve``: the API in one or more uvicorn workers, studies in an orchestrator process.

The API workers never run a study (``create_app(run_studies=False)``): a request waits only on
the database, never behind a model fit or Ray's driver. The orchestrator
(``service.runners.orchestrator_process``) is a child process; it follows this one down, even on SIGKILL.
"""

from __future__ import annotations

import gc
import logging
import os
import subprocess
import sys

from fastapi import FastAPI

log = logging.getLogger(__name__)

ORCHESTRATOR_STOP_SECONDS = 30.0


def api_app() -> FastAPI:
    """The app of one API worker (a uvicorn factory: each worker process builds its own)."""
    from service.app import create_app

    app = create_app(run_studies=False)
    # torch and friends leave ~300k long-lived objects; a full collection walking them takes
    # ~150 ms, a stall every client would see. Frozen, they are never walked again.
    gc.collect()
    gc.freeze()
    return app


def start_orchestrator() -> subprocess.Popen[bytes]:
    env = {**os.environ, "TTC_ORCHESTRATOR_PARENT": str(os.getpid())}
    return subprocess.Popen([sys.executable, "-m", "service.runners.orchestrator_process"], env=env)


def stop_orchestrator(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (studies stop resumable, leases released), then SIGKILL if it hangs."""
    if process.poll() is not None:
        log.warning("the orchestrator had already exited with %s", process.returncode)
        return
    process.terminate()
    try:
        process.wait(ORCHESTRATOR_STOP_SECONDS)
    except subprocess.TimeoutExpired:
        log.warning("the orchestrator did not stop within %.0fs; killing it", ORCHESTRATOR_STOP_SECONDS)
        process.kill()
        process.wait()


def serve(host: str, port: int, workers: int, run_studies: bool) -> None:
    import uvicorn

    orchestrator = start_orchestrator() if run_studies else None
    try:
        uvicorn.run("service.serve:api_app", factory=True, host=host, port=port, workers=workers,
                    log_level="info", access_log=False)
    finally:
        if orchestrator is not None:
            stop_orchestrator(orchestrator)
