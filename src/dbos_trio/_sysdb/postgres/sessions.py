"""The settings every connection of the PostgreSQL backend runs once, when it is made.

One round trip at connect time, never per statement: ``idle_in_transaction_session_timeout``
(a transaction left open by a stuck client cannot hold its locks for ever) and, when asked
for, ``synchronous_commit`` (``remote_apply`` or ``on`` with ``synchronous_standby_names``
set on the server: an enqueue, a send or an outcome is acknowledged only once a standby has
it, so a failover loses none of them; docs/concepts/executors.md).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from dbos_trio._pg.driver import TrioConnection

SYNCHRONOUS_COMMIT_LEVELS = ("on", "off", "local", "remote_write", "remote_apply")


def session_settings(
    idle_in_transaction_timeout: float | None, synchronous_commit: str | None = None
) -> Callable[[TrioConnection], Awaitable[None]] | None:
    """What every new connection runs once, or None when there is nothing to set.
    ``synchronous_commit`` must be one of :data:`SYNCHRONOUS_COMMIT_LEVELS` (``Config``
    checks it)."""
    settings = []
    if idle_in_transaction_timeout is not None:
        milliseconds = round(idle_in_transaction_timeout * 1000)
        settings.append(f"SET idle_in_transaction_session_timeout = {milliseconds}")
    if synchronous_commit is not None:
        if synchronous_commit not in SYNCHRONOUS_COMMIT_LEVELS:
            raise ValueError(f"synchronous_commit {synchronous_commit!r} is not a level")
        settings.append(f"SET synchronous_commit = {synchronous_commit}")
    if not settings:
        return None
    statement = "; ".join(settings)

    async def configure(conn: TrioConnection) -> None:
        await conn.execute(statement)

    return configure
