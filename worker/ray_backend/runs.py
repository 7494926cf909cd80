"""Ray runs: one configuration's strategy on device actors, a TrainingRun for ``worker.training.train``.

Two shapes, by where the strategy's global model lives (``Strategy.uses_parameter_server``):

- :class:`ReplicaRun` — every device actor builds the strategy on its
  :class:`~worker.ray_backend.cluster.RankCluster` and runs the same ``step()`` in lock step
  (sync, hsgd, dbs, daso). Calling the actors once per iteration would add a Ray round trip to
  every step, so ``step()`` runs them up to the next evaluation in one call and hands out the
  measured durations one by one; a step lasts as long as its slowest rank. ``clock`` is the sum —
  wall-clock training time without the evaluations, which the simulated backend does not count
  either. The call's own cost (its wall time beyond the slowest rank's steps: Ray's round trip,
  paid once per chunk) is counted apart in ``calls``/``call_seconds``. The global model is rank
  0's replica.
- :class:`ServerRun` — the strategy runs here, in the driver, as Omnivore's parameter server; its
  groups are the device actors (``async_groups``).

Pure constructors; ``start()`` creates the actors (or, given a started :class:`WorkerGroup`,
reuses them: ``group_pool``); ``shutdown()`` releases what ``start()`` took, also after a failure.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections import deque
from typing import Any

import torch

from predictor.types import Config
from worker.ray_backend.actor import WorkerContext
from worker.ray_backend.cluster import RankCluster
from worker.ray_backend.config import RayBackendConfig
from worker.ray_backend.parameter_server import install_group_worker
from worker.ray_backend.placement import RankLayout
from worker.ray_backend.server_cluster import ServerCluster
from worker.ray_backend.worker_group import WorkerGroup
from worker.spec import Spec
from worker.strategies import Strategy, make_strategy, strategy_class
from worker.training_run import TrainingRun
from worker.workloads import load_workload

WorkloadKey = tuple[int, str | None, str | None]


# -- shipped to the actors -------------------------------------------------------------------------
def install_strategy(context: WorkerContext, workload_key: WorkloadKey, config: Config, seed: int) -> None:
    """Build this actor's replica of the config's strategy (shipped to every actor at once)."""
    cluster = RankCluster(context, config, load_workload(*workload_key))
    context.state["strategy"] = make_strategy(cluster, seed)


def run_steps(context: WorkerContext, steps: int) -> list[float]:
    """Run ``steps`` iterations back to back; the wall seconds of each, measured on this actor."""
    strategy: Strategy = context.state["strategy"]
    seconds = []
    for _ in range(steps):
        start = time.perf_counter()
        strategy.step()
        if context.device.type == "cuda":
            torch.cuda.synchronize(context.device)
        seconds.append(time.perf_counter() - start)
    strategy.cluster.elapsed += sum(seconds)
    return seconds


def call(context: WorkerContext, method: str, *args: Any) -> Any:
    """Call a method of this actor's strategy."""
    return getattr(context.state["strategy"], method)(*args)


def uninstall(context: WorkerContext) -> None:
    """Drop this actor's strategy (a reused worker group keeps its process groups)."""
    context.state.pop("strategy", None)
    context.state.pop("group_worker", None)


# -- the driver side -------------------------------------------------------------------------------
class RayRun(TrainingRun):
    def __init__(
        self,
        spec: Spec,
        config: Config,
        backend: RayBackendConfig,
        max_iterations: int,
        workers: WorkerGroup | None = None,
    ) -> None:
        layout = RankLayout(config.nodes, config.devices_per_node)
        if workers is not None and workers.layout != layout:
            raise ValueError(f"config needs {layout} but the worker group is {workers.layout}")
        self.spec, self.config, self.backend = spec, config, backend
        self.max_iterations = max_iterations
        self.workload_key: WorkloadKey = (spec.seed, spec.workload.name, spec.workload.factory)
        self.workload = load_workload(*self.workload_key)
        self.workers = workers or WorkerGroup(layout, backend)
        self._owns_workers = workers is None

    def start(self) -> None:
        """Create the actors (unless reusing a started group) and install the strategy."""
        started = time.perf_counter()
        if not self.workers.started:
            self.workers.start()
        self._install()
        self.launch_seconds = time.perf_counter() - started

    def shutdown(self) -> None:
        """Release every actor and process group (a reused group only forgets the strategy)."""
        if self._owns_workers:
            self.workers.shutdown()
        elif self.workers.started:
            self.workers.execute(uninstall)

    @abstractmethod
    def _install(self) -> None:
        """Put the strategy (or its groups' halves) onto the started actors."""


