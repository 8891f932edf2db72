"""Faults injected at the driver boundary: a statement commits, and its reply is lost.

The most treacherous fault a database client sees is the one where the server did the
work and the client never heard: the connection drops between COMMIT and the reply (the
server restarted, a proxy died, a network partition). The client cannot tell it from a
statement that never ran, so it retries — and every write must land on the state it
already made. Temporal calls this "execute and timeout".

:func:`lose_replies` makes that happen on purpose, on the PostgreSQL driver of this
process: within the block, the next execution of each named system-database statement
runs on the server — committing, when it runs outside a transaction block — and then its
connection is closed and the caller gets the error a dropped connection gives
(``psycopg.OperationalError``), exactly as if the reply had been lost. A statement run
inside a transaction block loses its reply at that transaction's ``COMMIT`` instead,
after the commit. The backend's retry policy takes it from there.

PostgreSQL only: the SQLite backend runs in-process, where a committed statement's result
cannot be lost.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import attrs
import psycopg
from psycopg import pq

from dbos_trio._pg.driver import TrioConnection
from dbos_trio._sysdb.postgres.backend import statement_text

_IDLE = pq.TransactionStatus.IDLE


@attrs.define
class LostReplies:
    """What :func:`lose_replies` did: the statements whose replies it dropped, in order."""

    lost: list[str] = attrs.field(factory=list)
    pending: dict[str, int] = attrs.field(factory=dict)

    def remaining(self, name: str) -> int:
        return self.pending.get(name, 0)


@contextmanager
def lose_replies(
    *names: str,
    times: int = 1,
    schema: str = "dbos",
    where: Callable[[str, Mapping[str, Any]], bool] | None = None,
) -> Iterator[LostReplies]:
    """Within the block, the next ``times`` executions of each statement in ``names`` (the
    names of the backends' ``queries/*.sql`` blocks, e.g. ``"record_step"``; the claim's
    variants are ``claim_skip_locked``, ``claim_nowait`` and their ``_partition`` forms)
    commit and then lose their connection before the reply is read. ``where(name,
    params)``, if given, picks which executions count (e.g. one queue's claims).

    Patches :class:`~dbos_trio._pg.driver.TrioConnection` for the whole
    process while the block runs (a test helper, not for production).
    """
    faults = LostReplies(pending=dict.fromkeys(names, times))
    by_text = {statement_text(schema, name): name for name in names}
    original_execute, original_fetch = TrioConnection.execute, TrioConnection.fetch
    doomed_at_commit: dict[int, str] = {}

    async def faulted(
        conn: TrioConnection, query: Any, params: Any, run: Callable[[], Awaitable[Any]]
    ) -> Any:
        name = by_text.get(query) if isinstance(query, str) else None
        if name is not None and where is not None and not where(name, params or {}):
            name = None
        commit_of = doomed_at_commit.pop(id(conn), None) if query == "COMMIT" else None
        result = await run()
        if commit_of is not None:
            _drop(conn, faults, commit_of)
        if name is not None and faults.pending.get(name, 0) > 0:
            faults.pending[name] -= 1
            if conn.pgconn.transaction_status == _IDLE:
                _drop(conn, faults, name)  # it ran (and committed) on its own
            else:
                doomed_at_commit[id(conn)] = name  # lose its transaction's COMMIT reply
        return result

    async def execute(self: TrioConnection, query: Any, params: Any = None, **kwargs: Any) -> Any:
        return await faulted(
            self, query, params, lambda: original_execute(self, query, params, **kwargs)
        )

    async def fetch(self: TrioConnection, query: str, params: Mapping[str, Any]) -> Any:
        if self.fast_statement_for(query, params) is None:
            # Handed to execute, which meets the fault there: one statement, one fault.
            return await original_fetch(self, query, params)
        return await faulted(self, query, params, lambda: original_fetch(self, query, params))

    TrioConnection.execute = execute  # type: ignore[method-assign]
    TrioConnection.fetch = fetch  # type: ignore[method-assign]
    try:
        yield faults
    finally:
        TrioConnection.execute = original_execute  # type: ignore[method-assign]
        TrioConnection.fetch = original_fetch  # type: ignore[method-assign]


def _drop(conn: TrioConnection, faults: LostReplies, name: str) -> None:
    faults.lost.append(name)
    conn.pgconn.finish()
    raise psycopg.OperationalError(
        f"server closed the connection unexpectedly (lost reply injected after {name})"
    )
