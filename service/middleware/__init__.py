"""Plain ASGI middleware around the routes: the request guard, ``HEAD``, ``Allow`` and request timing."""
