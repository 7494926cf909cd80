"""The one interface the service drives: ask for probes, run them, tell each result.

Both the cold-start search (predictor.search, before a run) and the training planner
(predictor.training, during one) are tuners over a ``Study`` (predictor.study): the service's
loops, the replay of committed probes after a crash and the contract tests
(tests/predictor/test_tuner_contract.py) are written once against this.

Rules every tuner keeps: ``ask()`` returns a batch of requests with keys never asked before, and
nothing while a batch is out; ``tell()`` takes the result of an asked request; an empty ``ask()``
with nothing out means the tuner is finished; what the told probes cost is on the study's ledger.
"""

from __future__ import annotations

from typing import Protocol

from predictor.study import Study
from predictor.types import ProbeRequest, ProbeResult


class Tuner(Protocol):
    study: Study

    def ask(self) -> list[ProbeRequest]: ...

    def tell(self, result: ProbeResult) -> None: ...
