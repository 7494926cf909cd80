"""eta_replay scores the ETA at a share of the run with the last checkpoint at or before it, per run
(benchmarks/eta_replay.py), as forecast_eval does."""

from __future__ import annotations

from benchmarks.eta_replay import at_shares, prior_run, summary
from predictor.types import Config, ProbeResult


def checkpoint(seed: int, share: float, error: float, warmup: bool = False) -> dict[str, object]:
    return {"scenario": "s", "seed": seed, "share": share, "error": error, "warmup": warmup}


def test_each_share_takes_each_runs_last_checkpoint_at_or_before_it() -> None:
    rows = [checkpoint(4, 0.3, 0.9), checkpoint(4, 0.5, 0.2), checkpoint(4, 0.7, 0.1),
            checkpoint(5, 0.45, 0.4), checkpoint(5, 0.8, 0.3)]
    scored = at_shares(rows)
    assert scored["25%"] == {"median_error": None, "runs": "0/2"}  # no run had an ETA by then
    assert scored["50%"] == {"median_error": (0.2 + 0.4) / 2, "runs": "2/2"}
    assert scored["75%"] == {"median_error": (0.1 + 0.4) / 2, "runs": "2/2"}


def test_the_summary_scores_each_reading_alone_where_it_has_one() -> None:
    rows = [{**checkpoint(4, 0.6, 0.2), "covered": True, "width": 2.0, "ensemble_error": 0.1,
             "reading_error": None},
            {**checkpoint(4, 0.8, 0.4), "covered": False, "width": 4.0, "ensemble_error": 0.5,
             "reading_error": 0.9}]
    parts = summary(rows)["parts"]
    assert parts == {"ensemble_alone": (0.1 + 0.5) / 2, "reading_alone": 0.9}  # the run had no reading first


def test_the_warm_up_s_checkpoints_are_scored_apart_from_the_run_s() -> None:
    """The warm-up's segments are checkpoints too, read from a curve still in its transient, so each
    part is scored by itself as well as together."""
    rows = [{**checkpoint(4, 0.2, 0.6, warmup=True), "covered": False, "width": 8.0, "ensemble_error": 0.6,
             "reading_error": None},
            {**checkpoint(4, 0.6, 0.2), "covered": True, "width": 2.0, "ensemble_error": 0.2,
             "reading_error": 0.3}]
    scored = summary(rows)
    assert scored["warmup"]["checkpoints"] == 1 and scored["warmup"]["coverage"] == 0.0
    assert scored["after_study"]["median_error"] == 0.2 and scored["after_study"]["coverage"] == 1.0
    assert scored["median_error"] == (0.6 + 0.2) / 2 and scored["at"]["25%"]["runs"] == "1/1"


def test_the_warm_up_is_also_scored_against_its_config_run_alone_where_that_was_run() -> None:
    """The warm-up's ETA forecasts its own config continued; ``ttc train`` then switches. A second
    truth, the config run alone, tells the extrapolation's error from what the switches add."""
    rows = [{**checkpoint(4, 0.1, 0.5, warmup=True), "covered": True, "width": 8.0, "ensemble_error": 0.5,
             "reading_error": None, "p50": 2.0, "truth_config_alone": 4.0},
            {**checkpoint(4, 0.3, 0.1, warmup=True), "covered": True, "width": 8.0, "ensemble_error": 0.1,
             "reading_error": None, "p50": 3.0, "truth_config_alone": 1.5},
            {**checkpoint(4, 0.6, 0.2), "covered": True, "width": 2.0, "ensemble_error": 0.2,
             "reading_error": 0.3, "p50": 1.0, "truth_config_alone": None}]
    alone = summary(rows)["warmup"]["against_config_alone"]
    assert alone["checkpoints"] == 2
    assert alone["median_error"] == (0.5 + 1.0) / 2  # |2 − 4| / 4 and |3 − 1.5| / 1.5
    assert abs(alone["bias"]) < 1e-12  # ln(0.5) and ln(2): one early, one late
    assert summary(rows[2:])["warmup"] == {"checkpoints": 0, "against_config_alone": None}


def test_a_recorded_run_lends_its_curve_path_and_crossing_as_a_prior() -> None:
    """A later run reads a recorded one as the service reads a finished training (service.db.priors)."""
    def segment(start: int, batch: int) -> dict[str, object]:
        config = Config("sync", 1, 1, batch_size=batch, lr=0.01)
        curve = [(k, k * 0.001, 1.0 / (1 + k)) for k in range(start, start + 101, 10)]
        return ProbeResult(config, 100, 0.1, curve, start_iteration=start, start_seconds=start * 0.001,
                           key=f"s{start}").to_dict()

    run = {"segments": {"s0": segment(0, 32), "s100": segment(100, 64)}, "lineage": ["s0", "s100"],
           "target": 0.01, "iterations": 190, "reached": True}
    prior = prior_run(run)
    step = 0.01 / (1 - 0.9)  # lr / (1 − momentum)
    assert prior.phases == ((0, 32, step), (100, 64, step)) and prior.crossing(0.01) == 190
    assert prior.curve[0] == (10.0, 1.0 / 11)  # iteration 0 dropped, as the service drops it
    assert prior_run({**run, "reached": False}).crossing(0.01) is None
