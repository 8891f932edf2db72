"""Opening a :class:`~.driver.TrioConnection`: each host of the conninfo in turn.

Invariants, and why:

* Every attempt is bounded in *real* time (``connect_timeout``), so a host that never
  answers cannot hang a launch, even under ``MockClock(autojump_threshold=0)``.
* Name resolution runs in a worker thread: libpq would otherwise block the Trio loop on
  DNS.
* A failure never carries a secret of the URL (a password quoted back by a parse error,
  say): it is raised as a scrubbed copy chained to nothing (:mod:`.scrubbing`), and the
  connection keeps the scrubber for what it logs.
"""

from __future__ import annotations

from typing import Any

import psycopg
import trio
from psycopg import errors as pg_errors
from psycopg._conninfo_attempts import conninfo_attempts
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from dbos_trio._clock import real_time_limit
from dbos_trio._pg.driver import TrioConnection
from dbos_trio._pg.scrubbing import scrubbed
from dbos_trio._pg.waiting import drive_conn
from dbos_trio._redact import Scrubber, names_a_secret


async def connect(
    conninfo: str = "",
    *,
    autocommit: bool = False,
    connect_timeout: float = 10.0,
    prepare_threshold: int | None = 5,
    scrub: Scrubber | None = None,
    **params: Any,
) -> TrioConnection:
    """Open a :class:`TrioConnection`, trying each host the conninfo names in turn.

    ``connect_timeout`` bounds each attempt in real time. Name resolution runs in a worker
    thread (libpq would otherwise block the Trio loop on DNS). A failure raises a
    ``psycopg.Error`` whose text holds no secret of ``conninfo`` (nor of ``scrub``'s): a
    scrubbed copy, chained to nothing (:mod:`.scrubbing`); the connection keeps the
    scrubber as ``conn.scrub`` for what it logs. Cancellation abandons the attempt.
    """
    scrubber = Scrubber.for_urls(conninfo) | Scrubber.for_values(
        *(str(value) for key, value in params.items() if names_a_secret(key))
    )
    if scrub is not None:
        scrubber = scrubber | scrub
    conn, failure = await _connect(conninfo, connect_timeout, params)
    if conn is None:
        assert failure is not None
        # Raised here, outside every except block, so nothing chains the original to it.
        raise scrubbed(failure, scrubber)
    conn._autocommit = autocommit
    conn.prepare_threshold = prepare_threshold
    conn.scrub = scrubber
    return conn


async def _connect(
    conninfo: str, connect_timeout: float, params: dict[str, Any]
) -> tuple[TrioConnection | None, psycopg.Error | None]:
    """A connection to the first host that answers, or the (raw) error to report."""
    try:
        # libpq's parse errors quote what they could not parse: a password, say.
        attempts = await trio.to_thread.run_sync(
            conninfo_attempts, conninfo_to_dict(conninfo, **params)
        )
    except psycopg.Error as error:
        return None, error
    failures: list[str] = []
    last_error: psycopg.Error | None = None
    for attempt in attempts:
        described = f"host {attempt.get('host')!r}, port {attempt.get('port')!r}"
        try:
            with real_time_limit(connect_timeout) as limit:
                conn = await drive_conn(TrioConnection._connect_gen(make_conninfo("", **attempt)))
            if limit.cancelled_caught:
                raise pg_errors.ConnectionTimeout(
                    f"connection timeout expired after {connect_timeout:g} s"
                )
        except psycopg.Error as error:
            last_error = error
            failures.append(f"{described}: {error}")
            continue
        return conn, None
    if last_error is None:
        return None, psycopg.OperationalError("no host to connect to")
    if len(failures) == 1:
        return None, last_error
    return None, type(last_error)("; ".join(failures))
