"""The shared message operations (``dbos_trio._ops.messages``) seen from both faces: a
``DBOS`` workflow body records its sends and reads as checkpoints, a client used from the
very same body records nothing, and ``DBOS.send_bulk`` reaches forks too.

On both backends; the rows are read on the test's own connection.
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from dbos_trio import DBOS, Client, SendMessage, SetWorkflowID

from support.backends import query, steps_of

MakeDBOS = Callable[..., DBOS]
UNSERVED = "nobody_serves_q"


async def test_a_client_used_inside_a_workflow_body_records_no_step(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def box() -> list[str]:
        return [await dbos.recv("t", timeout_seconds=30) for _ in range(3)]

    @dbos.workflow()
    async def writer() -> None:
        await dbos.write_stream("s", "v")
        await dbos.close_stream("s")

    client = Client(dbos_url, app_name="wf-tests")

    @dbos.workflow()
    async def relay() -> list[object]:
        await client.send("box", "from client", "t")
        await client.send_bulk([SendMessage(destination_id="box", message="bulk", topic="t")])
        await dbos.send("box", "from dbos", "t")
        return [
            await client.read_stream_offset("writer", "s", 0),
            [v async for v in client.read_stream("writer", "s")],
            await client.get_event("writer", "missing", timeout_seconds=0),
        ]

    async with dbos.launched(), client:
        with SetWorkflowID("box"):
            inbox = await dbos.start_workflow(box)
        with SetWorkflowID("writer"):
            await writer()
        with SetWorkflowID("relay"), trio.fail_after(30):
            assert await relay() == ["v", ["v"], None]
            assert sorted(await inbox.get_result()) == ["bulk", "from client", "from dbos"]
    # Only DBOS's own send is a checkpoint of the body.
    assert await steps_of(dbos_url, "relay") == [(1, "DBOS.send", None)]


async def test_dbos_send_bulk_reaches_every_fork_of_each_destination(
    make_dbos: MakeDBOS, dbos_url: str
) -> None:
    dbos = make_dbos()

    @dbos.workflow()
    async def waiter() -> str:
        return await dbos.recv(timeout_seconds=30)

    async with dbos.launched():
        with SetWorkflowID("orig"):
            original = await dbos.start_workflow(waiter)
        await dbos.send("orig", "first")
        assert await original.get_result() == "first"
        with SetWorkflowID("fork-1"):
            await dbos.fork_workflow("orig", 1, queue_name=UNSERVED)
        with SetWorkflowID("other"):
            await dbos.fork_workflow("orig", 2, queue_name=UNSERVED)
        await dbos.send_bulk(
            [SendMessage(destination_id="fork-1", message="deep", idempotency_key="k1")],
            serialization="portable",
            send_to_forks=True,
        )
        await dbos.send_bulk(
            [SendMessage(destination_id="orig", message="wide", idempotency_key="k2")],
            serialization="portable",
            send_to_forks=True,
        )
    rows = await query(
        dbos_url,
        "SELECT destination_uuid, message FROM {t}notifications WHERE NOT consumed "
        "ORDER BY destination_uuid, message",
    )
    assert [tuple(row) for row in rows] == [
        ("fork-1", '"deep"'),
        ("fork-1", '"wide"'),
        ("orig", '"wide"'),
        ("other", '"wide"'),
    ]
