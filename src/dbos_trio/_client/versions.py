"""Application versions, stranded work and another executor's recovery, as methods of
:class:`~dbos_trio.Client` (what ``dbos-trio version`` and ``doctor`` run on).

A client has no application version of its own and runs nothing: it acts for the
application named in the call, else the client's ``app_name``; the calls that must
belong to one application refuse to guess.
"""

from __future__ import annotations

from dbos_trio._client.base import ClientBase
from dbos_trio._config import DEFAULT_HEARTBEAT_INTERVAL
from dbos_trio._core import validate
from dbos_trio._engine.admin import rename
from dbos_trio._engine.recovery import adoption, versions
from dbos_trio._sysdb.records import ActiveCount, ApplicationVersion
from dbos_trio.errors import DBOSException


class ClientVersions(ClientBase):
    def _application(self, application_name: str | None, operation: str) -> str:
        validate.optional_text(application_name, "application_name")
        name = application_name or self.app_name
        if name is None:
            raise DBOSException(
                f"Client.{operation} acts for one application: pass application_name, or "
                "open the client with app_name"
            )
        return name

    async def list_application_versions(
        self, *, application_name: str | None = None
    ) -> list[ApplicationVersion]:
        """The application's versions (and unclaimed ones), newest first; every
        application's when the client has no ``app_name`` and none is given."""
        validate.optional_text(application_name, "application_name")
        runtime = self._require("list_application_versions")
        return await runtime.sysdb.list_application_versions(application_name or self.app_name)

    async def get_latest_application_version(
        self, *, application_name: str | None = None
    ) -> ApplicationVersion:
        """The application's latest version; :class:`~dbos_trio.DBOSException` if none."""
        name = self._application(application_name, "get_latest_application_version")
        runtime = self._require("get_latest_application_version")
        return await versions.latest(runtime.sysdb, name)

    async def set_latest_application_version(
        self, version: str, *, application_name: str | None = None
    ) -> None:
        """Make ``version`` the application's latest (see
        :meth:`dbos_trio.DBOS.set_latest_application_version`)."""
        validate.text(version, "version")
        name = self._application(application_name, "set_latest_application_version")
        runtime = self._require("set_latest_application_version")
        await versions.set_latest(runtime.sysdb, version, name, runtime.clock.now_ms())

    async def active_workflow_counts(
        self, *, application_name: str | None = None
    ) -> list[ActiveCount]:
        """PENDING/ENQUEUED/DELAYED rows counted by version, status, executor and name
        (the application's and unclaimed ones; every application's without a name)."""
        validate.optional_text(application_name, "application_name")
        runtime = self._require("active_workflow_counts")
        return await runtime.sysdb.active_counts(application_name or self.app_name)

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
        validate.text(executor_id, "executor_id")
        validate.optional_text(application_version, "application_version")
        name = self._application(application_name, "recover_executor")
        runtime = self._require("recover_executor")
        return await adoption.recover(
            runtime,
            executor_id,
            application_name=name,
            application_version=application_version,
            live_window=adoption.window_ms(heartbeat_interval),
        )

    async def rename_application(
        self,
        old_name: str | None,
        new_name: str,
        *,
        batch_size: int = rename.DEFAULT_BATCH_SIZE,
        adopt_unclaimed_rows: bool = False,
        progress: rename.Progress | None = None,
    ) -> rename.RenameCounts:
        """Re-own ``old_name``'s rows (and, with ``adopt_unclaimed_rows``, unclaimed ones)
        as ``new_name``: queues, schedules, versions and in-flight workflows in one
        transaction, then finished workflows and steps in batches, ``progress(what,
        count)`` after each. Stop the application first. Bad arguments raise before
        anything is written; an interrupted rename is finished by running it again."""
        runtime = self._require("rename_application")
        return await rename.rename_application(
            runtime,
            old_name,
            new_name,
            adopt_unclaimed=adopt_unclaimed_rows,
            batch_size=batch_size,
            progress=progress,
        )
