"""/v1/predict: one short probe of each given config, then its predicted TTC (like ``ttc predict``)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, HTTPException, status
from fastapi.exceptions import RequestValidationError

from predictor.types import json_safe
from service.api.deps import JsonDep, SettingsDep, TokenDep
from service.api.errors import MUTATING, error_response
from service.api.examples import PREDICT_EXAMPLES
from service.api.schemas import PredictRequest, PredictResult
from service.api.studies import check_limits
from service.runners.predict_process import predict_config
from service.runners.run_configs import check_fits
from worker.spec import SpecError

router = APIRouter(prefix="/v1", tags=["predict"])


@router.post("/predict", dependencies=[TokenDep, JsonDep], responses={
    **MUTATING, 503: error_response("the Ray cluster failed a probe (a worker or node died): retry later")})
def predict(
    body: Annotated[PredictRequest, Body(openapi_examples=PREDICT_EXAMPLES)], settings: SettingsDep
) -> list[PredictResult]:
    """Blocks while the probes run on Ray (seconds per the spec's ``budget.probe_seconds``). A probe
    that fails in its own code is a 422 naming its config and the reason; one the cluster failed, a 503."""
    check_limits(body.spec, settings)
    configs = []
    for index, given in enumerate(body.configs):
        try:
            config = given.to_config()
            check_fits(body.spec, config)
        except ValueError as exc:  # cross-field rules: groups dividing the devices, the spec's cluster
            raise RequestValidationError([{"type": "value_error", "loc": ["body", "configs", index],
                                           "msg": str(exc), "input": given.model_dump()}]) from None
        configs.append(config)
    try:
        predictions = predict_config(body.spec, configs, settings.ray_address)
    except SpecError as exc:  # InfeasibleCluster: the Ray cluster cannot hold the spec's cluster
        raise RequestValidationError(
            [{"type": "value_error", "loc": ["body", "spec", "cluster"], "msg": str(exc), "input": None}]
        ) from None
    failed_probes(predictions)
    return [PredictResult(**json_safe(p)) for p in predictions]


def failed_probes(predictions: list[dict[str, Any]]) -> None:
    """A failed probe is an error, with its reason, never a prediction from 0 iterations: a 503 when
    the Ray cluster failed it (a worker or node died, a task could not be scheduled), which a
    retry may mend; a 422 naming the config when the probe's own code refused it (the config
    cannot run), which no retry will."""
    failed = [(index, p["probe"]) for index, p in enumerate(predictions) if p["probe"].get("error")]
    cluster = [f"configs[{index}]: {probe['error']}" for index, probe in failed if probe.get("cluster_fault")]
    if cluster:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE,
                            "the Ray cluster failed the probe: " + "; ".join(cluster))
    if failed:
        raise RequestValidationError([
            {"type": "probe_failed", "loc": ["body", "configs", index], "input": None,
             "msg": f"the probe of this config failed: {probe['error']}"} for index, probe in failed])
