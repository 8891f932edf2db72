"""How the backends retry a statement that failed for a transient reason.

Invariant: there is one retry rule for both backends, decided by the *kind* of the error
(:mod:`dbos_trio.sysdb.errors`), never by the driver: a transient error is retried after a
backoff, anything else is raised at once. Retrying is safe because every operation of the
protocol is idempotent by construction (``ON CONFLICT``, ownership tokens, statements that
find what an earlier attempt committed): a statement whose reply was lost, retried, lands
on the state it already made.

The policy bounds how long one call keeps trying, in *real* time (a virtual clock must not
make a competing writer's lock look eternal, nor expire the bound in a blink), and the
pauses between attempts are Trio sleeps, so a retrying call stays cancellable: a
shutdown cancels it promptly, and the row it was writing for stays as the database has it.
"""

from __future__ import annotations

import random

import attrs
import trio

from .._clock import monotonic
from ..core.retry import Backoff
from .errors import ConnectionLost, Contention, MappedError


@attrs.frozen
class RetryPolicy:
    """Which transient errors are retried, how soon, and for how long.

    ``connection`` and ``contention`` are the backoffs of :class:`ConnectionLost` and
    :class:`Contention` errors (None: not retried). A call gives up after ``max_attempts``
    retries or ``limit_seconds`` of real time since its first failure, whichever comes
    first (None: no such bound).
    """

    connection: Backoff | None
    contention: Backoff | None
    max_attempts: int | None = None
    limit_seconds: float | None = None

    def backoff_for(self, error: MappedError) -> Backoff | None:
        if isinstance(error, Contention):
            return self.contention
        if isinstance(error, ConnectionLost):
            return self.connection
        return None


@attrs.define
class Attempts:
    """How one call has fared so far: retries made, and when it first failed."""

    retries: int = 0
    first_failure_at: float = 0.0


class Retrier:
    """Applies a :class:`RetryPolicy` inside a backend's statement loop::

        attempts = None
        while True:
            try:
                return <run the statement>
            except driver_error as raw:
                attempts = await retrier.pause(map_error(raw), attempts)

    :meth:`pause` raises the mapped error when the policy gives up on it, and otherwise
    sleeps and returns the updated count.
    """

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self.retries = 0  # every retry this backend made (for tests and diagnostics)

    async def pause(
        self,
        error: MappedError,
        attempts: Attempts | None,
        policy: RetryPolicy | None = None,
    ) -> Attempts:
        policy = self.policy if policy is None else policy
        backoff = policy.backoff_for(error)
        now = monotonic()
        if attempts is None:
            attempts = Attempts(first_failure_at=now)
        if (
            backoff is None
            or (policy.max_attempts is not None and attempts.retries >= policy.max_attempts)
            or (
                policy.limit_seconds is not None
                and now - attempts.first_failure_at >= policy.limit_seconds
            )
        ):
            raise error
        await trio.sleep(backoff.delay(attempts.retries, random.random()))
        attempts.retries += 1
        self.retries += 1
        return attempts
