"""``/docs`` without the internet: Swagger UI's assets come from the ``swagger-ui-py`` wheel.

FastAPI's default ``/docs`` page loads Swagger UI from a CDN, so it is blank on an air-gapped
cluster (and ReDoc's page likewise; it is not served). The wheel ships the Swagger UI 5 bundle as
plain files; they are located without importing the package (its ``__init__`` pulls in Jinja).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from fastapi import APIRouter, HTTPException, status
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "favicon-32x32.png": "image/png",
}
ASSET_PREFIX = "/docs/assets"


def swagger_ui_static() -> Path:
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the swagger-ui-py package is missing: pip install swagger-ui-py")
    return Path(next(iter(spec.submodule_search_locations))) / "static"


def docs_router(openapi_url: str, title: str) -> APIRouter:
    router = APIRouter(include_in_schema=False)
    static = swagger_ui_static()

    @router.get("/docs")
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url, title=f"{title} — API",
            swagger_js_url=f"{ASSET_PREFIX}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSET_PREFIX}/swagger-ui.css",
            swagger_favicon_url=f"{ASSET_PREFIX}/favicon-32x32.png",
        )

    @router.get(f"{ASSET_PREFIX}/{{name}}")
    def asset(name: str) -> FileResponse:
        if name not in ASSETS:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no docs asset {name!r}")
        return FileResponse(static / name, media_type=ASSETS[name],
                            headers={"Cache-Control": "max-age=86400"})

    return router
