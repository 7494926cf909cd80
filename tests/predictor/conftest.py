"""Fixtures shared by the tests of forks read against a warm-up's curve."""

from __future__ import annotations

import pytest

from predictor.reference_curve import ReferenceCurve
from tests.predictor.test_reference_curve import warmup_curve


@pytest.fixture
def reference() -> ReferenceCurve:
    """The warm-up's reference curve fitted to a curve with 1% level noise."""
    fitted = ReferenceCurve.fit(warmup_curve(noise=0.01))
    assert fitted is not None and fitted.noise > 0
    return fitted
