"""``dbos.step_status``: which step is running and, while it retries, which attempt.

A contextvar set around each attempt of a checkpointed step, so it follows the step's
own task (a plain ``def`` step's worker thread gets a copy of the context) and is None
outside steps. ``current_attempt`` is 0-based as in dbos 3.4, and None (with
``max_attempts``) for a step without automatic retries.
"""

from __future__ import annotations

import contextvars

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


class step_status_set:  # named as the function it replaced: ``with step_status_set(s):``
    """``status`` is the running step's for the block. A slotted class, not a generator
    context manager: it is entered for every attempt of every step."""

    __slots__ = ("_status", "_token")

    def __init__(self, status: StepStatus) -> None:
        self._status = status

    def __enter__(self) -> None:
        self._token = _status.set(self._status)

    def __exit__(self, *exc_info: object) -> None:
        _status.reset(self._token)


def current_step_status() -> StepStatus | None:
    return _status.get()
