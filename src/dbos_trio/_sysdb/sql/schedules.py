"""Schedules: the ``workflow_schedules`` rows, and the one write a firing makes.

Invariants, and why:

* A schedule name is unique across the applications sharing the database. Creating a
  name that exists writes nothing and says so; redefining (``apply_schedules``) keeps the
  row's id, status and ``last_fired_at`` — a redeploy must neither resume a paused
  schedule nor forget where it was — and never takes over another application's row. A
  batch of redefinitions is one transaction: all of it or none.
* A firing is one transaction: stamp the row with the owning application's latest version
  (scheduled work runs on the newest code, as in the official SDK), insert it or find it
  (its id is the tick's, so any number of executors firing one tick make one workflow),
  and — only if this call created it — remember the tick as ``last_fired_at``.
"""

from __future__ import annotations

from typing import Any

from dbos_trio._sysdb.records import InitResult, NewWorkflow, ScheduleFilters, ScheduleRow
from dbos_trio._sysdb.rows import init_result, new_workflow_params
from dbos_trio._sysdb.sql.base import SQLBackendBase
from dbos_trio._sysdb.statements import Row, Transaction
from dbos_trio.errors import DBOSException


def _params(row: ScheduleRow) -> dict[str, Any]:
    return {
        "schedule_id": row.schedule_id,
        "schedule_name": row.schedule_name,
        "workflow_name": row.workflow_name,
        "workflow_class_name": row.workflow_class_name,
        "schedule": row.schedule,
        "status": row.status,
        "context": row.context,
        "last_fired_at": row.last_fired_at,
        "automatic_backfill": row.automatic_backfill,
        "cron_timezone": row.cron_timezone,
        "queue_name": row.queue_name,
        "application_name": row.application_name,
    }


def _schedule(row: Row) -> ScheduleRow:
    return ScheduleRow(
        schedule_id=row[0],
        schedule_name=row[1],
        workflow_name=row[2],
        workflow_class_name=row[3],
        schedule=row[4],
        status=row[5],
        context=row[6],
        last_fired_at=row[7],
        automatic_backfill=bool(row[8]),
        cron_timezone=row[9],
        queue_name=row[10],
        application_name=row[11],
    )


def _matches(row: ScheduleRow, filters: ScheduleFilters) -> bool:
    if filters.statuses is not None and row.status not in filters.statuses:
        return False
    if filters.workflow_names is not None and row.workflow_name not in filters.workflow_names:
        return False
    if filters.name_prefixes is not None and not any(
        row.schedule_name.startswith(prefix) for prefix in filters.name_prefixes
    ):
        return False
    return not (
        filters.application_names is not None
        and row.application_name is not None
        and row.application_name not in filters.application_names
    )


class ScheduleOperations(SQLBackendBase):
    async def create_schedule(self, row: ScheduleRow) -> None:
        params = _params(row)

        async def create(tx: Transaction) -> tuple[int, Row | None]:
            inserted = await tx.run("insert_schedule", params)
            return inserted, None if inserted else await tx.one("schedule_owner", params)

        inserted, owner = await self._db.transaction(create)
        if not inserted:
            owned_by = "" if owner is None or owner[0] is None else f" (owned by {owner[0]!r})"
            raise DBOSException(f"Schedule '{row.schedule_name}' already exists{owned_by}")

    async def apply_schedules(self, rows: list[ScheduleRow]) -> None:
        async def apply(tx: Transaction) -> None:
            for row in rows:
                params = _params(row)
                await tx.run("upsert_schedule", params)
                owner = await tx.one("schedule_owner", params)
                if owner is not None and owner[0] not in (None, row.application_name):
                    # Raised inside the transaction: none of the batch is written.
                    raise DBOSException(
                        f"Schedule '{row.schedule_name}' belongs to application {owner[0]!r}:"
                        " schedule names are unique across the applications sharing a "
                        "system database"
                    )

        await self._db.transaction(apply)

    async def list_schedules(self, filters: ScheduleFilters) -> list[ScheduleRow]:
        rows = [_schedule(row) for row in await self._db.all("list_schedules", {})]
        return [row for row in rows if _matches(row, filters)]

    async def get_schedule(self, name: str) -> ScheduleRow | None:
        row = await self._db.one("get_schedule", {"schedule_name": name})
        return None if row is None else _schedule(row)

    async def delete_schedule(self, name: str) -> bool:
        return await self._db.run("delete_schedule", {"schedule_name": name}) > 0

    async def set_schedule_status(self, name: str, status: str) -> bool:
        changed = await self._db.run(
            "set_schedule_status", {"schedule_name": name, "status": status}
        )
        return changed > 0

    async def fire_schedule(
        self, new: NewWorkflow, *, fired_at: str | None, version_of: str | None
    ) -> InitResult:
        async def fire(tx: Transaction) -> Row:
            version = None
            if version_of is not None:
                latest = await tx.one("latest_version", {"application_name": version_of})
                version = None if latest is None else latest[0]
            params = new_workflow_params(new, None)
            params["application_version"] = version
            row = await tx.one("init_workflow", params)
            assert row is not None
            if row[0] and fired_at is not None:
                await tx.run(
                    "record_schedule_fired",
                    {"schedule_name": new.schedule_name, "fired_at": fired_at},
                )
            return row

        return init_result(await self._db.transaction(fire))
