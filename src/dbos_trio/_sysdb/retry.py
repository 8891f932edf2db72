"""How the backends retry a statement that failed for a transient reason.

Invariants, and why:

* One retry rule for both backends, decided by the *kind* of the error
  (:mod:`dbos_trio._sysdb.errors`), never by the driver: a transient error is retried after
  a backoff, anything else is raised at once. Retrying is safe because every operation of
  the protocol is idempotent by construction (``ON CONFLICT``, ownership tokens,
  statements that find what an earlier attempt committed): a statement whose reply was
  lost, retried, lands on the state it already made.
* A live executor owns its work: by default a transient error is retried for as long as
  the process lives (a policy may bound it, in *real* time: a virtual clock must neither
  make an outage look eternal nor expire the bound in a blink). The pauses are Trio
  sleeps and waits, so a retrying call stays cancellable: shutdown cancels it promptly and
  the row it was writing for stays as the database has it.
* An outage is one event, not a storm: the first lost connection opens it (one WARNING),
  one caller at a time probes the database with backoff while every other caller waits
  for the probe to succeed, and the first statement that succeeds closes it (one INFO,
  with its length) and releases everyone at once. Lock conflicts (contention) are not an
  outage: each caller backs off on its own, in milliseconds.
* What the retrier logs about an error goes through the backend's scrubber first: an
  error's text may quote a secret of the URL (see :mod:`dbos_trio._redact`).
"""

from __future__ import annotations

import logging
import random

import attrs
import trio

from dbos_trio._clock import monotonic
from dbos_trio._core.retry import Backoff
from dbos_trio._redact import NO_SECRETS, Scrubber
from dbos_trio._sysdb.errors import ConnectionLost, Contention, MappedError

logger = logging.getLogger("dbos_trio._sysdb")

# How long a caller waiting out an outage waits for the prober before looking again
# (a prober cancelled mid-probe hands the role on within this time).
WAITER_RECHECK_SECONDS = 5.0


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

    def bounded(self, limit_seconds: float | None) -> RetryPolicy:
        """This policy, giving up after ``limit_seconds`` (None: never)."""
        return attrs.evolve(self, limit_seconds=limit_seconds)


CONNECTION_BACKOFF = Backoff(first=0.1, factor=2.0, cap=2.0, jitter=0.25)
"""A lost connection or a restarting server: 0.1 s doubling to 2 s, +-25 %."""
CONTENTION_BACKOFF = Backoff(first=0.001, factor=2.0, cap=0.1, jitter=0.25)
"""A lost race for a lock: 1 ms doubling to 100 ms, +-25 %."""
EXECUTOR_POLICY = RetryPolicy(connection=CONNECTION_BACKOFF, contention=CONTENTION_BACKOFF)
"""An executor's: every transient error, for as long as it lives."""


@attrs.define
class Attempts:
    """How one call has fared so far: retries made, and when it first failed."""

    retries: int = 0
    first_failure_at: float = 0.0


@attrs.define(eq=False)
class Outage:
    """The database unreachable since ``started_at`` (real time)."""

    started_at: float
    back: trio.Event = attrs.field(factory=trio.Event)
    probing: bool = False
    retried: int = 0


class Retrier:
    """Applies a :class:`RetryPolicy` inside a backend's statement loop::

        attempts = None
        while True:
            try:
                result = <run the statement>
            except driver_error as raw:
                failure = map_error(raw)
            else:
                retrier.succeeded()
                return result
            attempts = await retrier.pause(failure, attempts)  # outside the except

    :meth:`pause` raises the mapped error when the policy gives up on it, and otherwise
    waits and returns the updated count (cancellation interrupts the wait and propagates).
    :meth:`succeeded` ends an outage, if one is on. ``scrub`` cleans what it logs.
    """

    def __init__(
        self, policy: RetryPolicy, *, what: str = "system database", scrub: Scrubber = NO_SECRETS
    ) -> None:
        self.policy = policy
        self.what = what
        self.scrub = scrub
        self.retries = 0  # every retry this backend made (for tests and diagnostics)
        self.outages = 0  # outages seen (for tests and diagnostics)
        self.outage: Outage | None = None

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
        delay = backoff.delay(attempts.retries, random.random())
        if isinstance(error, ConnectionLost):
            await self._wait_out_outage(self.lost(error), delay, policy, attempts)
        else:
            await trio.sleep(delay)
        attempts.retries += 1
        self.retries += 1
        return attempts

    def lost(self, error: BaseException) -> Outage:
        """The database is unreachable: the outage this is part of (opened now if none)."""
        outage = self.outage
        if outage is None:
            outage = self.outage = Outage(started_at=monotonic())
            self.outages += 1
            logger.warning(
                "%s unreachable, retrying until it is back: %s", self.what, self.scrub(error)
            )
        outage.retried += 1
        return outage

    def succeeded(self) -> None:
        """A statement went through: end the outage, if one is on, releasing its waiters."""
        outage = self.outage
        if outage is None:
            return
        self.outage = None
        outage.back.set()
        logger.info(
            "%s is back after %.1f s (%d attempts waited it out)",
            self.what,
            monotonic() - outage.started_at,
            outage.retried,
        )

    async def _wait_out_outage(
        self, outage: Outage, delay: float, policy: RetryPolicy, attempts: Attempts
    ) -> None:
        """Return when this caller should try again: after ``delay`` if it is the one that
        probes, else once the probe succeeded (or the probing role is free)."""
        while not outage.back.is_set():
            if not outage.probing:
                outage.probing = True
                try:
                    await trio.sleep(delay)
                finally:
                    outage.probing = False
                return
            wait = WAITER_RECHECK_SECONDS
            if policy.limit_seconds is not None:
                left = policy.limit_seconds - (monotonic() - attempts.first_failure_at)
                wait = max(0.0, min(wait, left))
            with trio.move_on_after(wait):
                await outage.back.wait()
            if policy.limit_seconds is not None and wait < WAITER_RECHECK_SECONDS:
                return  # the bound is reached: the next failure gives up
