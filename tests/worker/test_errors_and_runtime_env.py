"""What a failed probe says (type, message, field), and what travels with the job to Ray's nodes."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.errors import describe_error
from worker.ray_backend.runtime_env import job_runtime_env, local_module_path
from worker.spec import Spec

NOT_ALLOWLISTED = {"workload": {"factory": "worker.workloads.digits:digits_mlp"}}


def test_a_validation_error_raised_in_a_ray_task_is_described_whole(ray_local: None) -> None:
    """The issue's case: the allowlist is missing on the worker; the reason names field and cause."""
    import ray

    @ray.remote(num_cpus=0, runtime_env={"env_vars": {"TTC_WORKLOAD_MODULES": ""}})
    def validate(data: dict) -> None:
        Spec.model_validate(data)

    with pytest.raises(ray.exceptions.RayTaskError) as caught:
        ray.get(validate.remote(NOT_ALLOWLISTED))
    reason = describe_error(caught.value)
    assert reason.startswith(
        "ValidationError: workload: workload.factory='worker.workloads.digits:digits_mlp': module "
        "'worker.workloads.digits' is not allowlisted; add it to the TTC_WORKLOAD_MODULES setting"), reason
    assert "For further information" not in reason and "\n" not in reason


def test_a_multi_line_message_is_joined_not_cut() -> None:
    reason = describe_error(RuntimeError("placement failed\nbundle 0: 2 CPU\nbundle 1: 2 CPU"))
    assert reason == "RuntimeError: placement failed | bundle 0: 2 CPU | bundle 1: 2 CPU"


def test_settings_and_allowlisted_local_modules_travel_with_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "loose_module_abc.py").write_text("def make(seed):\n    return None\n")
    package = tmp_path / "pkg_abc"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "factories.py").write_text("def make(seed):\n    return None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    allowlist = "loose_module_abc, pkg_abc.factories, yaml, worker.workloads"
    monkeypatch.setenv("TTC_WORKLOAD_MODULES", allowlist)
    monkeypatch.setenv("TTC_RAY_CPUS_PER_WORKER", "0.5")
    monkeypatch.setenv("TTC_DATABASE_URL", "sqlite:///not-a-ray-setting.db")
    env = job_runtime_env()
    assert env is not None
    assert env["env_vars"] == {"TTC_WORKLOAD_MODULES": allowlist, "TTC_RAY_CPUS_PER_WORKER": "0.5"}
    # a loose file ships as itself, a dotted module as its top-level package; installed ones stay
    assert env["py_modules"] == [str(tmp_path / "loose_module_abc.py"), str(package)]
    assert "__pycache__" in env["excludes"]


def test_nothing_travels_when_nothing_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TTC_WORKLOAD_MODULES", "TTC_RAY_CPUS_PER_WORKER", "TTC_RAY_USE_GPU",
                 "TTC_RAY_COLLECTIVE_TIMEOUT_S", "TTC_RAY_START_TIMEOUT_S"):
        monkeypatch.delenv(name, raising=False)
    assert job_runtime_env() is None


def test_an_allowlisted_module_missing_here_is_left_to_the_nodes(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("TTC_WORKLOAD_MODULES", "no_such_module_xyz")
    env = job_runtime_env()
    assert env == {"env_vars": {"TTC_WORKLOAD_MODULES": "no_such_module_xyz"}}
    assert "'no_such_module_xyz' cannot be found on this machine's path" in caplog.text
    with pytest.raises(ValueError, match="no_such_module_xyz"):
        local_module_path("no_such_module_xyz")
