"""Step retry arithmetic: how many attempts, and how long to wait between them.

Pure logic (no Trio, no database) so the schedule is unit-tested on its own: attempt ``i``
(0-based) that fails is followed by a wait of ``interval * backoff_rate ** i``, capped at
``max_interval_seconds`` (at most an hour), and there is no wait after the last attempt.
"""

from __future__ import annotations

import attrs

MAX_RETRY_INTERVAL_SECONDS = 3600.0


@attrs.frozen
class RetryPolicy:
    retries_allowed: bool
    max_attempts: int
    interval_seconds: float
    backoff_rate: float
    max_interval_seconds: float = MAX_RETRY_INTERVAL_SECONDS

    @property
    def attempts(self) -> int:
        return self.max_attempts if self.retries_allowed else 1

    def delay_after(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (0-based)."""
        cap = min(self.max_interval_seconds, MAX_RETRY_INTERVAL_SECONDS)
        return min(self.interval_seconds * self.backoff_rate ** min(attempt, 1024), cap)

    def schedule(self) -> list[float]:
        """Every wait between attempts, in order (one fewer than the attempts)."""
        return [self.delay_after(i) for i in range(self.attempts - 1)]


@attrs.frozen
class Backoff:
    """Capped exponential backoff: ``first * factor ** attempt``, at most ``cap`` seconds,
    scaled by a jitter drawn from ``[1 - jitter, 1 + jitter]`` so that peers who failed
    together do not retry in lockstep."""

    first: float
    cap: float
    factor: float = 2.0
    jitter: float = 0.0

    def delay(self, attempt: int, draw: float = 0.5) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based); ``draw`` is a uniform
        random number in [0, 1) (0.5: no jitter)."""
        base = min(self.first * self.factor ** min(attempt, 64), self.cap)
        return base * (1.0 - self.jitter + 2.0 * self.jitter * draw)
