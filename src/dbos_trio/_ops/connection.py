"""Checking that a face still reaches its system database: one cheap round trip.

The probe is a primary-key read of a workflow id no workflow has (the reserved ``""``,
which no start accepts), so it reads one index page and changes nothing. It runs under a
deadline because the backend retries a lost connection (for ``database_retry_limit``, or
until the database is back): a check must answer, not wait out an outage. Either way
(the deadline passed, or the retries gave up) the answer is
:class:`~dbos_trio.SystemDatabaseUnreachable`, the error opening an unreachable
database raises, so a caller handles "cannot reach it" one way.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

import trio

from dbos_trio._core import validate
from dbos_trio._engine.state import Runtime
from dbos_trio._ops.reach import Reach
from dbos_trio._sysdb.errors import SystemDatabaseUnreachable, TransientDatabaseError

# The id the probe reads: no workflow can have it (ids are non-empty text).
PROBE_ID = ""


def check_connection(reach: Reach, *, timeout: float) -> Coroutine[Any, Any, None]:
    """Return once one statement made the round trip to the system database; raise
    :class:`~dbos_trio.SystemDatabaseUnreachable` if none did within ``timeout``
    seconds (or the retry policy gave up first). Never checkpointed; cancellation raises
    ``trio.Cancelled`` and changes nothing (the probe only reads)."""
    validate.seconds(timeout, "timeout", positive=True)
    runtime = reach.runtime("check_connection")
    return _probe(runtime, timeout)


async def _probe(runtime: Runtime, timeout: float) -> None:
    try:
        with trio.fail_after(timeout):
            await runtime.sysdb.get_outcome(PROBE_ID)
    except trio.TooSlowError:
        raise SystemDatabaseUnreachable(
            f"check_connection: no answer from the system database within {timeout:g} s"
        ) from None
    except TransientDatabaseError as error:
        raise SystemDatabaseUnreachable(
            f"check_connection: the system database cannot be reached ({error})"
        ) from None
