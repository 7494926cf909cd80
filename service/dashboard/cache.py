"""The study page's JSON, kept while nothing it shows has changed.

Every change a study page draws — a probe started or finished, a state, the plan — appends an
event, and executed runs are counted, so (study, newest event id, run count) names one version
of the page's data. Refreshes and further viewers of that version skip decoding every probe's
loss curve again, the slow part of a 50-trial page.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable


class RenderedCache:
    """A small LRU of rendered response bodies, shared by the server's worker threads."""

    def __init__(self, size: int = 64) -> None:
        if size < 1:
            raise ValueError(f"size={size} must be >= 1")
        self._size = size
        self._bodies: OrderedDict[Hashable, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> bytes | None:
        with self._lock:
            body = self._bodies.get(key)
            if body is not None:
                self._bodies.move_to_end(key)
            return body

    def put(self, key: Hashable, body: bytes) -> None:
        with self._lock:
            self._bodies[key] = body
            self._bodies.move_to_end(key)
            while len(self._bodies) > self._size:
                self._bodies.popitem(last=False)
