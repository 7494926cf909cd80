"""Probe segments joined into lineages: one view per config of what its run has measured so far.

A study's probes are segments: a probe from scratch, the warm-up continuing it, forks from the
warm-up, forks lengthened. The models read one curve per config, so the segments of a lineage
are merged here: cost adds up, curves join (lineage iterations), the reach comes from whichever
segment crossed the target first, the step timings from the latest segment.
"""

from __future__ import annotations

import dataclasses

from predictor.types import ProbeResult


def merge(segments: list[ProbeResult]) -> ProbeResult:
    """One ProbeResult for consecutive segments of one lineage (first segment first)."""
    first, last = segments[0], segments[-1]
    if len(segments) == 1:
        return first
    curve, seen = [], set()
    for segment in segments:
        for point in segment.curve:
            if point[0] not in seen:
                seen.add(point[0])
                curve.append(point)
    reached = next((s for s in segments if s.reached_iteration is not None), None)
    noisy = next((s for s in segments if s.grad_sq_small is not None), first)
    return dataclasses.replace(
        last,
        iterations=sum(s.iterations for s in segments),
        seconds=sum(s.seconds for s in segments),
        curve=curve,
        reached_iteration=reached.reached_iteration if reached else None,
        reached_seconds=reached.reached_seconds if reached else None,
        diverged=any(s.diverged for s in segments),
        grad_sq_small=noisy.grad_sq_small, grad_sq_big=noisy.grad_sq_big,
        batch_small=noisy.batch_small, batch_big=noisy.batch_big,
        wall_seconds=sum(s.wall_seconds for s in segments),
        parent=first.parent, start_iteration=first.start_iteration, start_seconds=first.start_seconds,
    )


class Lineages:
    """Segments by probe key and, per epoch (from scratch, or forked from one warm-up), each
    config's chain of segments."""

    def __init__(self) -> None:
        self.segments: dict[str, ProbeResult] = {}
        self.chains: dict[str | None, dict[str, list[ProbeResult]]] = {}  # origin → config key → chain
        self._origin_of: dict[str, str | None] = {}  # probe key → the epoch it belongs to

    def add(self, result: ProbeResult, starts_epoch: bool) -> None:
        """Record a segment; ``starts_epoch``: its parent is a fork point (the warm-up's end), so it
        opens that epoch's chain for its config (a fork, or the warm-up's own continuation)."""
        key = result.probe_key
        self.segments[key] = result
        if result.parent is None:
            origin = None
        elif starts_epoch:
            origin = result.parent
        else:
            origin = self._origin_of.get(result.parent)
        self._origin_of[key] = origin
        chain = self.chains.setdefault(origin, {}).setdefault(result.config.key(), [])
        if not starts_epoch and chain and result.parent != chain[-1].probe_key:
            chain.clear()  # a continuation of another segment than the chain's tip starts over
        chain.append(result)

    def views(self, origin: str | None) -> dict[str, ProbeResult]:
        """Config key → merged lineage, for the epoch started at ``origin`` (None: from scratch)."""
        return {key: merge(chain) for key, chain in self.chains.get(origin, {}).items() if chain}

    def chain_of(self, origin: str | None, config_key: str) -> list[ProbeResult]:
        return self.chains.get(origin, {}).get(config_key, [])

    def tip(self, origin: str | None, config_key: str) -> ProbeResult | None:
        chain = self.chain_of(origin, config_key)
        return chain[-1] if chain else None
