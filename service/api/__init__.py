"""The REST routers, one module each; ``service.app.create_app`` mounts them."""

from service.api.events import router as events_router
from service.api.operations import router as operations_router
from service.api.predict import router as predict_router
from service.api.runs import router as runs_router
from service.api.studies import router as studies_router
from service.api.trainings import router as trainings_router

ROUTERS = (studies_router, trainings_router, events_router, predict_router, runs_router, operations_router)

__all__ = ["ROUTERS"]
