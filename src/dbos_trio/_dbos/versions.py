"""Upgrades, as methods of ``DBOS``: patching, application versions, recovering an executor.

Patching changes a workflow's code without stranding the executions already recorded
(:mod:`dbos_trio._engine.durable.patching`); application versions say which code may run which
rows (:mod:`dbos_trio._engine.recovery.versions`); recovering an executor re-enqueues a dead
machine's PENDING rows from any live one (:mod:`dbos_trio._engine.recovery.adoption`).
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from dbos_trio._dbos.base import DBOSBase
from dbos_trio._engine.durable import patching
from dbos_trio._ops import versions as ops
from dbos_trio._sysdb.records import ApplicationVersion


class Versions(DBOSBase):
    # --- patching ------------------------------------------------------------------------

    def patch(self, name: str) -> Coroutine[Any, Any, bool]:
        """``if await dbos.patch("fix-x"):`` new code ``else:`` the code it replaces.

        Workflow body only (refused elsewhere with :class:`~dbos_trio.DBOSException`). True
        for an execution that started with the patch in place (a ``DBOS.patch-<name>``
        marker is recorded, as every DBOS SDK records it), False for one recorded before
        it. Pin ``app_version``: patching is how code changes under a stable version.
        Cancellation before the marker is written leaves nothing; a later execution decides
        again.
        """
        self._require_executor("patch")
        return patching.patch(name)

    def deprecate_patch(self, name: str) -> Coroutine[Any, Any, bool]:
        """Always True: keeps replaying executions that recorded the patch marker once the
        old branch is deleted, and writes no marker (workflow body only)."""
        self._require_executor("deprecate_patch")
        return patching.deprecate_patch(name)

    # --- application versions ------------------------------------------------------------

    async def list_application_versions(self) -> list[ApplicationVersion]:
        """This application's registered versions (and unclaimed ones), newest first.

        A database failure raises :class:`~dbos_trio.SystemDatabaseError` (after the
        retry policy gave up); cancellation changes nothing.
        """
        return await ops.list_application_versions(self._reach)

    async def get_latest_application_version(self) -> ApplicationVersion:
        """The latest version of this application: the one that runs version-less work.

        :class:`~dbos_trio.DBOSException` if none is registered (never, once launched).
        """
        return await ops.get_latest_application_version(self._reach)

    async def set_latest_application_version(
        self, version: str, *, application_name: str | None = None
    ) -> None:
        """Make ``version`` the latest (stamp it now): promote a new one, or roll back.

        Acts for ``application_name`` (default: this application). A version no
        application registered, or one registered by another application, raises
        :class:`~dbos_trio.DBOSException` and changes nothing. One transaction; a
        cancelled call either stamped the version or did not.
        """
        await ops.set_latest_application_version(
            self._reach, version, application_name=application_name
        )

    # --- recovering another executor's work ----------------------------------------------

    async def recover_executor(
        self, executor_id: str, *, application_version: str | None = None
    ) -> list[str]:
        """Re-enqueue the PENDING rows of ``executor_id`` (this application's and unclaimed
        ones; of ``application_version`` only, or of every version when None); their ids.

        For a dead machine's work. A row its owner stamped within three heartbeat
        intervals (``Config.heartbeat_interval``) is taken to be running and left alone
        (logged with the count), so recovering a live executor runs nothing twice. The
        rest move in one write that clears each row's owner token (the fence): an owner
        that was alive after all loses at its next checkpoint write. Rows keep their
        version, and run on executors of it. Cancellation: the write happened whole or
        not at all; a database failure raises :class:`~dbos_trio.SystemDatabaseError`.
        """
        return await ops.recover_executor(
            self._reach, executor_id, application_version=application_version
        )
