"""Renaming an application: re-own its rows under a new name (``rename-application``).

The rows that decide what runs where — queues, schedules, versions, and the workflows
still to run — move in one transaction, so an executor of the new name never finds work
of its own whose version row it cannot see. Finished workflows and their steps, which
only scope listings, move afterwards in batches of ``batch_size`` workflow ids, each its
own transaction, with progress reported after each; a rename interrupted there is
finished by running it again. Stop the application first: an executor of the old name
still running would keep claiming work under it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from dbos_trio._config import APP_NAME_PATTERN
from dbos_trio.errors import DBOSException, DBOSInvalidArgumentError

if TYPE_CHECKING:
    from dbos_trio._engine.state import Runtime

DEFAULT_BATCH_SIZE = 10_000


@attrs.frozen(kw_only=True)
class RenameCounts:
    """Rows a rename moved, by table."""

    queues: int
    schedules: int
    versions: int
    workflows: int
    steps: int


Progress = Callable[[str, int], None]


def check_rename(
    old_name: str | None, new_name: str, *, adopt_unclaimed: bool, batch_size: int
) -> None:
    """Refuse a rename that names nothing to move, an invalid or unchanged name, or a
    batch size that is not a positive integer — before anything is written."""
    if old_name is not None and (not isinstance(old_name, str) or not old_name):
        raise DBOSInvalidArgumentError("rename_application: old_name must be a non-empty str")
    if old_name is None and not adopt_unclaimed:
        raise DBOSInvalidArgumentError(
            "rename_application: nothing to re-own: name the application to rename "
            "(old_name), adopt unclaimed rows, or both"
        )
    if not isinstance(new_name, str) or not APP_NAME_PATTERN.fullmatch(new_name):
        raise DBOSInvalidArgumentError(
            f"rename_application: new_name {new_name!r} must be 3 to 256 characters of "
            "lowercase letters, digits, '_' or '-'"
        )
    if old_name == new_name:
        raise DBOSException(f"application {new_name!r} already has that name: nothing to do")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise DBOSInvalidArgumentError(
            f"rename_application: batch_size must be a positive int, not {batch_size!r}"
        )


async def rename_application(
    runtime: Runtime,
    old_name: str | None,
    new_name: str,
    *,
    adopt_unclaimed: bool = False,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: Progress | None = None,
) -> RenameCounts:
    """Re-own ``old_name``'s rows (and unclaimed ones with ``adopt_unclaimed``) as
    ``new_name``; ``progress(table, moved so far)`` after each batch. Cancellation or a
    database error between batches leaves the finished rows partly moved (run it again);
    the core transaction either moved whole or not at all."""
    check_rename(old_name, new_name, adopt_unclaimed=adopt_unclaimed, batch_size=batch_size)
    sysdb = runtime.sysdb
    core = await sysdb.rename_application_core(old_name, new_name, adopt_unclaimed=adopt_unclaimed)
    if progress is not None:
        progress("in-flight workflows, queues, schedules, versions", core.workflows)
    totals: dict[str, int] = {}
    for table in ("workflows", "steps"):
        total, after = 0, ""
        while True:
            batch = await sysdb.rename_application_batch(
                table,
                old_name,
                new_name,
                adopt_unclaimed=adopt_unclaimed,
                after=after,
                batch_size=batch_size,
            )
            total += batch.moved
            if progress is not None:
                progress(f"finished {table}", total)
            if batch.upper is None:
                break
            after = batch.upper
        totals[table] = total
    return RenameCounts(
        queues=core.queues,
        schedules=core.schedules,
        versions=core.versions,
        workflows=core.workflows + totals["workflows"],
        steps=totals["steps"],
    )
