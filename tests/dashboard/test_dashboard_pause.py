"""The dashboard pauses and unpauses workflows and queues (the shared operations of
``dbos_trio._ops``), over real HTTP with its CSRF check, and offers each only where it
applies: Pause on unfinished work, Unpause (and Cancel) on paused work, nothing when
read-only.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import trio

from dbos_trio import SetWorkflowID
from dbos_trio.testing import sqlite_url

from support.dashboard_support import Browserless, csrf_of, demo_app
from support.waiting import wait_until


def page_of(workflow_id: str) -> str:
    return "/workflow?id=" + quote(workflow_id)


async def test_a_workflow_is_paused_and_unpaused_from_its_page(tmp_path: Path) -> None:
    dbos, fns = demo_app(sqlite_url(tmp_path / "dash.sqlite"))
    async with dbos.launched():
        client = Browserless(await dbos.serve_dashboard(port=0))
        with SetWorkflowID("waits"):
            handle = await dbos.start_workflow(fns["waiter"])

        async def status() -> str | None:
            found = await dbos.get_workflow_status("waits")
            return None if found is None else found.status

        async def act(action: str) -> str:
            confirm = await client.get(f"/confirm?id=waits&action={action}")
            assert confirm.status == 200 and f"{action.capitalize()} this workflow" in confirm.text
            form = {"id": "waits", "action": action, "csrf": csrf_of(confirm.text)}
            reply = await client.post("/action", form)
            assert reply.status == 303
            location: str = reply.headers["location"]
            return location

        page = (await client.get(page_of("waits"))).text
        assert "action-pause" in page and "action-unpause" not in page
        assert "done=paused" in await act("pause")
        assert await status() == "PAUSED"
        page = (await client.get(page_of("waits") + "&done=paused")).text
        assert "action-unpause" in page and "action-pause" not in page
        assert "action-cancel" in page  # a paused workflow can still be cancelled
        assert "nothing runs it until it is unpaused" in page
        assert "done=already-paused" in await act("pause")

        assert "done=unpaused" in await act("unpause")
        await wait_until(lambda: _runs(status))
        await dbos.send("waits", "go!", "go")
        with trio.fail_after(30):
            assert await handle.get_result() == "go!"
        # Finished: neither is offered, and a stale form is refused with a reason.
        page = (await client.get(page_of("waits"))).text
        assert "action-pause" not in page and "action-unpause" not in page
        confirm = await client.get("/confirm?id=waits&action=pause")
        reply = await client.post(
            "/action", {"id": "waits", "action": "pause", "csrf": csrf_of(confirm.text)}
        )
        assert reply.status == 409 and "finished" in reply.text.lower()


async def _runs(status: object) -> bool:
    assert callable(status)
    return await status() in ("ENQUEUED", "PENDING")


async def test_a_queue_is_paused_and_unpaused_from_the_queues_page(tmp_path: Path) -> None:
    dbos, _ = demo_app(sqlite_url(tmp_path / "dash.sqlite"))
    dbos.register_queue("payments", worker_concurrency=2)
    async with dbos.launched():
        client = Browserless(await dbos.serve_dashboard(port=0))

        async def press(action: str) -> str:
            page = (await client.get("/queues")).text
            assert f'class="queue-{action}"' in page
            reply = await client.post(
                "/queue", {"name": "payments", "action": action, "csrf": csrf_of(page)}
            )
            assert reply.status == 303
            location: str = reply.headers["location"]
            return location

        assert "done=paused" in await press("pause")
        configs = {queue.name: queue.config for queue in await dbos.list_queues()}
        assert configs["payments"].paused
        page = (await client.get("/queues?done=paused")).text
        assert "status-paused" in page and "no executor claims from it" in page
        assert "done=unpaused" in await press("unpause")
        configs = {queue.name: queue.config for queue in await dbos.list_queues()}
        assert not configs["payments"].paused
        # Without the CSRF field nothing changes.
        reply = await client.post("/queue", {"name": "payments", "action": "pause"})
        assert reply.status == 403
        configs = {queue.name: queue.config for queue in await dbos.list_queues()}
        assert not configs["payments"].paused
        # A queue with no row is a 404 naming it, not a 500.
        page = (await client.get("/queues")).text
        reply = await client.post(
            "/queue", {"name": "no-such-queue", "action": "pause", "csrf": csrf_of(page)}
        )
        assert reply.status == 404 and "no-such-queue" in reply.text


async def test_read_only_offers_no_pause_and_refuses_the_post(tmp_path: Path) -> None:
    dbos, fns = demo_app(sqlite_url(tmp_path / "dash.sqlite"))
    dbos.register_queue("payments")
    async with dbos.launched():
        client = Browserless(await dbos.serve_dashboard(port=0, read_only=True))
        with SetWorkflowID("waits"):
            await dbos.start_workflow(fns["waiter"])
        assert "action-pause" not in (await client.get(page_of("waits"))).text
        assert "queue-pause" not in (await client.get("/queues")).text
        reply = await client.post("/queue", {"name": "payments", "action": "pause"})
        assert reply.status == 403
        configs = {queue.name: queue.config for queue in await dbos.list_queues()}
        assert not configs["payments"].paused
