"""The simulated clock: compute and communication seconds for N nodes × D devices.

Compute follows the device profile (or this machine's measurement for ``cpu``); communication
uses the α–β model (latency α per message, bandwidth β per byte) with the standard collective
costs: ring all-reduce 2(W−1)/W·M/β + 2(W−1)·α (Thakur et al. 2005), a two-level reduction for
hierarchical schemes, and a parameter server that serialises pushes (contention grows with g).
Strategies that allow it overlap communication with the backward pass (DDP's gradient buckets),
and data readers may prefetch their next batch while the device computes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from worker.simulated.calibration import ModelCost
from worker.simulated.profiles import GPU_PROFILES, StorageProfile
from worker.spec import ClusterSpec

GBPS = 1e9 / 8  # bytes per second in one Gb/s
BUCKET_BYTES = 25 * 2**20  # torch DDP's default bucket_cap_mb
BACKWARD_SHARE = 2 / 3  # backward ≈ 2× forward FLOPs, so ≈ 2/3 of a training step


class Hardware:
    """Seconds for the pieces of a step on one simulated cluster; owns the jitter RNG."""

    def __init__(self, cluster: ClusterSpec, cost: ModelCost, seed: int, origin_seconds: float = 0.0) -> None:
        """``origin_seconds``: the lineage's seconds at this run's zero (faults are timed on it)."""
        self.cluster = cluster
        self.origin_seconds = origin_seconds
        self.cost = cost
        self.rng = np.random.default_rng(seed + 7919)
        self.device = None if cluster.device.name == "cpu" else GPU_PROFILES[cluster.device.name]
        self.storage = StorageProfile()
        self._slow_until: dict[int, int] = {}
        self._device_steps: dict[int, int] = {}
        speeds = cluster.node_speed
        self._node_speed = np.ones(cluster.nodes) if speeds is None else np.array(speeds, dtype=float)

    def state(self) -> dict[str, Any]:
        """The random state (jitter and disturbances): a resumed run draws what it would have."""
        return {"rng": self.rng.bit_generator.state, "slow_until": dict(self._slow_until),
                "device_steps": dict(self._device_steps)}

    def load_state(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        self._slow_until = {int(k): int(v) for k, v in state["slow_until"].items()}
        self._device_steps = {int(k): int(v) for k, v in state["device_steps"].items()}

    # -- compute -----------------------------------------------------------------------------
    def base_compute_seconds(self, batch: int) -> float:
        """Forward + backward + update of ``batch`` samples on one device at speed 1."""
        if batch <= 0:
            return 0.0
        if self.device is None:
            return self.cost.cpu_fixed_seconds + self.cost.cpu_per_sample_seconds * batch
        d = self.device
        efficiency = d.max_efficiency * batch / (batch + d.half_batch)
        return d.launch_seconds * self.cost.layers + self.cost.flops_per_sample * batch / (
            d.peak_flops * efficiency
        )

    def node_speeds(self, at_seconds: float = 0.0) -> np.ndarray:
        """Every node's speed at ``at_seconds`` (``ClusterSpec.speed_of_node`` for all nodes at
        once: a step of thousands of devices asks for each of them)."""
        throttle = self.cluster.throttle
        if throttle is None:
            return self._node_speed
        speeds = self._node_speed.copy()
        speeds[throttle.node] = self.cluster.speed_of_node(throttle.node, at_seconds)
        return speeds

    def compute_seconds(self, batches: list[int], devices: list[int], at_seconds: float = 0.0) -> np.ndarray:
        """Jittered compute seconds of each device for its batch this step (stragglers included),
        for a step that starts ``at_seconds`` into the run."""
        if len(set(batches)) == 1:  # the usual case: one size for every device
            base: np.ndarray | float = self.base_compute_seconds(batches[0])
        else:
            sizes, inverse = np.unique(np.asarray(batches), return_inverse=True)
            base = np.array([self.base_compute_seconds(int(b)) for b in sizes])[inverse]
        nodes = np.asarray(devices) // self.cluster.devices_per_node
        speed = self.node_speeds(self.origin_seconds + at_seconds)[nodes]
        noise = np.exp(self.rng.normal(0.0, self.cluster.jitter, len(devices)))
        return base / speed * noise * self._disturbance(devices)

    def _disturbance(self, devices: list[int]) -> np.ndarray:
        """Random temporary slowdowns (DBS's robustness test): each device may slow for a while.

        Counted in each device's own steps, so strategies that step devices at different rates
        (asynchronous groups) see the same per-device disturbance process.
        """
        factor = np.ones(len(devices))
        spec = self.cluster.disturbance
        if spec is None:
            return factor
        for i, device in enumerate(devices):
            step = self._device_steps.get(device, 0) + 1
            self._device_steps[device] = step
            if self._slow_until.get(device, 0) > step:
                factor[i] = spec.slowdown
            elif self.rng.random() < spec.probability:
                self._slow_until[device] = step + spec.duration_steps
                factor[i] = spec.slowdown
        return factor

    def read_seconds(self, samples: int, sample_bytes: int, contiguous: bool) -> float:
        """Reading one batch from storage: one seek for a contiguous shard, one per sample if strided."""
        seeks = 1 if contiguous else samples
        storage = self.storage
        return seeks * storage.read_latency_seconds + samples * sample_bytes / storage.bandwidth_bytes

    # -- communication -------------------------------------------------------------------------
    def link(self, spans_nodes: bool) -> tuple[float, float]:
        """(bytes/second, latency seconds) of the slowest link a collective crosses."""
        net = self.cluster.network
        if spans_nodes:
            return net.inter_gbps * GBPS, net.latency_us * 1e-6
        return net.intra_gbps * GBPS, net.intra_latency_us * 1e-6

    def ring_allreduce_seconds(self, workers: int, spans_nodes: bool, nbytes: int | None = None) -> float:
        """2(W−1)/W · M/β + 2(W−1) · α."""
        if workers <= 1:
            return 0.0
        nbytes = self.cost.parameter_bytes if nbytes is None else nbytes
        bandwidth, latency = self.link(spans_nodes)
        return 2 * (workers - 1) / workers * nbytes / bandwidth + 2 * (workers - 1) * latency

    def flat_allreduce_seconds(self, nodes: int, devices_per_node: int, nbytes: int | None = None) -> float:
        """One ring over every device; with several nodes the inter-node link bounds it."""
        return self.ring_allreduce_seconds(nodes * devices_per_node, nodes > 1, nbytes)

    def hierarchical_allreduce_seconds(
        self, nodes: int, devices_per_node: int, nbytes: int | None = None
    ) -> float:
        """Two-level all-reduce (HSGD): reduce to a leader inside each node over the fast link, ring
        all-reduce among the N leaders over the network, broadcast back inside each node.

        Reduce and broadcast are pipelined chunk-wise: each ≈ (D−1)/D·M/β_intra + (D−1)·α_intra.
        Only N (not N·D) ranks take part in the slow ring, so its latency term is 2(N−1)·α_inter.
        """
        nbytes = self.cost.parameter_bytes if nbytes is None else nbytes
        intra = 0.0
        if devices_per_node > 1:
            bandwidth, latency = self.link(spans_nodes=False)
            d = devices_per_node
            intra = 2 * ((d - 1) / d * nbytes / bandwidth + (d - 1) * latency)
        return intra + self.ring_allreduce_seconds(nodes, spans_nodes=True, nbytes=nbytes)

    def overlapped_seconds(self, compute: float, communicate: float) -> float:
        """Step time when gradient communication overlaps the backward pass (DDP buckets).

        Buckets of 25 MiB are all-reduced as soon as their gradients are ready; only the last
        bucket waits for the end of backward, the rest hide behind up to ≈2/3 of the compute.
        """
        buckets = max(1, -(-self.cost.parameter_bytes // BUCKET_BYTES))
        last = communicate / buckets
        hidden_part = communicate - last
        return compute + last + max(0.0, hidden_part - BACKWARD_SHARE * compute)

    def transfer_seconds(self, spans_nodes: bool = True, nbytes: int | None = None) -> float:
        """One point-to-point message of the model (e.g. a push to the parameter server)."""
        nbytes = self.cost.parameter_bytes if nbytes is None else nbytes
        bandwidth, latency = self.link(spans_nodes)
        return nbytes / bandwidth + latency
