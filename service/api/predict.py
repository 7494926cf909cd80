"""/v1/predict: one short probe of each given config, then its predicted TTC (like ``ttc predict``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body
from fastapi.exceptions import RequestValidationError

from predictor.types import json_safe
from service.api.deps import SettingsDep, TokenDep
from service.api.errors import MUTATING
from service.api.examples import PREDICT_EXAMPLES
from service.api.schemas import PredictRequest, PredictResult
from service.api.studies import check_limits
from service.predict_process import predict_config
from service.run_configs import check_fits
from worker.spec import SpecError

router = APIRouter(prefix="/v1", tags=["predict"])


@router.post("/predict", dependencies=[TokenDep], responses=MUTATING)
def predict(
    body: Annotated[PredictRequest, Body(openapi_examples=PREDICT_EXAMPLES)], settings: SettingsDep
) -> list[PredictResult]:
    """Blocks while the probes run on Ray (seconds per the spec's ``budget.probe_seconds``)."""
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
    return [PredictResult(**json_safe(p)) for p in predictions]
