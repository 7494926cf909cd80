"""The simulated backend of the strategy contract: every replica in one process, simulated seconds.

Real model, data, gradients, averaging and batch shares; simulated time from the hardware profile
(:class:`~worker.simulated.hardware.Hardware`). A replica's step of W devices × b samples is
computed as ONE batch of W·b samples — with no batch norm, the devices' share-weighted mean
gradient is exactly the gradient of the mean loss over all of them — which is what makes 64
virtual devices cost about one real step (DESIGN.md §5, ``benchmarks/simulator_cost.py``). A
workload with batch norm (``has_batch_norm``) gets one forward per device instead.

Each replica keeps its own clock; a step adds the replica's slowest device's compute (jittered,
stragglers included), or the storage read it overlaps with, and the gradient all-reduce among the
replica's devices, overlapped with the backward pass as DDP's buckets do.
"""

from __future__ import annotations

from typing import Any
from weakref import WeakKeyDictionary

import torch

from predictor.types import Config
from worker.simulated.hardware import Hardware
from worker.simulated.parameter_server import SimulatedParameterServer
from worker.strategies.cluster import Cluster, GradientStep, PendingSum, Read, Reduce
from worker.workloads import Workload


class SimulatedSum(PendingSum):
    """A sum across replicas: computed at once, delivered at ``done_at`` on the simulated clock."""

    def __init__(self, cluster: SimulatedCluster, total: torch.Tensor, done_at: float) -> None:
        self.cluster, self.total, self.done_at = cluster, total, done_at

    def wait(self) -> torch.Tensor:
        clocks = self.cluster.replica_clocks
        clocks[:] = [max(clock, self.done_at) for clock in clocks]
        return self.total

    def state(self) -> dict[str, Any]:
        return {"total": self.total.clone(), "done_at": self.done_at}


