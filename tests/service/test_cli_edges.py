"""The CLI at its edges (issue 15, found 7): exit 4 when a service is unreachable or refuses the
call, lazy imports, no files created by reading, ``--config`` parsed as JSON before it is tried as
a path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
import yaml

from service.app import create_app
from service.runners.run_configs import ConfigArgumentError, parse_config_argument
from service.settings import Settings
from tests.service.service_helpers import free_port, tiny_spec, wait_for

HEAVY = ("torch", "ray", "optuna", "sqlalchemy", "fastapi", "numpy", "httpx")


def _ttc(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from service.cli.main import main; main()", *args],
                          capture_output=True, text=True, timeout=300, env=env)


@pytest.fixture
def refusing_server(tmp_path: Path) -> Iterator[str]:
    """A real API (no studies) with a token the CLI will not send: every mutating call is a 401."""
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'server.db'}", api_token="not-yours")
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(settings, run_studies=False), host="127.0.0.1",
                                           port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started, timeout=30, what="the test server")
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def test_the_cli_module_imports_nothing_heavy() -> None:
    code = f"import sys, service.cli.main; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_help_works(tmp_path: Path) -> None:
    done = _ttc("--help")
    assert done.returncode == 0 and "serve" in done.stdout


def test_listing_studies_creates_no_database(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key != "TTC_DATABASE_URL"}
    env["HOME"] = str(tmp_path)
    done = _ttc("studies", "list", env=env)
    assert done.returncode == 0, done.stderr
    assert "0 of 0 studies" in done.stdout
    shown = _ttc("studies", "show", "abc123", env=env)
    assert shown.returncode == 2 and "no study" in shown.stderr
    assert not (tmp_path / ".ttc").exists()


def test_an_unreachable_server_exits_4(tmp_path: Path) -> None:
    down = _ttc("studies", "list", "--server", f"http://127.0.0.1:{free_port()}")
    assert down.returncode == 4
    assert "cannot reach" in down.stderr and "internal error" not in down.stderr


def test_a_refused_call_exits_4(tmp_path: Path, refusing_server: str) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(tiny_spec()))
    env = {key: value for key, value in os.environ.items() if key != "TTC_API_TOKEN"}
    refused = _ttc("tune", str(path), "--server", refusing_server, env=env)
    assert refused.returncode == 4
    assert "401" in refused.stderr


def test_config_json_is_parsed_before_it_is_tried_as_a_path() -> None:
    configs = [{"strategy": "sync", "nodes": 1, "devices_per_node": 2, "batch_size": 32, "lr": lr,
                "momentum": 0.9, "optimizer": "sgd", "options": {}} for lr in (0.1, 0.3)]
    argument = json.dumps(configs)
    assert len(argument) > 255  # longer than any file name may be
    targets = parse_config_argument(argument, with_baseline=False)
    assert [t.config.lr for t in targets] == [0.1, 0.3]


def test_config_numbers_are_bounded(tmp_path: Path) -> None:
    config = {"strategy": "sync", "nodes": 1, "devices_per_node": 2, "batch_size": 2**80}
    with pytest.raises(ConfigArgumentError, match="batch_size"):
        parse_config_argument(json.dumps(config), with_baseline=False)
    with pytest.raises(ConfigArgumentError, match="neither valid JSON"):
        parse_config_argument(str(tmp_path / "missing.json"), with_baseline=False)
    (tmp_path / "config.json").write_text(json.dumps({**config, "batch_size": 16}))
    (target,) = parse_config_argument(str(tmp_path / "config.json"), with_baseline=False)
    assert target.config.batch_size == 16


@pytest.mark.parametrize("option", [("--max-ttc", "-1"), ("--gate-probability", "1.5"),
                                    ("--max-ttc", "soon")])
def test_an_option_out_of_range_is_bad_input_naming_it(tmp_path: Path, option: tuple[str, str]) -> None:
    """The installed ``ttc`` (not a test runner's standalone call) reports an option's bad value as
    bad input, exit 2, naming the option, not as an internal error: typer 0.29 raises the
    exceptions of the click it vendors, which the CLI's edge did not recognise as click's."""
    spec = tmp_path / "job.yaml"
    spec.write_text(yaml.safe_dump(tiny_spec()))
    env = {**os.environ, "TTC_DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}"}
    done = _ttc("tune", str(spec), *option, env=env)
    assert done.returncode == 2, done.stderr
    assert option[0] in done.stderr and "internal error" not in done.stderr
