"""The dashboard over real HTTP (hypercorn on a free port, a SQLite system database):
escaping of hostile stored strings, CSRF, read-only mode, the token, the Host check,
pickle only when allowed, filters and paging, and that each action acts on the database.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import trio

from dbos_trio import DBOS, Client, DBOSConfigError, DBOSNotLaunchedError, SetWorkflowID
from dbos_trio.dashboard import DashboardSettings
from dbos_trio.dashboard._http import Request
from dbos_trio.dashboard._server import make_app
from dbos_trio.testing import sqlite_url

from support.backends import execute
from support.dashboard_support import (
    HOSTILE_ID,
    SCRIPT,
    Browserless,
    csrf_of,
    demo_app,
)
from support.waiting import wait_until

TOKEN = "t0ken-for-the-dashboard-tests"


@asynccontextmanager
async def dashboard(
    tmp_path: Path, **settings: Any
) -> AsyncIterator[tuple[DBOS, dict[str, Any], Browserless]]:
    dbos, fns = demo_app(sqlite_url(tmp_path / "dash.sqlite"))
    async with dbos.launched():
        with SetWorkflowID(HOSTILE_ID):
            handle = await dbos.start_workflow(fns["order"], 5, SCRIPT)
        await handle.get_result()
        base = await dbos.serve_dashboard(port=0, **settings)
        yield dbos, fns, Browserless(base)


def page_of(workflow_id: str) -> str:
    return "/workflow?id=" + quote(workflow_id)


async def _is_pending(dbos: DBOS, workflow_id: str) -> bool:
    return await status_of(dbos, workflow_id) == "PENDING"


async def status_of(dbos: DBOS, workflow_id: str) -> str | None:
    status = await dbos.get_workflow_status(workflow_id)
    return None if status is None else status.status


async def test_every_stored_string_is_escaped_on_every_page(tmp_path: Path) -> None:
    async with dashboard(tmp_path) as (_dbos, _fns, client):
        paths = ("/workflows", page_of(HOSTILE_ID), "/queues", "/executors", "/overview")
        for path in paths:
            reply = await client.get(path)
            assert reply.status == 200, path
            assert "<script>alert" not in reply.text, path
        # The overview's latency chart and table name the hostile workflow, escaped.
        assert "orders.&lt;script&gt;" in (await client.get("/overview")).text
        listing = (await client.get("/workflows")).text
        assert "wf-&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in listing
        assert "orders.&lt;script&gt;" in listing
        page = (await client.get(page_of(HOSTILE_ID))).text
        # The portable payloads are decoded (JSON) and escaped; event keys and stream values too.
        assert "&lt;script&gt;alert(\\&quot;x\\&quot;)&lt;/script&gt;" in page
        assert "state-&lt;script&gt;" in page and "50% &lt;script&gt;" in page
        # Only this server's script runs: the policy forbids inline ones.
        csp = (await client.get("/workflows")).headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp


async def test_a_hostile_filter_value_is_escaped_too(tmp_path: Path) -> None:
    async with dashboard(tmp_path) as (_dbos, _fns, client):
        reply = await client.get("/workflows?name=" + quote('"><script>x</script>'))
        assert reply.status == 200 and "<script>x" not in reply.text
        assert "&quot;&gt;&lt;script&gt;x" in reply.text
        missing = await client.get(page_of(SCRIPT))
        assert missing.status == 404 and "<script>alert" not in missing.text


async def test_the_workflow_page_shows_steps_children_events_streams_and_messages(
    tmp_path: Path,
) -> None:
    async with dashboard(tmp_path) as (dbos, fns, client):
        waiting = await dbos.start_workflow(fns["waiter"])
        await dbos.send(waiting.workflow_id, {"hello": SCRIPT}, "other-topic")
        page = (await client.get(page_of(HOSTILE_ID))).text
        for expected in ("charge", "fails-then-not", "DBOS.setEvent", "DBOS.writeStream"):
            assert expected in page
        assert f"{quote(HOSTILE_ID, safe='')}-6" in page  # the child, linked
        assert "progress" in page and "100%" in page
        # A pickled step error is read without unpickling (no --allow-pickle needed), and
        # escaped like everything else.
        assert "ValueError: bad &lt;script&gt;" in page and "traceback:" in page
        messages = (await client.get(page_of(waiting.workflow_id))).text
        assert "other-topic" in messages and "waiting" in messages
        assert "<script>alert" not in messages
        await dbos.cancel_workflow(waiting.workflow_id)


async def test_pickled_payloads_are_decoded_only_when_allowed(tmp_path: Path) -> None:
    async with dashboard(tmp_path) as (dbos, fns, client):
        handle = await dbos.start_workflow(fns["pickled"], {"secret": "visible-when-allowed"})
        await handle.get_result()
        page = (await client.get(page_of(handle.workflow_id))).text
        assert "visible-when-allowed" not in page and "--allow-pickle" in page
        trusted = Browserless(await dbos.serve_dashboard(port=0, allow_pickle=True))
        page = (await trusted.get(page_of(handle.workflow_id))).text
        assert "visible-when-allowed" in page
        step_page = (await trusted.get(page_of(HOSTILE_ID))).text
        assert "ValueError: bad &lt;script&gt;" in step_page


async def test_cancel_resume_fork_and_delete_act_on_the_database(tmp_path: Path) -> None:
    async with dashboard(tmp_path) as (dbos, fns, client):
        waiting = await dbos.start_workflow(fns["waiter"])
        wid = waiting.workflow_id

        async def act(action: str, **extra: str) -> Any:
            confirm = await client.get(f"/confirm?id={quote(wid)}&action={action}")
            assert confirm.status == 200 and "Confirm" in confirm.text
            form = {"id": wid, "action": action, "csrf": csrf_of(confirm.text), **extra}
            return await client.post("/action", form)

        reply = await act("cancel")
        assert reply.status == 303 and "done=cancelled" in reply.headers["location"]
        assert await status_of(dbos, wid) == "CANCELLED"
        reply = await act("resume")
        assert reply.status == 303
        assert await status_of(dbos, wid) in ("ENQUEUED", "PENDING")
        await dbos.send(wid, "go!", "go")
        with trio.fail_after(30):
            assert await (await dbos.retrieve_workflow(wid)).get_result() == "go!"
        wid = HOSTILE_ID  # finished: cancel and resume leave it as it is, and say so
        reply = await act("cancel")
        assert "done=already-finished" in reply.headers["location"]
        reply = await act("resume")
        assert "done=not-resumed" in reply.headers["location"]
        assert await status_of(dbos, wid) == "SUCCESS"
        page = (await client.get(page_of(wid))).text
        assert "action-fork" in page and "action-cancel" not in page
        assert "action-resume" not in page
        reply = await act("fork", step="2")
        forked_id = reply.headers["location"].split("id=")[1].split("&")[0]
        forked = await dbos.retrieve_workflow(forked_id)
        with trio.fail_after(30):
            assert await forked.get_result() == f"done {SCRIPT}"
        forked_steps = await dbos.list_workflow_steps(forked_id)
        assert forked_steps[0].function_name == "charge"
        reply = await act("delete", delete_children="1")
        assert reply.status == 303 and "/workflows" in reply.headers["location"]
        assert "Deleted." in (await client.get(reply.headers["location"])).text
        crafted = await client.get(f"/workflows?done={quote('Call +1 555 for support')}")
        assert "555" not in crafted.text
        assert await status_of(dbos, HOSTILE_ID) is None
        assert await status_of(dbos, f"{HOSTILE_ID}-6") is None  # its child went with it


async def test_an_action_without_the_csrf_field_or_from_another_origin_is_refused(
    tmp_path: Path,
) -> None:
    async with dashboard(tmp_path) as (dbos, fns, client):
        waiting = await dbos.start_workflow(fns["waiter"])
        wid = waiting.workflow_id
        confirm = await client.get(f"/confirm?id={quote(wid)}&action=cancel")
        good = csrf_of(confirm.text)
        for form, headers in (
            ({"id": wid, "action": "cancel"}, {}),
            ({"id": wid, "action": "cancel", "csrf": "0" * 64}, {}),
            ({"id": wid, "action": "cancel", "csrf": good}, {"origin": "http://evil.example"}),
            ({"id": wid, "action": "cancel", "csrf": good}, {"origin": "null"}),
        ):
            reply = await client.post("/action", form, headers=headers)
            assert reply.status == 403 and "CSRF" in reply.text
        # The right field but not the cookie it was made from (another browser's page).
        stranger = Browserless(client.base)
        reply = await stranger.post("/action", {"id": wid, "action": "cancel", "csrf": good})
        assert reply.status == 403
        assert await status_of(dbos, wid) == "PENDING"
        reply = await client.post("/action", {"id": wid, "action": "cancel", "csrf": good})
        assert reply.status == 303 and await status_of(dbos, wid) == "CANCELLED"


async def test_read_only_shows_no_action_and_refuses_every_post(tmp_path: Path) -> None:
    async with dashboard(tmp_path, read_only=True) as (dbos, fns, client):
        waiting = await dbos.start_workflow(fns["waiter"])
        wid = waiting.workflow_id
        page = (await client.get(page_of(wid))).text
        assert "read-only" in page and "/confirm" not in page
        assert (await client.get(f"/confirm?id={quote(wid)}&action=cancel")).status == 403
        # Even with a valid CSRF field (minted by the server's own guard).
        await client.get("/workflows")
        app_guard_field = await _csrf_for(dbos, client)
        reply = await client.post(
            "/action", {"id": wid, "action": "cancel", "csrf": app_guard_field}
        )
        assert reply.status == 403 and await status_of(dbos, wid) == "PENDING"
        await dbos.cancel_workflow(wid)


async def _csrf_for(dbos: DBOS, client: Browserless) -> str:
    # A read-only dashboard renders no form; a writable one on the same executor mints
    # fields with its own secret, so a field from it must not open the read-only one.
    writable = Browserless(await dbos.serve_dashboard(port=0))
    confirm = await writable.get(f"/confirm?id={quote(HOSTILE_ID)}&action=cancel")
    client.cookies.update(writable.cookies)
    return csrf_of(confirm.text)


async def test_a_token_is_required_when_configured_and_for_any_non_loopback_host(
    tmp_path: Path,
) -> None:
    async with dashboard(tmp_path, token=TOKEN) as (dbos, _fns, client):
        assert (await client.get("/workflows")).status == 401
        bad = await client.get("/workflows", headers={"authorization": "Bearer wrong"})
        assert bad.status == 401
        good = await client.get("/workflows", headers={"authorization": f"Bearer {TOKEN}"})
        assert good.status == 200 and "orders.&lt;script&gt;" in good.text
        # A browser's first visit moves the token from the URL into a cookie.
        first = await client.get(f"/workflows?token={TOKEN}")
        assert first.status == 303 and "token" not in first.headers["location"]
        assert (await client.get("/workflows")).status == 200
        with pytest.raises(DBOSConfigError, match="token is required"):
            await dbos.serve_dashboard(host="0.0.0.0", port=0)
        with pytest.raises(DBOSConfigError, match="16 characters"):
            await dbos.serve_dashboard(port=0, token="short")


async def test_without_a_token_only_a_loopback_host_name_is_answered(tmp_path: Path) -> None:
    async with dashboard(tmp_path) as (_dbos, _fns, client):
        rebound = await client.get("/workflows", headers={"host": "evil.example:8383"})
        assert rebound.status == 421
        assert (await client.get("/workflows", headers={"host": "localhost:1"})).status == 200


async def test_list_filters_and_paging(tmp_path: Path) -> None:
    async with dashboard(tmp_path) as (dbos, fns, client):
        for n in range(55):
            with SetWorkflowID(f"page-{n:02d}"):
                await (await dbos.start_workflow(fns["child"], n)).get_result()
        first = (await client.get("/workflows?name=child")).text
        assert first.count('class="wfid"') == 50 and "older" in first
        assert "page-54" in first and "page-04" not in first  # newest first
        older = (await client.get("/workflows?name=child&offset=50")).text
        assert "page-04" in older and "page-54" not in older and "newer" in older
        prefix = (await client.get("/workflows?prefix=page-1")).text
        assert prefix.count('class="wfid"') == 10
        errors = (await client.get("/workflows?status=ERROR")).text
        assert 'class="wfid"' not in errors
        success = (await client.get("/workflows?status=success&prefix=wf-")).text
        assert success.count('class="wfid"') == 2  # the order and its child
        future = (await client.get("/workflows?after=2999-01-01T00:00")).text
        assert 'class="wfid"' not in future
        rows = await client.get("/workflows?prefix=page-0&fragment=rows")
        assert rows.text.startswith("<tr>") and rows.text.count('class="wfid"') == 10
        assert (await client.get("/workflows?status=BOGUS")).status == 400
        assert (await client.get("/workflows?after=yesterday")).status == 400


async def test_queues_schedules_and_executors_pages(tmp_path: Path) -> None:
    async with dashboard(tmp_path) as (dbos, fns, client):
        handles = [await fns["payments"].enqueue(fns["waiter"]) for _ in range(2)]
        await dbos.create_schedule(
            schedule_name=f"nightly-{SCRIPT}", workflow=fns["nightly"], schedule="0 3 * * *"
        )
        for handle in handles:  # both claimed by this executor
            await wait_until(
                lambda h=handle: _is_pending(dbos, h.workflow_id), what="claimed by the queue"
            )
        queues = (await client.get("/queues")).text
        row = queues[queues.index("payments</a>") :].split("</tr>")[0]
        # enqueued 0, none waiting, running 2, delayed 0, global limit 4, per-worker limit 2,
        # ..., and its Pause button
        assert row.count("<td>") == 10 and 'class="queue-pause"' in row
        assert "<td>0</td><td></td><td>2</td><td>0</td><td>4</td><td>2</td>" in row
        schedules = (await client.get("/schedules")).text
        assert "nightly-&lt;script&gt;" in schedules and "0 3 * * *" in schedules
        assert "ACTIVE" in schedules and "<script>alert" not in schedules
        executors = (await client.get("/executors")).text
        assert "local" in executors and "v1" in executors and "latest" in executors
        assert (await client.get("/metrics")).status == 404  # no metrics hook given
        metered = Browserless(await dbos.serve_dashboard(port=0, metrics=lambda: "m_total 3\n"))
        assert (await metered.get("/metrics")).text == "m_total 3\n"
        assert (await client.get("/nowhere")).status == 404
        assert (await client.request("PUT", "/workflows")).status == 405
        for handle in handles:
            await dbos.cancel_workflow(handle.workflow_id)


async def test_a_page_whose_database_is_gone_is_a_503_and_the_server_goes_on(
    tmp_path: Path,
) -> None:
    url = sqlite_url(tmp_path / "gone.sqlite")
    dbos, _fns = demo_app(url)
    async with dbos.launched():
        pass  # creates the schema
    async with Client(url, use_listen_notify=False) as client:
        runtime = client._require("test")
    app = make_app(runtime, DashboardSettings())  # its database is closed now

    def get(path: str, query: dict[str, str] | None = None) -> Request:
        return Request(
            method="GET",
            path=path,
            query=query or {},
            headers={"host": "127.0.0.1:8383"},
            cookies={},
            form={},
        )

    for path, query in (("/workflows", None), ("/workflow", {"id": "x"}), ("/queues", None)):
        response = await app.respond(get(path, query))
        assert response.status == 503, path
        assert "System database unavailable" in str(response.body)
    assert (await app.respond(get("/healthz"))).status == 200


async def test_the_dashboard_stops_with_the_executor(tmp_path: Path) -> None:
    async with dashboard(tmp_path) as (_dbos, _fns, client):
        assert (await client.get("/healthz")).text == "ok"
    with pytest.raises(OSError):
        await client.get("/healthz")


async def test_serve_dashboard_needs_a_launched_executor(tmp_path: Path) -> None:
    dbos, _fns = demo_app(sqlite_url(tmp_path / "idle.sqlite"))
    with pytest.raises(DBOSNotLaunchedError, match="serve_dashboard"):
        await dbos.serve_dashboard(port=0)


async def test_the_token_redirect_needs_the_token_and_never_leaves_the_dashboard(
    tmp_path: Path,
) -> None:
    async with dashboard(tmp_path, token=TOKEN) as (_dbos, _fns, client):
        # Without the right token: no redirect at all (it went off-site, to //evil.example/).
        assert (await client.get("//evil.example/?token=anything")).status == 401
        off_site = await client.get(f"//evil.example/?token={TOKEN}")
        assert off_site.status == 303
        assert off_site.headers["location"].startswith("/evil.example/")
        # A path no header can hold unquoted (it answered 500).
        accented = await client.get(f"/workflows/%C3%A9%E2%82%AC?token={TOKEN}")
        assert accented.status == 303
        assert accented.headers["location"].startswith("/workflows/%C3%A9")


async def test_a_fork_step_that_only_looks_like_a_number_is_a_bad_request(
    tmp_path: Path,
) -> None:
    async with dashboard(tmp_path) as (_dbos, _fns, client):
        confirm = await client.get(f"/confirm?id={quote(HOSTILE_ID)}&action=fork")
        form = {"id": HOSTILE_ID, "action": "fork", "csrf": csrf_of(confirm.text), "step": "²"}
        reply = await client.post("/action", form)
        assert reply.status == 400 and "whole number" in reply.text


async def test_a_row_with_an_impossible_time_is_shown_as_invalid_not_a_500(
    tmp_path: Path,
) -> None:
    async with dashboard(tmp_path) as (dbos, _fns, client):
        await execute(
            dbos.config.database_url or "",
            "INSERT INTO {t}workflow_status (workflow_uuid, status, name, created_at, "
            "updated_at) VALUES ('from-the-future', 'SUCCESS', 'order', %s, %s)",
            2**62,
            2**62,
        )
        listing = await client.get("/workflows")
        assert listing.status == 200 and "invalid time (4611686018427387904 ms)" in listing.text
        detail = await client.get(page_of("from-the-future"))
        assert detail.status == 200 and "invalid time" in detail.text
        assert (await client.get("/executors")).status == 200


async def test_a_failed_workflow_offers_retry_not_resume_and_retry_forks_it(
    tmp_path: Path,
) -> None:
    async with dashboard(tmp_path) as (dbos, fns, client):
        with SetWorkflowID("exploded"):
            failed = await dbos.start_workflow(fns["declined"], "order-9")
        with pytest.raises(ValueError, match="card declined"):
            await failed.get_result()
        page = (await client.get(page_of("exploded"))).text
        assert "action-retry" in page and "action-resume" not in page
        confirm = await client.get("/confirm?id=exploded&action=retry")
        assert confirm.status == 200 and "Retry this failed workflow" in confirm.text
        form = {"id": "exploded", "action": "retry", "csrf": csrf_of(confirm.text)}
        reply = await client.post("/action", form)
        assert reply.status == 303 and "done=retried" in reply.headers["location"]
        retried_id = reply.headers["location"].split("id=")[1].split("&")[0]
        status = await dbos.get_workflow_status(retried_id)
        assert status is not None and status.forked_from == "exploded"


async def test_a_workflow_with_thousands_of_events_shows_a_bounded_page(tmp_path: Path) -> None:
    # 100,000 events made a 27.6 MB page: steps and events are cut at their limits, said so.
    from dbos_trio.dashboard._source import EVENT_LIMIT, STEP_LIMIT

    async with dashboard(tmp_path) as (dbos, _fns, client):
        # The rows as a chatty workflow leaves them, written directly (quicker than running
        # hundreds of checkpoints).
        url = dbos.config.database_url or ""
        await execute(
            url,
            "INSERT INTO {t}workflow_status (workflow_uuid, status, name, created_at, "
            "updated_at) VALUES ('chatty', 'SUCCESS', 'chatty', 1, 1)",
        )
        for n in range(STEP_LIMIT + 5):
            await execute(
                url,
                "INSERT INTO {t}operation_outputs (workflow_uuid, function_id, function_name) "
                "VALUES ('chatty', %s, 'DBOS.setEvent')",
                n + 1,
            )
        for n in range(EVENT_LIMIT + 5):
            await execute(
                url,
                "INSERT INTO {t}workflow_events (workflow_uuid, key, value) "
                "VALUES ('chatty', %s, 'null')",
                f"key-{n:04d}",
            )
        page = await client.get(page_of("chatty"))
    assert page.status == 200
    assert f"showing the first {STEP_LIMIT} steps" in page.text
    assert f"showing the first {EVENT_LIMIT} events" in page.text
    assert "key-0000" in page.text and f"key-{EVENT_LIMIT + 4:04d}" not in page.text
