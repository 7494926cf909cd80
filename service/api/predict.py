"""/v1/predict: one short probe of each given config, then its predicted TTC (like ``ttc predict``)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.exceptions import RequestValidationError

from predictor import Config
from service.api.deps import SettingsDep, TokenDep
from service.api.schemas import PredictRequest, PredictResult
from service.api.studies import check_limits
from service.run_configs import ConfigArgumentError, check_fits, predict_config

router = APIRouter(prefix="/v1", tags=["predict"])


@router.post("/predict", dependencies=[TokenDep])
def predict(body: PredictRequest, settings: SettingsDep) -> list[PredictResult]:
    """Blocks while the probes run on Ray (seconds per the spec's ``budget.probe_seconds``)."""
    check_limits(body.spec, settings)
    configs = []
    for index, raw in enumerate(body.configs):
        try:
            config = Config.from_dict(raw)
            check_fits(body.spec, config)
        except (TypeError, ValueError) as exc:
            msg = str(exc) if isinstance(exc, ConfigArgumentError | ValueError) else f"invalid config: {exc}"
            raise RequestValidationError(
                [{"type": "value_error", "loc": ["body", "configs", index], "msg": msg, "input": raw}]
            ) from None
        configs.append(config)
    return [PredictResult(**p) for p in predict_config(body.spec, configs, settings.ray_address)]
