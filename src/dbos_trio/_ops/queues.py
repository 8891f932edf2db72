"""The stored queues every face shares: register, list, retrieve, delete, pause, unpause.

The ``queues`` table is the configuration every executor serves (each re-reads it within
the queue's polling interval; see :mod:`dbos_trio._engine.queues.stored`). These
operations answer :class:`~dbos_trio._core.admission.QueueConfig` rows as stored; each face
wraps them in its own queue object (``Queue`` for ``DBOS``, ``ClientQueue`` for a client),
which carries the runtime setters.

Invariants, and why:

* Arguments are checked at the call, before anything is awaited: a bad name raises
  :class:`~dbos_trio.DBOSInvalidArgumentError` and nothing is read or written.
* None of these is checkpointed, from any face: they administer the application's
  configuration, they are not part of a workflow's work (as in dbos 3.4).
* Listing is by owner: an application's queues and the unclaimed ones; a face of no
  application (a client without ``app_name``) sees every queue.

Cancellation: each is one statement (a registration: an upsert, then a read of the row),
so a cancelled call changed the row whole or not at all. A database failure raises
:class:`~dbos_trio.SystemDatabaseError` after the retries.
"""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from typing import Any

from dbos_trio._core import validate
from dbos_trio._core.admission import QueueConfig, RateLimit
from dbos_trio._engine.admin import pausing
from dbos_trio._engine.queues import stored
from dbos_trio._engine.queues.stored import OnConflict
from dbos_trio._ops.reach import Reach
from dbos_trio.errors import DBOSInvalidArgumentError

__all__ = [
    "OnConflict",
    "delete_queue",
    "list_queues",
    "pause_queue",
    "register_queue",
    "retrieve_queue",
    "unpause_queue",
]


def register_queue(
    reach: Reach,
    name: str,
    *,
    worker_concurrency: int | None = None,
    global_concurrency: int | None = None,
    limiter: RateLimit | None = None,
    partition_concurrency: int | None = None,
    partition_worker_concurrency: int | None = None,
    partition_limiter: RateLimit | None = None,
    polling_interval_sec: float = 1.0,
    on_conflict: OnConflict = "always_update",
    application_name: str | None = None,
) -> Coroutine[Any, Any, QueueConfig]:
    """Create or update the queue row ``name`` for ``application_name`` (None: unclaimed)
    from outside an executor, and answer it as stored.

    ``on_conflict`` is ``"always_update"`` or ``"never_update"``;
    ``"update_if_latest_version"`` needs a running version, which only an executor has,
    and is refused. A name another application owns raises
    :class:`~dbos_trio.DBOSException` in every mode."""
    mode = stored.check_on_conflict(on_conflict)
    if mode == "update_if_latest_version":
        raise DBOSInvalidArgumentError(
            "on_conflict='update_if_latest_version' needs an application version, which "
            "a client does not run: use 'always_update' or 'never_update'"
        )
    config = QueueConfig(
        name=name,
        global_concurrency=global_concurrency,
        worker_concurrency=worker_concurrency,
        limiter=limiter,
        partition_concurrency=partition_concurrency,
        partition_worker_concurrency=partition_worker_concurrency,
        partition_limiter=partition_limiter,
        polling_interval_sec=polling_interval_sec,
        application_name=application_name,
    )
    runtime = reach.runtime("register_queue")
    return stored.register_queue(runtime, config, overwrite=mode == "always_update")


def list_queues(
    reach: Reach, *, application_name: str | Sequence[str] | None = None
) -> Coroutine[Any, Any, list[QueueConfig]]:
    """The stored queues of ``application_name`` (one name or several) and the unclaimed
    ones, by name; with None, the face's application's (every queue for a face of none)."""
    names = _applications(application_name)
    runtime = reach.runtime("list_queues")
    if names is None:
        names = [runtime.app_name]

    async def listing() -> list[QueueConfig]:
        if len(names) == 1:  # in the database's order of names
            return await runtime.sysdb.list_queues(names[0])
        found: dict[str, QueueConfig] = {}
        for owner in names:
            for config in await runtime.sysdb.list_queues(owner):
                found[config.name] = config
        return [found[name] for name in sorted(found)]

    return listing()


def _applications(value: str | Sequence[str] | None) -> list[str | None] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [validate.text(value, "application_name")]
    return list(validate.texts(value, "application_name"))


def retrieve_queue(reach: Reach, name: str) -> Coroutine[Any, Any, QueueConfig | None]:
    """The stored queue called ``name``, or None."""
    validate.text(name, "name")
    runtime = reach.runtime("retrieve_queue")
    return runtime.sysdb.get_queue(name)


def pause_queue(reach: Reach, name: str) -> Coroutine[Any, Any, bool]:
    """Stop every executor's claims from queue ``name``, durably (restarts and
    re-registrations keep it paused); running work goes on. True if this call paused it,
    False if it was paused already. A queue with no row (or the internal queue) raises
    :class:`~dbos_trio.DBOSException`, with nothing changed."""
    validate.text(name, "name")
    runtime = reach.runtime("pause_queue")
    return pausing.pause_queue(runtime, name)


def unpause_queue(reach: Reach, name: str) -> Coroutine[Any, Any, bool]:
    """Let executors claim from queue ``name`` again, with the global concurrency it had.
    True if this call unpaused it, False if it was not paused; errors as
    :func:`pause_queue`."""
    validate.text(name, "name")
    runtime = reach.runtime("unpause_queue")
    return pausing.unpause_queue(runtime, name)


def delete_queue(reach: Reach, name: str) -> Coroutine[Any, Any, bool]:
    """Delete the queue's row (whether there was one); its waiting workflows stay ENQUEUED
    until a queue of that name is registered again."""
    validate.text(name, "name")
    runtime = reach.runtime("delete_queue")
    return runtime.sysdb.delete_queue(name)