class SimulatedCluster(Cluster):
    def __init__(self, config: Config, workload: Workload, hardware: Hardware) -> None:
        cluster = hardware.cluster
        if config.nodes > cluster.nodes or config.devices_per_node > cluster.devices_per_node:
            raise ValueError(
                f"config uses {config.nodes}x{config.devices_per_node} devices but the cluster "
                f"has {cluster.nodes}x{cluster.devices_per_node}"
            )
        self.config, self.workload, self.hardware = config, workload, hardware
        self.device = torch.device("cpu")
        self.devices = [  # the cluster's device ids this config uses
            node * cluster.devices_per_node + local
            for node in range(config.nodes)
            for local in range(config.devices_per_node)
        ]
        sample, _ = workload.train_batch(torch.tensor([0]))
        self.sample_bytes = sample[0].numel() * sample.element_size()
        self.replica_devices = [self.devices]
        self.replica_clocks = [0.0]
        self.reduce: Reduce = "ring"
        self.read: Read | None = None
        self.server: SimulatedParameterServer | None = None
        self._parameters: WeakKeyDictionary[torch.nn.Module, list[torch.nn.Parameter]] = WeakKeyDictionary()

    def parameters(self, model: torch.nn.Module) -> list[torch.nn.Parameter]:
        """``model``'s parameters, listed once: walking the module tree costs as much as a small
        model's update, and a simulated update must cost about what the real one does."""
        if model not in self._parameters:
            self._parameters[model] = list(model.parameters())
        return self._parameters[model]

    def split(self, count: int) -> list[list[int]]:
        """The devices of ``count`` equal, contiguous replicas."""
        if count < 1 or len(self.devices) % count:
            raise ValueError(f"replicas={count!r} must divide the config's {len(self.devices)} devices")
        size = len(self.devices) // count
        return [self.devices[i * size : (i + 1) * size] for i in range(count)]

    def replicas(self, count: int, *, reduce: Reduce = "ring", read: Read | None = None) -> list[int]:
        self.replica_devices = self.split(count)
        self.replica_clocks = [0.0] * count
        self.reduce, self.read = reduce, read
        return list(range(count))

    def spans_nodes(self, devices: list[int]) -> bool:
        per_node = self.hardware.cluster.devices_per_node
        return min(devices) // per_node != max(devices) // per_node

    def compute(
        self, model: torch.nn.Module, index: torch.Tensor, devices: list[int], sizes: list[int] | None = None,
        at_seconds: float = 0.0,
    ) -> tuple[GradientStep, float]:
        """One replica's gradient (one batch of every device's samples) and its simulated seconds
        for a step starting ``at_seconds`` into the run; touches no clock."""
        sizes = sizes or [len(index) // len(devices)] * len(devices)
        params = self.parameters(model)
        loss = self._mean_loss(model, index, sizes)
        for param, grad in zip(params, torch.autograd.grad(loss, params), strict=True):
            param.grad = grad
        hardware = self.hardware
        compute = hardware.compute_seconds(sizes, devices, at_seconds)
        busy = float(compute.max())
        if self.read is not None:  # the next batch is read while this one computes
            busy = max(busy, hardware.read_seconds(sizes[0], self.sample_bytes, self.read == "contiguous"))
        if self.reduce == "hierarchical":
            config = self.config
            communicate = hardware.hierarchical_allreduce_seconds(config.nodes, config.devices_per_node)
        else:
            communicate = hardware.ring_allreduce_seconds(len(devices), self.spans_nodes(devices))
        return GradientStep(float(loss.detach()), compute), hardware.overlapped_seconds(busy, communicate)

    def _mean_loss(self, model: torch.nn.Module, index: torch.Tensor, sizes: list[int]) -> torch.Tensor:
        """The mean loss over ``index``: one batch, or — with batch norm, whose statistics are each
        device's own — one forward per device, weighted by its share (Σ_i b_i/B · L_i)."""
        x, y = self.workload.train_batch(index)
        if not self.workload.has_batch_norm:
            return self.workload.loss_fn(model(x), y)
        parts = zip(x.split(sizes), y.split(sizes), sizes, strict=True)
        return sum(self.workload.loss_fn(model(xs), ys) * (size / len(index)) for xs, ys, size in parts)

    def gradient(
        self, model: torch.nn.Module, index: torch.Tensor, *, replica: int, sizes: list[int] | None = None
    ) -> GradientStep:
        clocks = self.replica_clocks
        step, seconds = self.compute(model, index, self.replica_devices[replica], sizes, clocks[replica])
        clocks[replica] += seconds
        return step

    def start_sum(self, tensors: dict[int, torch.Tensor]) -> PendingSum:
        """Σ of every replica's tensor: a ring among the replicas' leaders, then each leader
        broadcasts inside its node; it completes when the slowest replica has joined, plus that."""
        total = torch.stack([tensors[r] for r in range(len(self.replica_devices))]).sum(0)
        hardware = self.hardware
        leaders = [devices[0] for devices in self.replica_devices]
        network = hardware.ring_allreduce_seconds(len(leaders), self.spans_nodes(leaders))
        network += hardware.transfer_seconds(spans_nodes=False)  # leader broadcasts inside its node
        return SimulatedSum(self, total, max(self.replica_clocks) + network)

    def restore_sum(self, state: dict[str, Any]) -> PendingSum:
        return SimulatedSum(self, state["total"].clone(), float(state["done_at"]))

    def sum_over_replicas(self, value: torch.Tensor) -> torch.Tensor:
        return value  # every replica is local: the caller's sum is already the total

    def parameter_server(self, groups: int) -> SimulatedParameterServer:
        def cycle(
            model: torch.nn.Module, index: torch.Tensor, devices: list[int], out: torch.Tensor
        ) -> float:
            seconds = self.compute(model, index, devices, at_seconds=self.clock)[1]
            torch.cat([p.grad.reshape(-1) for p in self.parameters(model)], out=out)
            return seconds

        self.server = SimulatedParameterServer(self.split(groups), cycle, self.hardware.transfer_seconds())
        return self.server

    @property
    def clock(self) -> float:
        return self.server.clock if self.server is not None else max(self.replica_clocks)

    def checkpoint(self) -> dict[str, Any]:
        return {
            "backend": "simulated",
            "hardware": self.hardware.state(),
            "replica_clocks": list(self.replica_clocks),
            "server": None if self.server is None else self.server.state(),
        }

    def restore(self, state: dict[str, Any]) -> None:
        if state.get("backend") != "simulated":
            raise ValueError(f"checkpoint backend={state.get('backend')!r} cannot resume on 'simulated'")
        self.hardware.load_state(state["hardware"])
        self.replica_clocks = [float(c) for c in state["replica_clocks"]]
        if (state["server"] is None) != (self.server is None):
            raise ValueError("checkpoint and run disagree on having a parameter server")
        if self.server is not None:
            self.server.load_state(state["server"])