class ReplicaRun(RayRun):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.eval_every = self.spec.target.eval_every
        self.iteration = 0
        self._clock = 0.0
        self._pending: deque[float] = deque()  # seconds of steps the actors ran ahead
        self._model = self.workload.build_model()  # rank 0's replica, read at evaluations
        self._model_iteration = -1

    def _install(self) -> None:
        self.workers.execute(install_strategy, self.workload_key, self.config, self.spec.seed)

    @property
    def clock(self) -> float:
        return self._clock

    def step(self) -> None:
        if not self._pending:
            to_eval = self.eval_every - self.iteration % self.eval_every
            steps = max(1, min(to_eval, self.max_iterations - self.iteration))
            start = time.perf_counter()
            per_rank = self.workers.execute(run_steps, steps)
            wall = time.perf_counter() - start
            self._pending.extend(max(seconds) for seconds in zip(*per_rank, strict=True))
            self.calls += 1
            self.call_seconds += max(0.0, wall - max(sum(seconds) for seconds in per_rank))
        self._clock += self._pending.popleft()
        self.iteration += 1

    def _settle(self) -> None:
        """Count the steps the actors already ran (a loop stopped inside a chunk by its seconds)."""
        while self._pending:
            self._clock += self._pending.popleft()
            self.iteration += 1

    @property
    def model(self) -> torch.nn.Module:
        """The global model at the current iteration (read from rank 0 when it changed)."""
        if self._pending:
            raise RuntimeError("the model is read between chunks of steps (at evaluations)")
        if self._model_iteration != self.iteration:
            self._model.load_state_dict(self.model_state())
            self._model_iteration = self.iteration
        return self._model

    def gradient_noise_sample(self) -> tuple[float, int, float, int]:
        return self.workers.execute(call, "gradient_noise_sample")[0]  # every sampler draws alike

    def model_state(self) -> dict[str, torch.Tensor]:
        return self.workers.execute_single(0, call, "model_state")

    def warm_start(self, model_state: dict[str, torch.Tensor]) -> None:
        self.workers.execute(call, "warm_start", model_state)
        self._model_iteration = -1

    def checkpoint(self) -> dict[str, Any]:
        """Every rank's strategy state, after settling steps the actors ran ahead."""
        self._settle()
        return {"backend": "ray", "config": self.config.key(), "iteration": self.iteration,
                "clock": self._clock, "ranks": self.workers.execute(call, "checkpoint")}

    def restore(self, state: dict[str, Any]) -> None:
        if self.iteration:
            raise RuntimeError(f"restore needs a fresh run; this one is at iteration {self.iteration}")
        if state.get("backend") != "ray" or state.get("config") != self.config.key():
            raise ValueError(
                f"checkpoint of backend={state.get('backend')!r}, config={state.get('config')!r} "
                f"cannot resume {self.config.key()!r} on Ray"
            )
        self.workers.execute_each(call, [("restore", rank_state) for rank_state in state["ranks"]])
        self.iteration, self._clock = int(state["iteration"]), float(state["clock"])
        self._model_iteration = -1


class ServerRun(RayRun):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.strategy = make_strategy(ServerCluster(self.config, self.workload, self.workers), self.spec.seed)

    def _install(self) -> None:
        self.workers.execute(install_group_worker, self.workload_key, self.config)

    @property
    def iteration(self) -> int:  # type: ignore[override]
        return self.strategy.iteration

    @property
    def clock(self) -> float:
        return self.strategy.clock

    @property
    def model(self) -> torch.nn.Module:
        return self.strategy.model

    def step(self) -> None:
        self.strategy.step()

    def gradient_noise_sample(self) -> tuple[float, int, float, int]:
        return self.strategy.gradient_noise_sample()

    def model_state(self) -> dict[str, torch.Tensor]:
        return self.strategy.model_state()

    def warm_start(self, model_state: dict[str, torch.Tensor]) -> None:
        self.strategy.warm_start(model_state)

    def checkpoint(self) -> dict[str, Any]:
        return self.strategy.checkpoint()

    def restore(self, state: dict[str, Any]) -> None:
        self.strategy.restore(state)


def make_run(
    spec: Spec,
    config: Config,
    backend: RayBackendConfig,
    max_iterations: int,
    workers: WorkerGroup | None = None,
) -> RayRun:
    """The Ray run of ``config``: its strategy on every actor, or in the driver as a server."""
    shape = ServerRun if strategy_class(config.strategy).uses_parameter_server else ReplicaRun
    return shape(spec, config, backend, max_iterations, workers)
