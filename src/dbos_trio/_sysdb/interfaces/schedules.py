"""Schedules and debouncing: rows that start workflows later, and their firings.

Invariant: a firing's workflow row and the schedule's ``last_fired_at`` commit together, and
a debounce push and its caller's checkpoint commit together, so neither fires twice.
"""

from __future__ import annotations

from typing import Protocol

from dbos_trio._sysdb.records import (
    Bounce,
    BounceResult,
    Caller,
    InitResult,
    NewWorkflow,
    ScheduleFilters,
    ScheduleRow,
)


class ScheduleStore(Protocol):
    """Schedules and debouncing (sql/schedules.py, sql/debounce.py)."""

    async def create_schedule(self, row: ScheduleRow) -> None:
        """Insert a schedule; a name that exists raises
        :class:`~dbos_trio.errors.DBOSException` and writes nothing."""

    async def apply_schedules(self, rows: list[ScheduleRow]) -> None:
        """Upsert schedules by name in one transaction, keeping each existing row's id,
        status and ``last_fired_at``; a name owned by another application raises and
        writes nothing."""

    async def list_schedules(self, filters: ScheduleFilters) -> list[ScheduleRow]:
        """Schedules matching ``filters``, by name."""

    async def get_schedule(self, name: str) -> ScheduleRow | None: ...

    async def delete_schedule(self, name: str) -> bool: ...

    async def set_schedule_status(self, name: str, status: str) -> bool:
        """Set ACTIVE or PAUSED; False if there is no such schedule."""

    async def fire_schedule(
        self, new: NewWorkflow, *, fired_at: str | None, version_of: str | None
    ) -> InitResult:
        """Insert a firing's workflow row, or find the existing one, in one transaction
        that stamps the row with the latest version of application ``version_of`` and,
        when this call created the row and ``fired_at`` is given, records it as the
        schedule's ``last_fired_at``."""

    async def bounce(self, bounce: Bounce, caller: Caller | None) -> BounceResult:
        """Push the key's debounced DELAYED workflow back (capped at its deadline) with new
        inputs, or report who holds the key; one transaction. With ``caller``, fenced by its
        owner token and recorded as its ``DBOS.debounce_delayed_workflow`` checkpoint in the
        same transaction (a checkpoint already there is returned instead)."""
