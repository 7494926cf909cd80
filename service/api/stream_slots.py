"""A cap on open event streams, per study and in all, so followers cannot starve the API.

Each open ``/v1/studies/{id}/events`` connection polls the database twice a second: 300 clients on
one study took 50 polling clients from p50 16–20 ms to 370 ms (issue 36). Past a cap the stream is
refused with 429 and ``Retry-After`` instead. A slot is held by its stream's generator and freed
when the generator ends, is closed, or is dropped unstarted (a client gone before the first byte),
so no path through Starlette leaks one. The counts are per API process.
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter

from fastapi import HTTPException, status

RETRY_AFTER_SECONDS = 5


class StreamSlots:
    def __init__(self, per_study: int, total: int) -> None:
        self.per_study, self.total = per_study, total
        self._open: Counter[str] = Counter()
        self._lock = threading.Lock()

    def count(self, study_id: str | None = None) -> int:
        """Streams open on ``study_id``, or in all."""
        with self._lock:
            return self._open[study_id] if study_id else sum(self._open.values())

    def hold(self, study_id: str, holder: object) -> weakref.finalize:
        """Take a slot for ``holder`` (the stream's generator) until it is gone, or until the
        returned finalizer is called (once; later calls do nothing); 429 when full."""
        with self._lock:
            if self._open[study_id] >= self.per_study:
                raise _too_many(f"study {study_id} already has {self.per_study} open event streams "
                                f"(TTC_MAX_EVENT_STREAMS_PER_STUDY)")
            if sum(self._open.values()) >= self.total:
                raise _too_many(f"the service already has {self.total} open event streams "
                                "(TTC_MAX_EVENT_STREAMS)")
            self._open[study_id] += 1
        return weakref.finalize(holder, self._release, study_id)

    def _release(self, study_id: str) -> None:
        with self._lock:
            self._open[study_id] -= 1
            if self._open[study_id] <= 0:
                del self._open[study_id]


def _too_many(detail: str) -> HTTPException:
    return HTTPException(status.HTTP_429_TOO_MANY_REQUESTS, detail=f"{detail}; try again later",
                         headers={"Retry-After": str(RETRY_AFTER_SECONDS)})
