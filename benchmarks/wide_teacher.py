"""A user's workload for ray_forecast: teacher-classification's data, a student wide enough that
its best run takes a minute of real compute on two CPU devices.

It reaches the Ray nodes as users' code does (allowlisted by ``TTC_WORKLOAD_MODULES``, carried by
the job's ``runtime_env``). The student, 32 → 1024 → 1024 → 10 ReLU (1.1M parameters), costs
about 6 ms a step at b = 64 on one core; its train loss passes the labels' Bayes floor (0.63) and
goes on falling as it memorises the 32,768 training samples, faster after a slow start: at
lr 0.1 it reaches 0.3 in about 7,000 steps, the curve shape forecasts find hardest.
"""

from __future__ import annotations

from torch import nn

from worker.workloads import Workload
from worker.workloads.base import cross_entropy
from worker.workloads.teacher import CLASSES, EVAL_SIZE, softmax_teacher

WIDTH = 1024


def wide_teacher(seed: int = 0) -> Workload:
    """The data are the job's, fixed; the run's seed sets initialisation and sample order."""
    del seed
    x, y, _ = softmax_teacher()

    def build() -> nn.Module:
        return nn.Sequential(nn.Linear(x.shape[1], WIDTH), nn.ReLU(), nn.Linear(WIDTH, WIDTH), nn.ReLU(),
                             nn.Linear(WIDTH, CLASSES))

    return Workload("wide-teacher", build, cross_entropy, x[EVAL_SIZE:], y[EVAL_SIZE:], x[:EVAL_SIZE],
                    y[:EVAL_SIZE], default_target=0.3)
