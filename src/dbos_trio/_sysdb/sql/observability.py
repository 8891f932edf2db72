"""Reads made only for observability: the persisted trace carrier, queue depths, and the
retry counters of the statement loop.

Invariant: nothing here writes, and nothing here is on a path that runs while tracing
and metrics are off.
"""

from __future__ import annotations

import json
from typing import Any

from dbos_trio._sysdb.sql.base import SQLBackendBase


class ObservabilityOperations(SQLBackendBase):
    async def workflow_attributes(self, workflow_id: str) -> dict[str, Any] | None:
        row = await self._db.one("workflow_attributes", {"workflow_id": workflow_id})
        if row is None or row[0] is None:
            return None
        raw = row[0]
        if isinstance(raw, str | bytes):  # SQLite stores TEXT; JSONB arrives decoded
            try:
                raw = json.loads(raw)
            except ValueError:
                return None
        return raw if isinstance(raw, dict) else None

    def retry_counts(self) -> tuple[int, int]:
        retrier = self._db.retrier
        return retrier.retries, retrier.outages
