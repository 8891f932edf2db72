"""``dbos.now()``, ``dbos.random()``, ``dbos.uuid4()``: values from the world, recorded."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from dbos_trio._dbos.base import DBOSBase
from dbos_trio._engine.durable import determinism


class Determinism(DBOSBase):
    def now(self) -> Coroutine[Any, Any, float]:
        """The current time (seconds since the epoch, a float like ``time.time()``).

        From a workflow body it is a step, ``DBOS.now``: the first execution records the
        time and every re-execution (recovery, resume, ``dbos-trio check``) gets the
        recorded value back, so a branch on it replays the same way. Elsewhere, the time
        now. It follows Trio's clock (virtual under a ``MockClock``). The step id is taken
        at the call; a cancelled call records nothing. Outside ``launched()``:
        :class:`~dbos_trio.DBOSNotLaunchedError`.
        """
        return determinism.now(self._require_executor("now"))

    def random(self) -> Coroutine[Any, Any, float]:
        """A random float in [0, 1), recorded as the step ``DBOS.random`` from a workflow
        body (re-executions get the same number back); a plain draw elsewhere. The step id
        is taken at the call; a cancelled call records nothing."""
        self._require_executor("random")
        return determinism.random()

    def uuid4(self) -> Coroutine[Any, Any, str]:
        """A random UUID as a string, recorded as the step ``DBOS.uuid4`` from a workflow
        body (re-executions get the same id back, e.g. for an idempotency key); a fresh
        one elsewhere. The step id is taken at the call; a cancelled call records nothing.
        """
        self._require_executor("uuid4")
        return determinism.uuid4()
