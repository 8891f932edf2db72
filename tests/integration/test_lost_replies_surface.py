"""Lost replies on the issue-17 writes: a rewind and a bulk send commit, their reply is
lost (:func:`dbos_trio.testing.faults.lose_replies`), and the backend's retry must land
on what the first attempt did — the rewind reported done (not refused as "active"), each
message sent once. PostgreSQL only, like tests/integration/test_lost_replies.py."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from dbos_trio import DBOS, SendMessage, SetWorkflowID
from dbos_trio.testing.faults import lose_replies

from support.backends import query, status_row

pytestmark = pytest.mark.postgres_only_module(
    "lost replies are a network fault of a PostgreSQL client"
)

MakeDBOS = Callable[..., DBOS]
UNSERVED = "nobody_serves_this_q"


async def test_a_rewind_whose_reply_was_lost_is_reported_done(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def target() -> str:
        return "done"

    async with dbos.launched():
        with SetWorkflowID("lr-rewind"):
            await target()
        with lose_replies("rewind_enqueue") as faults:
            await dbos.rewind_workflow("lr-rewind", queue_name=UNSERVED)
    assert faults.lost == ["rewind_enqueue"]
    row = await status_row(dbos_url, "lr-rewind")
    assert (row["status"], row["queue_name"]) == ("ENQUEUED", UNSERVED)


async def test_a_bulk_send_whose_reply_was_lost_sends_each_message_once(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def parked() -> None:
        return None

    @dbos.workflow()
    async def sender() -> None:
        await dbos.send_bulk(
            [
                SendMessage(destination_id="lr-a", message=1),
                SendMessage(destination_id="lr-b", message=2),
            ]
        )

    async with dbos.launched():
        for workflow_id in ("lr-a", "lr-b"):
            with SetWorkflowID(workflow_id):
                await dbos.enqueue_workflow(UNSERVED, parked)
        with lose_replies("send_message") as faults, SetWorkflowID("lr-sender"):
            await sender()
    assert faults.lost == ["send_message"]
    sent = await query(
        dbos_url, "SELECT destination_uuid FROM {t}notifications ORDER BY destination_uuid"
    )
    assert sent == [("lr-a",), ("lr-b",)]
