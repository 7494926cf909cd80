"""A study's probes as Optuna trials: the distributions they are asked with (wide enough for every
config the search may propose, since the search chooses its configs itself and Optuna records
them) and the loss curve each reports to Optuna's pruner."""

from __future__ import annotations

import math

import optuna

from predictor.types import OPTIMIZERS, STRATEGIES, ProbeRequest, ProbeResult, SearchSpace

PRUNER_STEPS = 100  # probe progress is reported to the pruner in hundredths of the probe length
MAX_BATCH_SIZE = 65536  # samples per device per step: a spec's and a trial's upper bound
# A trial's lr distribution (log-uniform). Every lr a study asks must lie in it, or Optuna refuses
# the trial: the spec's rates (worker.spec, at least 1e-6 and at most 100) and the ones derived from
# them by factors (LARS ×10, a re-plan's moves with the batch and node counts), so it spans decades
# more than the spec allows on either side.
LR_RANGE = (1e-12, 1e12)
MOMENTUM_RANGE = (0.0, 0.999)  # a trial's momentum distribution: a spec's momenta must lie in it
TRIAL_PARAMS = ("strategy", "nodes", "devices_per_node", "groups", "batch_size", "lr", "momentum",
                "optimizer")  # a trial's parameters: the config's, less its strategy options


def trial_distributions(space: SearchSpace) -> dict[str, optuna.distributions.BaseDistribution]:
    return {
        "strategy": optuna.distributions.CategoricalDistribution(list(STRATEGIES)),
        "nodes": optuna.distributions.IntDistribution(1, max(space.nodes, 1)),
        "devices_per_node": optuna.distributions.IntDistribution(1, max(space.devices_per_node, 1)),
        "groups": optuna.distributions.IntDistribution(1, space.devices),
        "batch_size": optuna.distributions.IntDistribution(1, MAX_BATCH_SIZE),
        "lr": optuna.distributions.FloatDistribution(*LR_RANGE, log=True),
        "momentum": optuna.distributions.FloatDistribution(*MOMENTUM_RANGE),
        "optimizer": optuna.distributions.CategoricalDistribution(list(OPTIMIZERS)),
    }


def record_trial(study: optuna.Study, space: SearchSpace, request: ProbeRequest) -> optuna.trial.Trial:
    """The probe as a trial: its config enqueued as the trial's parameters, its lineage as attributes."""
    config = request.config
    study.enqueue_trial({name: getattr(config, name) for name in TRIAL_PARAMS}, skip_if_exists=False)
    trial = study.ask(trial_distributions(space))
    trial.set_user_attr("config", config.to_dict())
    trial.set_user_attr("probe_key", request.key)
    trial.set_user_attr("parent", request.parent)
    return trial


def report_curve(trial: optuna.trial.Trial, result: ProbeResult, length: int) -> bool:
    """Loss against progress through a probe of ``length`` iterations (Optuna's pruner over probe
    length); True when pruned. Only probes that start level may be compared this way."""
    pruned, reported = False, set()
    for k, _, loss in result.curve:
        step = min(int(PRUNER_STEPS * (k - result.start_iteration) / max(length, 1)), PRUNER_STEPS)
        if not math.isfinite(loss) or step in reported or step < 0:
            continue  # Optuna keeps one value per step
        reported.add(step)
        trial.report(loss, step)
        pruned = pruned or trial.should_prune()
    return pruned
