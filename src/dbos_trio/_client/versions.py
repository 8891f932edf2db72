"""Application versions, stranded work and another executor's recovery, as methods of
:class:`~dbos_trio.Client` (what ``dbos-trio version`` and ``doctor`` run on).

A client has no application version of its own and runs nothing: it acts for the
application named in the call, else the client's ``app_name``; without either, the
version calls answer for every application (a version is promoted for the application
that registered it), as dbos 3.4's client does, and recovering an executor refuses to
guess.
"""

from __future__ import annotations

from dbos_trio._client.base import ClientBase
from dbos_trio._config import DEFAULT_HEARTBEAT_INTERVAL
from dbos_trio._ops import versions as ops
from dbos_trio._sysdb.records import ActiveCount, ApplicationVersion


class ClientVersions(ClientBase):
    async def list_application_versions(
        self, *, application_name: str | None = None
    ) -> list[ApplicationVersion]:
        """The application's versions (and unclaimed ones), newest first; every
        application's when the client has no ``app_name`` and none is given."""
        return await ops.list_application_versions(self._reach, application_name=application_name)

    async def get_latest_application_version(
        self, *, application_name: str | None = None
    ) -> ApplicationVersion:
        """The application's latest version (any application's newest, with neither a
        name nor the client's ``app_name``); :class:`~dbos_trio.DBOSException` if none."""
        return await ops.get_latest_application_version(
            self._reach, application_name=application_name
        )

    async def set_latest_application_version(
        self, version: str, *, application_name: str | None = None
    ) -> None:
        """Make ``version`` the application's latest (see
        :meth:`dbos_trio.DBOS.set_latest_application_version`)."""
        await ops.set_latest_application_version(
            self._reach, version, application_name=application_name
        )

    async def active_workflow_counts(
        self, *, application_name: str | None = None
    ) -> list[ActiveCount]:
        """PENDING/ENQUEUED/DELAYED rows counted by version, status, executor and name
        (the application's and unclaimed ones; every application's without a name)."""
        return await ops.active_workflow_counts(self._reach, application_name=application_name)

    async def recover_executor(
        self,
        executor_id: str,
        *,
        application_version: str | None = None,
        application_name: str | None = None,
        heartbeat_interval: float = DEFAULT_HEARTBEAT_INTERVAL,
    ) -> list[str]:
        """Re-enqueue a (dead) executor's PENDING rows, as
        :meth:`dbos_trio.DBOS.recover_executor` does; ``heartbeat_interval`` is the
        executors' ``Config.heartbeat_interval`` (rows stamped within three of it are
        left to their owner). One write; the ids moved."""
        return await ops.recover_executor(
            self._reach,
            executor_id,
            application_version=application_version,
            application_name=application_name,
            heartbeat_interval=heartbeat_interval,
        )

    async def rename_application(
        self,
        old_name: str | None,
        new_name: str,
        *,
        batch_size: int = ops.DEFAULT_BATCH_SIZE,
        adopt_unclaimed_rows: bool = False,
        progress: ops.Progress | None = None,
    ) -> ops.RenameCounts:
        """Re-own ``old_name``'s rows (and, with ``adopt_unclaimed_rows``, unclaimed ones)
        as ``new_name``: queues, schedules, versions and in-flight workflows in one
        transaction, then finished workflows and steps in batches, ``progress(what,
        count)`` after each. Stop the application first. Bad arguments raise before
        anything is written; an interrupted rename is finished by running it again."""
        return await ops.rename_application(
            self._reach,
            old_name,
            new_name,
            batch_size=batch_size,
            adopt_unclaimed_rows=adopt_unclaimed_rows,
            progress=progress,
        )
