"""``dbos.step_status``: which step is running and, while it retries, which attempt.

A contextvar set around each attempt of a checkpointed step, so it follows the step's
own task (a plain ``def`` step's worker thread gets a copy of the context) and is None
outside steps. ``current_attempt`` is 0-based as in dbos 3.4, and None (with
``max_attempts``) for a step without automatic retries.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

import attrs


@attrs.frozen
class StepStatus:
    """The running step's id, its attempt (0-based) and how many attempts it may make."""

    step_id: int
    current_attempt: int | None
    max_attempts: int | None


_status: contextvars.ContextVar[StepStatus | None] = contextvars.ContextVar(
    "dbos_trio_step_status", default=None
)


@contextmanager
def step_status_set(status: StepStatus) -> Iterator[None]:
    token = _status.set(status)
    try:
        yield
    finally:
        _status.reset(token)


def current_step_status() -> StepStatus | None:
    return _status.get()
