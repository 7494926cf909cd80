"""One line that says what went wrong on a worker: the exception's type, its whole message, the field.

A probe's error travels far — Ray task → prune reason in the database → dashboard, CLI — and is
often all a user sees of a failure on a remote node. Cutting it to the last line of ``str(exc)``
loses what matters: a pydantic ``ValidationError`` ends in "For further information visit …",
its cause and the offending field lines above. So the cause is unwrapped from Ray's wrapper,
validation errors are spelled field by field, and multi-line messages are joined, not cut.
"""

from __future__ import annotations

import ray
from pydantic import ValidationError

from worker.spec import format_validation_error

MAX_CHARACTERS = 2000


def root_cause(exc: BaseException) -> BaseException:
    """The user-level exception inside Ray's task wrappers (nested tasks nest them)."""
    while isinstance(exc, ray.exceptions.RayTaskError) and exc.cause is not None and exc.cause is not exc:
        exc = exc.cause
    return exc


def describe_error(exc: BaseException) -> str:
    """``Type: message`` of the root cause on one line; a validation error lists every field."""
    cause = root_cause(exc)
    if isinstance(cause, ValidationError):
        message = "; ".join(format_validation_error(cause).splitlines())
    elif isinstance(cause, ray.exceptions.RayTaskError):
        # The cause could not be carried back (not picklable): its traceback's last line is
        # "Type: message" of the original exception.
        lines = [line.strip() for line in str(cause).splitlines() if line.strip()]
        return (lines[-1] if lines else type(cause).__name__)[:MAX_CHARACTERS]
    else:
        message = " | ".join(line.strip() for line in str(cause).splitlines() if line.strip())
    return f"{type(cause).__name__}: {message}"[:MAX_CHARACTERS]


def cluster_fault(error: str) -> bool:
    """A ``describe_error`` line names one of Ray's own failures (a worker or node died, a task
    could not be scheduled): the cluster failed the work, not the work's own code, which Ray
    reports as the cause of a ``RayTaskError`` and so under the cause's own type."""
    kind = getattr(ray.exceptions, error.split(":", 1)[0].strip(), None)
    return (isinstance(kind, type) and issubclass(kind, ray.exceptions.RayError)
            and not issubclass(kind, ray.exceptions.RayTaskError))
