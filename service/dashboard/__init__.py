"""The web dashboard (DESIGN.md §7: served at ``/``): studies list and study pages.

``service.app.create_app`` includes ``router``.
"""

from service.dashboard.routes import router

__all__ = ["router"]
