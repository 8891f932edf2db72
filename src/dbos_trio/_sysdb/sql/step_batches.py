"""Checkpoints through group commit: how a batch of step records, of workflow outcomes,
or of workflow starts is written on each backend.

Invariants, and why:

* A batch records exactly what its rows' single writes would have: each row is fenced by
  its own writer's ``owner_xid`` (in the statement, under the workflow row's lock), and a
  row not recorded is reported per row, so its writer runs the same diagnosis as after a
  single write (cancelled, taken over, its own earlier attempt, or nondeterminism). An
  outcome is written only while its row is PENDING and its writer's; "won" is per row.
* On PostgreSQL a batch is one autocommit statement (``record_steps``,
  ``record_outcomes``, ``init_workflows``: the rows as one JSON array,
  one round trip, one commit); on SQLite, one write transaction running ``record_step``
  per row (one commit instead of one per row). Either is retried whole after a transient
  error: rows a lost-reply attempt already committed are then "not recorded" and the
  diagnosis recognises them as the writer's own.
* Off unless :meth:`enable_group_commit` is called (``Config.group_commit``): then
  ``_write_step``, ``_write_outcome`` and ``_write_start`` go through
  :class:`~dbos_trio._sysdb.group_commit.GroupCommit` (one instance each: a batch holds
  one kind of write). A child's start is never batched: it writes its parent's checkpoint
  under the parent's fence, in its own statement.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, ClassVar

from dbos_trio._sysdb.group_commit import GroupCommit
from dbos_trio._sysdb.sql.base import SQLBackendBase
from dbos_trio._sysdb.statements import Row, Transaction


def batch_params(items: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Single-write parameter sets as the one JSON array a PostgreSQL batch statement reads
    with ``json_to_recordset`` (every value is text, a number, a boolean or null).

    Characters beyond ASCII go as themselves, encoded like any text parameter: a
    backslash-u escape would fail in a database whose encoding is not UTF-8."""
    return {"batch": json.dumps(list(items), ensure_ascii=False)}


def first_of_each_id(items: Sequence[dict[str, Any]]) -> list[int]:
    """Indexes of each workflow id's first item, in order."""
    firsts: list[int] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        if item["workflow_id"] not in seen:
            firsts.append(index)
            seen.add(item["workflow_id"])
    return firsts


def recorded_flags(items: Sequence[dict[str, Any]], inserted: set[tuple[str, int]]) -> list[bool]:
    """Per item, whether the batch recorded it. A (workflow, step) pair twice in one batch
    is recorded once: only its first item says so, the other is diagnosed as a single
    write of it would have been."""
    flags, seen = [], set()
    for item in items:
        key = (item["workflow_id"], item["function_id"])
        flags.append(key in inserted and key not in seen)
        seen.add(key)
    return flags


class StepBatchOperations(SQLBackendBase):
    # The backend's one-statement batch, or None: a transaction of single writes.
    STEP_BATCH_STATEMENT: ClassVar[str | None] = None
    OUTCOME_BATCH_STATEMENT: ClassVar[str | None] = None
    INIT_BATCH_STATEMENT: ClassVar[str | None] = None
    _step_commits: GroupCommit[dict[str, Any], bool] | None = None
    _outcome_commits: GroupCommit[dict[str, Any], bool] | None = None
    _start_commits: GroupCommit[dict[str, Any], Row | None] | None = None

    def enable_group_commit(self, *, max_batch: int = 500) -> None:
        """Coalesce concurrent step checkpoints, outcomes and starts of this process (see
        group_commit.py)."""
        self._step_commits = GroupCommit(
            self._write_one_step, self._write_steps, max_batch=max_batch
        )
        self._outcome_commits = GroupCommit(
            self._write_one_outcome, self._write_outcomes, max_batch=max_batch
        )
        self._start_commits = GroupCommit(
            self._write_one_start, self._write_starts, max_batch=max_batch
        )

    @property
    def step_commits(self) -> GroupCommit[dict[str, Any], bool] | None:
        return self._step_commits

    @property
    def start_commits(self) -> GroupCommit[dict[str, Any], Row | None] | None:
        return self._start_commits

    async def _write_step(self, params: dict[str, Any]) -> bool:
        """Record one step checkpoint (fenced); whether it was recorded by this write."""
        if self._step_commits is None:
            return await self._write_one_step(params)
        return await self._step_commits.submit(params)

    async def _write_one_step(self, params: dict[str, Any]) -> bool:
        return await self._db.one("record_step", params) is not None

    async def _write_steps(self, items: Sequence[dict[str, Any]]) -> list[bool]:
        if self.STEP_BATCH_STATEMENT is not None:
            rows = await self._db.all(self.STEP_BATCH_STATEMENT, batch_params(items))
            return recorded_flags(items, {(row[0], int(row[1])) for row in rows})

        async def each(tx: Transaction) -> list[bool]:
            return [await tx.one("record_step", item) is not None for item in items]

        return await self._db.transaction(each)

    async def _write_outcome(self, params: dict[str, Any]) -> bool:
        """Record one workflow outcome (fenced); whether this execution won."""
        if self._outcome_commits is None:
            return await self._write_one_outcome(params)
        return await self._outcome_commits.submit(params)

    async def _write_one_outcome(self, params: dict[str, Any]) -> bool:
        row = await self._db.one("record_outcome", params)
        return row is not None and row[0] == 1

    async def _write_outcomes(self, items: Sequence[dict[str, Any]]) -> list[bool]:
        if self.OUTCOME_BATCH_STATEMENT is not None:
            rows = await self._db.all(self.OUTCOME_BATCH_STATEMENT, batch_params(items))
            won = {(row[0], row[1]) for row in rows}
            return [(item["workflow_id"], item["owner_xid"]) in won for item in items]

        async def each(tx: Transaction) -> list[bool]:
            results = []
            for item in items:
                row = await tx.one("record_outcome", item)
                results.append(row is not None and row[0] == 1)
            return results

        return await self._db.transaction(each)

    async def _write_start(self, params: dict[str, Any]) -> Row | None:
        """Make or find one top-level workflow's row (``init_workflow``); its row."""
        if self._start_commits is None:
            return await self._write_one_start(params)
        return await self._start_commits.submit(params)

    async def _write_one_start(self, params: dict[str, Any]) -> Row | None:
        return await self._db.one("init_workflow", params)

    async def _write_starts(self, items: Sequence[dict[str, Any]]) -> list[Row | None]:
        if self.INIT_BATCH_STATEMENT is None:

            async def each(tx: Transaction) -> list[Row | None]:
                return [await tx.one("init_workflow", item) for item in items]

            return await self._db.transaction(each)
        firsts = first_of_each_id(items)
        batch = [items[index] for index in firsts]
        rows = await self._db.all(self.INIT_BATCH_STATEMENT, batch_params(batch))
        by_id = {row[0]: tuple(row[1:]) for row in rows}
        results: list[Row | None] = [None] * len(items)
        for index in firsts:
            results[index] = by_id.get(items[index]["workflow_id"])
        # What the batch did not answer — a repeated id, two starts of one workflow in one
        # batch — starts alone after it, and finds the row the batch made, as it would find
        # one started first.
        for index, result in enumerate(results):
            if result is None:
                results[index] = await self._write_one_start(items[index])
        return results
