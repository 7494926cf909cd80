"""Optimizers for every strategy: torch's SGD (momentum as in Omnivore), or LARS.

``config.options`` may carry ``weight_decay`` (both optimizers) and ``trust_coefficient`` (LARS).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from predictor.types import Config

DEFAULT_TRUST_COEFFICIENT = 0.001  # You et al. 2017, η


class LARS(torch.optim.Optimizer):
    """Layer-wise Adaptive Rate Scaling (You, Gitman & Ginsburg, arXiv 1708.03888, Algorithm 1).

    For each layer l with weights w, gradient ∇L and weight decay β:
        λ = η‖w‖ / (‖∇L‖ + β‖w‖)                 (local learning rate, η = trust coefficient)
        v ← μ·v + γ·λ·(∇L + β·w);   w ← w − v      (γ = global learning rate)
    Parameter groups with ``lars=False`` (biases, norm scales — the layers without weight decay)
    take a plain momentum-SGD step, as in the paper's reference setups.
    """

    def __init__(
        self,
        params: Iterable[torch.Tensor] | Iterable[dict],
        lr: float,
        momentum: float = 0.9,
        weight_decay: float = 0.0,
        trust_coefficient: float = DEFAULT_TRUST_COEFFICIENT,
        eps: float = 1e-12,
    ) -> None:
        if lr <= 0:
            raise ValueError(f"lr={lr!r} must be > 0")
        if not 0 <= momentum < 1:
            raise ValueError(f"momentum={momentum!r} must be in [0, 1)")
        if trust_coefficient <= 0:
            raise ValueError(f"trust_coefficient={trust_coefficient!r} must be > 0")
        defaults = {
            "lr": lr, "momentum": momentum, "weight_decay": weight_decay,
            "trust_coefficient": trust_coefficient, "eps": eps, "lars": True,
        }
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):  # noqa: ANN001 - torch's signature
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for param in group["params"]:
                if param.grad is None:
                    continue
                direction = param.grad
                scale = 1.0
                if group["lars"]:
                    decay = group["weight_decay"]
                    w_norm, g_norm = float(param.norm()), float(direction.norm())
                    if w_norm > 0 and g_norm > 0:
                        scale = group["trust_coefficient"] * w_norm / (g_norm + decay * w_norm + group["eps"])
                    if decay:
                        direction = direction.add(param, alpha=decay)
                state = self.state[param]
                if "velocity" not in state:
                    state["velocity"] = torch.zeros_like(param)
                velocity = state["velocity"]
                velocity.mul_(group["momentum"]).add_(direction, alpha=group["lr"] * scale)
                param.sub_(velocity)
        return loss


def make_optimizer(parameters: Iterable[torch.nn.Parameter], config: Config) -> torch.optim.Optimizer:
    weight_decay = float(config.options.get("weight_decay", 0.0))
    if config.optimizer == "sgd":
        return torch.optim.SGD(parameters, lr=config.lr, momentum=config.momentum, weight_decay=weight_decay)
    if config.optimizer == "lars":
        params = list(parameters)
        # Layers without weight decay (biases, norm scales: 1-D tensors) are excluded from LARS.
        groups = [
            {"params": [p for p in params if p.ndim > 1]},
            {"params": [p for p in params if p.ndim <= 1], "lars": False, "weight_decay": 0.0},
        ]
        return LARS(
            [g for g in groups if g["params"]], lr=config.lr, momentum=config.momentum,
            weight_decay=weight_decay,
            trust_coefficient=float(config.options.get("trust_coefficient", DEFAULT_TRUST_COEFFICIENT)),
        )
    raise ValueError(f"optimizer={config.optimizer!r} is not one of 'sgd', 'lars'")
