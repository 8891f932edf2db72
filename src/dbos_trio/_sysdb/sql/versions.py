"""Application versions, the census of work still to run, and moving a silent executor's
work: what upgrades and adoption need from the system database.

Invariants, and why:

* "Latest" is the highest ``version_timestamp`` among an application's own versions and
  unclaimed ones; promoting a version stamps it now, and claims it when unclaimed (left
  unclaimed, it would be every application's latest).
* Moving another executor's work is one write that clears each row's owner token (the
  fence), and only rows not stamped since a given time: an executor stamps the rows it
  runs (the heartbeat), so a row whose owner is alive is left alone, and one whose owner
  turns out to be alive anyway loses at its next fenced write instead of running on.
"""

from __future__ import annotations

from dbos_trio._sysdb.records import ActiveCount, ApplicationVersion
from dbos_trio._sysdb.sql.base import SQLBackendBase
from dbos_trio._sysdb.statements import Row, Transaction
from dbos_trio.errors import DBOSException


def _version(row: Row) -> ApplicationVersion:
    return ApplicationVersion(
        version_id=str(row[0]),
        version_name=str(row[1]),
        version_timestamp=int(row[2]),
        created_at=int(row[3]),
        application_name=None if row[4] is None else str(row[4]),
    )


class VersionOperations(SQLBackendBase):
    async def list_application_versions(
        self, application_name: str | None
    ) -> list[ApplicationVersion]:
        if application_name is None:
            rows = await self._db.all("list_all_versions", {})
        else:
            rows = await self._db.all(
                "list_versions_of_application", {"application_name": application_name}
            )
        return [_version(row) for row in rows]

    async def set_latest_version(self, version: str, application_name: str, now_ms: int) -> None:
        params = {"version": version, "application_name": application_name, "now": now_ms}

        async def stamp(tx: Transaction) -> Row | None:
            owner = await tx.one("version_owner", params)
            if owner is None or owner[0] not in (None, application_name):
                return owner
            await tx.run("stamp_version", params)
            return None

        refused = await self._db.transaction(stamp)
        if refused is None:
            # Either stamped, or never registered: tell them apart without a write.
            if await self._db.one("version_owner", params) is None:
                raise DBOSException(
                    f"application version {version!r} is not registered: a version exists "
                    "once an executor running it has launched"
                )
            return
        raise DBOSException(
            f"application version {version!r} is registered by application {refused[0]!r}, "
            f"not {application_name!r}: version names are unique across the applications "
            "sharing a system database"
        )

    async def active_counts(self, application_name: str | None) -> list[ActiveCount]:
        if application_name is None:
            rows = await self._db.all("active_counts_all", {})
        else:
            rows = await self._db.all(
                "active_counts_of_application", {"application_name": application_name}
            )
        return [
            ActiveCount(
                application_version=row[0],
                status=str(row[1]),
                executor_id=row[2],
                name=row[3],
                count=int(row[4]),
                last_updated_ms=None if row[5] is None else int(row[5]),
            )
            for row in rows
        ]

    async def reenqueue_executor(
        self,
        executor_id: str,
        application_version: str | None,
        application_name: str,
        now_ms: int,
        *,
        updated_before_ms: int | None = None,
    ) -> list[str]:
        rows = await self._db.all(
            "reenqueue_executor",
            {
                "executor_id": executor_id,
                "any_version": 1 if application_version is None else 0,
                "application_version": application_version or "",
                "application_name": application_name,
                "now": now_ms,
                "updated_before": now_ms if updated_before_ms is None else updated_before_ms,
            },
        )
        return sorted(str(row[0]) for row in rows)

    async def touch_running(self, executor_id: str, workflow_ids: list[str], now_ms: int) -> int:
        if not workflow_ids:
            return 0
        return await self._db.run(
            "touch_running",
            {"executor_id": executor_id, "workflow_ids": list(workflow_ids), "now": now_ms},
        )

    async def silent_executors(
        self, application_name: str, executor_id: str, silent_before_ms: int
    ) -> list[str]:
        rows = await self._db.all(
            "silent_executors",
            {
                "application_name": application_name,
                "executor_id": executor_id,
                "silent_before": silent_before_ms,
            },
        )
        return sorted(str(row[0]) for row in rows)

    async def names_ever_run(self, names: list[str]) -> set[str]:
        if not names:
            return set()
        rows = await self._db.all("names_ever_run", {"names": list(names)})
        return {str(row[0]) for row in rows}
