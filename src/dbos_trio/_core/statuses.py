"""Workflow statuses, and the sets the engine and the SQL decide by.

Pure data. The status predicates written in SQL (``status IN ('ENQUEUED', 'PENDING',
'DELAYED')``, ``status NOT IN ('SUCCESS', 'ERROR')``, ...) must mean these sets; a test
reads every statement file and checks each literal status list against them, so a new
status cannot be added here and forgotten there.
"""

from __future__ import annotations

from typing import Final, Literal

PENDING: Final = "PENDING"
SUCCESS: Final = "SUCCESS"
ERROR: Final = "ERROR"
CANCELLED: Final = "CANCELLED"
ENQUEUED: Final = "ENQUEUED"
DELAYED: Final = "DELAYED"
MAX_RECOVERY_ATTEMPTS_EXCEEDED: Final = "MAX_RECOVERY_ATTEMPTS_EXCEEDED"
PAUSED: Final = "PAUSED"
"""Held by an operator (or by a step whose retries ran out): not finished, run by nobody
until unpaused. dbos_trio's own status, written only by ``pause_workflow``: dbos 3.4
recovers only PENDING rows and claims only ENQUEUED ones, so it never runs a paused row
either (see docs/operations.md, "Pausing")."""

WorkflowStatusString = Literal[
    "PENDING", "SUCCESS", "ERROR", "CANCELLED", "ENQUEUED", "DELAYED",
    "MAX_RECOVERY_ATTEMPTS_EXCEEDED", "PAUSED",
]  # fmt: skip

ALL_STATUSES: Final = frozenset(
    {PENDING, SUCCESS, ERROR, CANCELLED, ENQUEUED, DELAYED, MAX_RECOVERY_ATTEMPTS_EXCEEDED, PAUSED}
)
TERMINAL_STATUSES: Final = frozenset({SUCCESS, ERROR, CANCELLED, MAX_RECOVERY_ATTEMPTS_EXCEEDED})
"""A workflow in one of these has its outcome; nothing runs it again (unless forked)."""
RUNNABLE_STATUSES: Final = frozenset({PENDING, ENQUEUED, DELAYED})
"""Running, waiting on a queue, or waiting for its delay: what every SDK calls active (the
shared schema's partial indexes say so), and what a timeout or the global timeout acts on."""
ACTIVE_STATUSES: Final = RUNNABLE_STATUSES | {PAUSED}
"""Not finished: runnable, or paused (garbage collection keeps these)."""
IN_FLIGHT_STATUSES: Final = frozenset({ENQUEUED, PENDING})
"""Claimable or claimed: the condition of the shared schema's in-flight partial index,
which SQLite uses only for a query that repeats it (so the SQL spells it out)."""
QUEUED_STATUSES: Final = frozenset({ENQUEUED, DELAYED})
"""On a queue and not started: what a rate limiter does not count as a start."""
OUTCOME_STATUSES: Final = frozenset({SUCCESS, ERROR})
"""Finished by the workflow's own return or exception: what cancelling leaves alone."""
CANCELLABLE_STATUSES: Final = ALL_STATUSES - OUTCOME_STATUSES
"""What ``cancel_workflows``/``resume_workflows`` act on (everything but an outcome)."""
