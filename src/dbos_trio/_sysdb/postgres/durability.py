"""How durable an acknowledged commit is on this PostgreSQL server: read for ``doctor``.

On a single server a commit is durable once its WAL is on the server's disk. With a
streaming standby it depends on ``synchronous_commit`` and ``synchronous_standby_names``:
with an asynchronous standby, a failover to it loses the commits it had not received yet —
enqueues, sends, outcomes that callers were told had happened (docs/concepts/executors.md).
Reads only.
"""

from __future__ import annotations

from dbos_trio._sysdb.postgres.statements import PostgresStatements
from dbos_trio._sysdb.records import ReplicationState

_SETTINGS = (
    "SELECT name, setting FROM pg_catalog.pg_settings "
    "WHERE name IN ('synchronous_commit', 'synchronous_standby_names')"
)
# Other roles' standbys are visible only to a privileged role: an empty list means "none
# visible", and the diagnosis says so.
_STANDBYS = "SELECT application_name, sync_state FROM pg_catalog.pg_stat_replication"


async def replication_state(db: PostgresStatements) -> ReplicationState:
    """The session's ``synchronous_commit``, the server's standby names, the standbys."""
    settings = {str(name): str(value) for name, value in await db.query(_SETTINGS, [])}
    standbys = await db.query(_STANDBYS, [])
    return ReplicationState(
        synchronous_commit=settings.get("synchronous_commit", ""),
        synchronous_standby_names=settings.get("synchronous_standby_names", ""),
        standbys=tuple((str(name or ""), str(state or "")) for name, state in standbys),
    )
