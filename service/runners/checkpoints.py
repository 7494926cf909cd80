"""Probe end states in the database: what a restarted service continues a lineage from.

A state (``worker.lineage.State``) is plain tensors, numbers and strings, so it is stored as the
bytes of ``torch.save`` and read back with ``weights_only=True`` (no pickled code runs on load).
The launcher keeps states in Ray's object store while the service lives; ``DatabaseStates`` is its
``state_source`` for the ones it did not produce itself (a study or training resumed after a crash).
"""

from __future__ import annotations

import io

from service.db import Database, measurement_store
from worker.lineage import State


def dump_state(state: State) -> bytes:
    import torch

    buffer = io.BytesIO()
    torch.save(state, buffer)
    return buffer.getvalue()


def load_state(data: bytes) -> State:
    import torch

    return torch.load(io.BytesIO(data), weights_only=True)


class DatabaseStates:
    """``state_source`` of a ``ProbeLauncher``: a study's probe states as stored in the database."""

    def __init__(self, db: Database, study_id: str) -> None:
        self.db, self.study_id = db, study_id

    def __call__(self, key: str) -> State | None:
        def read() -> bytes | None:
            with self.db.read() as session:
                return measurement_store.get_state(session, study_id=self.study_id, key=key)

        data = self.db.reconnecting(read)
        return None if data is None else load_state(data)
