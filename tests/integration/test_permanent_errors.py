"""A permanent database error is not retried, and never leaves a workflow hanging.

A value the database refuses (a key too long for its index) is the caller's fault: the
backend raises it at once as :class:`InvalidValueError` (a ``ValueError``), without a
retry; inside a workflow body it raises at the call, so an uncaught one is the
workflow's ERROR — never a PENDING row that re-runs at every launch.

The public calls validate their arguments first (tests/unit/test_validation.py), so here
that check is switched off, to show what the database's own refusal does if a value gets
past it. PostgreSQL only: it is PostgreSQL's index that refuses the value.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dbos_trio import DBOS, SetWorkflowID
from dbos_trio._core import validate
from dbos_trio._sysdb.errors import InvalidValueError

from support.backends import status_row

# Over btree's 2704-byte limit for an index row (the key is in the primary key), and
# incompressible, so TOAST cannot shrink it under the limit.
pytestmark = pytest.mark.postgres_only_module("PostgreSQL's index refuses the value")

HUGE_KEY = "".join(f"{i:08x}" for i in range(2000))


async def test_a_value_the_index_refuses_ends_the_workflow_as_error_without_a_retry(
    make_dbos: Callable[..., DBOS], dbos_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(validate, "text", lambda value, *_args, **_kwargs: value)
    dbos = make_dbos()

    @dbos.workflow()
    async def publisher() -> None:
        await dbos.set_event(HUGE_KEY, "value")

    async with dbos.launched():
        sysdb = dbos._require_executor("test").sysdb
        retries_before = sysdb.retries  # type: ignore[attr-defined]
        with SetWorkflowID("huge-key"), pytest.raises(InvalidValueError) as raised:
            await publisher()
        assert isinstance(raised.value, ValueError)
        assert "index row" in str(raised.value)
        assert sysdb.retries == retries_before  # type: ignore[attr-defined]
    row = await status_row(dbos_url, "huge-key")
    assert row["status"] == "ERROR"
