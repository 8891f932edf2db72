"""Registering queues from outside an executor, and changing a stored queue at run time.

Invariants, and why:

* The ``queues`` row is the configuration every executor serves (each re-reads it within
  the queue's polling interval), so a change is one upsert of the whole row, validated
  first: a bad value raises :class:`~dbos_trio.DBOSInvalidArgumentError` and nothing is
  written.
* ``on_conflict`` decides what an existing row of the name becomes, as the official SDK's:
  ``"always_update"`` overwrites it, ``"never_update"`` leaves it as it is,
  ``"update_if_latest_version"`` overwrites it only from the latest application version
  (an executor's choice: a client, which runs no version, refuses it). A row owned by
  another application is never changed: every mode raises.
* A runtime setter changes one field of the *stored* row (read, change, write), not of
  whatever copy the caller holds, so two operators setting different fields do not undo
  each other's change (the last write of the same field wins).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import attrs

from dbos_trio._core.admission import QueueConfig, validate_queue
from dbos_trio.errors import DBOSException, DBOSInvalidArgumentError

if TYPE_CHECKING:
    from dbos_trio._engine.state import Runtime

OnConflict = Literal["update_if_latest_version", "always_update", "never_update"]
ON_CONFLICT_MODES = ("update_if_latest_version", "always_update", "never_update")
SETTABLE = (
    "worker_concurrency",
    "global_concurrency",
    "limiter",
    "partition_concurrency",
    "partition_worker_concurrency",
    "partition_limiter",
    "polling_interval_sec",
)


def check_on_conflict(value: Any) -> str:
    if value not in ON_CONFLICT_MODES:
        raise DBOSInvalidArgumentError(
            f"on_conflict must be one of {', '.join(map(repr, ON_CONFLICT_MODES))}, not {value!r}"
        )
    return str(value)


async def register_queue(runtime: Runtime, config: QueueConfig, *, overwrite: bool) -> QueueConfig:
    """Validate, upsert (overwriting an existing row of ours or unclaimed when
    ``overwrite``), and return the row as stored now. A foreign owner raises
    :class:`~dbos_trio.DBOSException`; a database failure
    :class:`~dbos_trio.SystemDatabaseError`."""
    validate_queue(config)
    await runtime.sysdb.upsert_queue(config, overwrite=overwrite)
    stored = await runtime.sysdb.get_queue(config.name)
    if stored is None:  # deleted between the two statements
        raise DBOSException(f"queue {config.name!r} was deleted while it was registered")
    return stored


async def set_queue_field(
    runtime: Runtime, name: str, field: str, value: Any, *, application_name: str | None
) -> QueueConfig:
    """Change one field of the stored queue ``name``; the row as stored now.

    A queue that does not exist raises :class:`~dbos_trio.DBOSException`; a value that
    makes the queue invalid (``worker_concurrency`` above ``global_concurrency``, ...)
    raises :class:`~dbos_trio.DBOSInvalidArgumentError` and writes nothing.
    """
    if field not in SETTABLE:
        raise DBOSInvalidArgumentError(f"{field!r} is not a settable queue field")
    stored = await runtime.sysdb.get_queue(name)
    if stored is None:
        raise DBOSException(f"queue {name!r} does not exist (register it first)")
    if stored.application_name not in (None, application_name) and application_name is not None:
        raise DBOSException(
            f"queue {name!r} belongs to application {stored.application_name!r}, not "
            f"{application_name!r}"
        )
    changed = attrs.evolve(stored, **{field: value})
    return await register_queue(runtime, changed, overwrite=True)
