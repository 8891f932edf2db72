"""The overview (work over time, queues, counts, health), the schedules page's next fire
times and actions, and the list's duration and error columns, over real HTTP on both
backends, from workflows actually run.

Where a number must be exact, the rows' times are set to known instants after the
workflows ran (a minute five minutes ago, latencies of 100/200/300 ms), so the chart's
numbers are checked against known data, not against the wall clock.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote

import pytest

from dbos_trio import DBOS, Client, Config, EnqueueOptions, SetWorkflowID
from dbos_trio._ops import activity
from dbos_trio.dashboard._source import RuntimeReach

from support.backends import execute
from support.dashboard_support import Browserless, csrf_of
from support.waiting import HANG_GUARD, wait_until

MINUTE = 60_000


def app(url: str, name: str = "overview-app") -> tuple[DBOS, dict[str, Any]]:
    dbos = DBOS(Config(app_name=name, database_url=url, app_version="v1"))

    @dbos.workflow(name="ok")
    async def ok(n: int) -> int:
        return n

    @dbos.workflow(name="bad")
    async def bad(n: int) -> None:
        raise ValueError(f"card declined {n}")

    @dbos.workflow(name="bad_portable", serialization="portable")
    async def bad_portable(n: int) -> None:
        raise KeyError(f"no such order {n}")

    @dbos.workflow(name="napper")
    async def napper() -> None:
        await dbos.sleep(3600)

    @dbos.workflow(name="ticking")
    async def ticking(scheduled_time: Any, context: Any) -> None:
        raise RuntimeError("the nightly export failed")

    served = dbos.register_queue("served")
    return dbos, {
        "ok": ok,
        "bad": bad,
        "bad_portable": bad_portable,
        "napper": napper,
        "ticking": ticking,
        "served": served,
    }


@asynccontextmanager
async def served(url: str) -> AsyncIterator[tuple[DBOS, dict[str, Any], Browserless]]:
    dbos, fns = app(url)
    async with dbos.launched():
        yield dbos, fns, Browserless(await dbos.serve_dashboard(port=0))


async def run_known_minute(dbos: DBOS, fns: dict[str, Any], url: str) -> int:
    """3 successes and 2 failures, their rows moved to one minute five minutes ago with
    latencies 100/200/300 ms (ok) and 400/500 ms (bad); that minute's start (epoch ms)."""
    for n in range(3):
        with SetWorkflowID(f"ok-{n}"):
            assert await (await dbos.start_workflow(fns["ok"], n)).get_result() == n
    for n in range(2):
        with SetWorkflowID(f"bad-{n}"):
            handle = await dbos.start_workflow(fns["bad"], n)
        with pytest.raises(ValueError):
            await handle.get_result()
    now = dbos._require_executor("test").clock.now_ms()
    minute = now - now % MINUTE - 5 * MINUTE
    for n, (workflow_id, latency) in enumerate(
        [("ok-0", 100), ("ok-1", 200), ("ok-2", 300), ("bad-0", 400), ("bad-1", 500)]
    ):
        created = minute + 1000 + n
        await execute(
            url,
            "UPDATE {t}workflow_status SET created_at = %s, completed_at = %s "
            "WHERE workflow_uuid = %s",
            created,
            created + latency,
            workflow_id,
        )
    return minute


async def test_the_aggregates_are_the_known_rows(dbos_url: str) -> None:
    async with served(dbos_url) as (dbos, fns, client):
        minute = await run_known_minute(dbos, fns, dbos_url)
        reach = RuntimeReach(dbos._require_executor("test"))
        view = await activity.overview(reach, minutes=15)
        assert len(view.buckets) == 15
        [bucket] = [b for b in view.buckets if b.start_ms == minute]
        assert (bucket.succeeded, bucket.failed, bucket.cancelled) == (3, 2, 0)
        assert sum(b.succeeded + b.failed for b in view.buckets) == 5
        latency = {lat.name: lat for lat in view.latencies}
        assert (latency["ok"].count, latency["ok"].p50, latency["ok"].p95) == (3, 200, 300)
        assert (latency["bad"].p50, latency["bad"].slowest) == (400, 500)
        assert view.statuses["SUCCESS"] == 3 and view.statuses["ERROR"] == 2

        # The page draws the same numbers: the bar's tooltip, the table, the counts.
        page = (await client.get("/overview?minutes=15")).text
        assert 'id="throughput-chart"' in page and "<svg" in page
        assert "3 succeeded, 2 failed, 0 cancelled" in page
        assert re.search(r'id="count-error">.*?<span class="number">2</span>', page)
        assert "<td>200 ms</td><td>300 ms</td>" in page  # ok: p50, p95
        # Outside the window, the minute is not counted.
        older = await activity.overview(reach, minutes=3)
        assert sum(b.succeeded + b.failed for b in older.buckets) == 0


async def test_the_list_shows_duration_and_the_error(dbos_url: str) -> None:
    async with served(dbos_url) as (dbos, fns, client):
        await run_known_minute(dbos, fns, dbos_url)
        listing = (await client.get("/workflows")).text
        assert "ValueError: card declined 1" in listing  # read without unpickling
        assert "<td>300 ms</td>" in listing and "<th>duration</th>" in listing
        assert re.search(r'UTC</time> <span class="age">[4-6] min ago</span>', listing)
        fragment = (await client.get("/workflows?fragment=rows")).text
        assert "ValueError: card declined 0" in fragment
        # An error stored as portable JSON (any SDK can write one) reads the same way.
        portable = await dbos.start_workflow(fns["bad_portable"], 7)
        with pytest.raises(Exception, match="no such order 7"):
            await portable.get_result()
        listing = (await client.get("/workflows")).text
        row = listing[listing.index(portable.workflow_id) :].split("</tr>")[0]
        assert "no such order 7" in row and "not readable" not in row
        # The executors page says how long ago each was last active.
        executors = (await client.get("/executors")).text
        assert re.search(
            r'UTC</time> <span class="age">(just now|[0-9.]+ (ms|s|min) ago)', executors
        )


async def test_a_sleep_step_shows_its_wake_up_time_as_a_date(dbos_url: str) -> None:
    async with served(dbos_url) as (dbos, fns, client):
        handle = await dbos.start_workflow(fns["napper"])

        async def slept() -> bool:
            return bool(await dbos.list_workflow_steps(handle.workflow_id))

        await wait_until(slept, timeout=HANG_GUARD, what="the sleep's checkpoint")
        page = (await client.get("/workflow?id=" + quote(handle.workflow_id))).text
        assert re.search(
            r"wakes up at 20\d\d-\d\d-\d\d \d\d:\d\d:\d\d UTC \(in (1 h|[45]\d min)\)", page
        )
        assert not re.search(r"\b1[7-9]\d{8}\.\d+", page)  # no raw epoch seconds
        # Its executor holds PENDING work it stamped just now: live.
        assert 'status-success">live</span>' in (await client.get("/executors")).text
        await dbos.cancel_workflow(handle.workflow_id)


async def test_a_queue_with_work_and_no_live_worker_is_a_warning(dbos_url: str) -> None:
    async with served(dbos_url) as (_dbos, fns, client):
        # A queue this executor serves: work done now, so it is live.
        handle = await fns["served"].enqueue(fns["ok"], 1)
        assert await handle.get_result() == 1
        async with Client(dbos_url, use_listen_notify=False) as other:
            await other.enqueue(EnqueueOptions(workflow_name="ok", queue_name="nobody"), 2)
            await other.enqueue(
                EnqueueOptions(workflow_name="ok", queue_name="served", workflow_id="x-1"), 3
            )
        health = (await client.get("/overview")).text
        assert "Nothing needs attention" in health  # waiting less than the window: not yet
        # Five minutes later (the rows say so), with nobody dequeuing from "nobody".
        await execute(
            dbos_url,
            "UPDATE {t}workflow_status SET created_at = created_at - 300000 "
            "WHERE queue_name = %s AND status = %s",
            "nobody",
            "ENQUEUED",
        )
        page = (await client.get("/overview")).text
        assert 'data-kind="unserved-queue"' in page and "Queue with no live worker" in page
        assert re.search(r"1 ENQUEUED, the oldest waiting [56] min", page)
        assert page.count('data-kind="unserved-queue"') == 1  # "served" is served
        assert "oldest waiting" in page and 'id="queue-depth-chart"' in page
        queues = (await client.get("/queues")).text
        assert re.search(r"nobody</a></td><td>1</td><td>[56] min( \d+ s)?</td>", queues)


async def test_a_paused_queue_with_work_is_said_to_be_paused_not_unserved(dbos_url: str) -> None:
    async with served(dbos_url) as (_dbos, _fns, client):
        # A queue of another application (no executor here claims from it), paused.
        async with Client(dbos_url, app_name="billing", use_listen_notify=False) as other:
            await other.register_queue("invoices")
            assert await other.pause_queue("invoices")
            await other.enqueue(EnqueueOptions(workflow_name="bill", queue_name="invoices"), 1)
        await execute(
            dbos_url,
            "UPDATE {t}workflow_status SET created_at = created_at - 300000 "
            "WHERE queue_name = %s AND status = %s",
            "invoices",
            "ENQUEUED",
        )
        page = (await client.get("/overview")).text
        assert 'data-kind="paused-queue"' in page and "Queue paused with work waiting" in page
        assert 'data-kind="unserved-queue"' not in page
        assert "dbos-trio queue unpause invoices" in page
        queues = (await client.get("/queues")).text
        assert 'invoices</a> <span class="status status-paused">paused</span>' in queues


async def test_work_pinned_to_a_version_nobody_runs_is_a_warning(dbos_url: str) -> None:
    async with served(dbos_url) as (_dbos, _fns, client):
        async with Client(dbos_url, app_name="overview-app", use_listen_notify=False) as other:
            await other.enqueue(
                EnqueueOptions(workflow_name="ok", queue_name="served", app_version="v0-gone"), 1
            )
        page = (await client.get("/overview")).text
        assert 'data-kind="unrun-version"' in page and "v0-gone" in page
        assert "no executor of v0-gone seen running (latest is v1)" in page


async def test_a_schedule_whose_last_run_failed_is_a_warning(dbos_url: str) -> None:
    async with served(dbos_url) as (dbos, fns, client):
        await dbos.create_schedule(
            schedule_name="export", workflow=fns["ticking"], schedule="* * * * * *"
        )

        async def failed_last() -> bool:
            schedule = await dbos.get_schedule("export")
            if schedule is None or schedule.last_fired_at is None:
                return False
            status = await dbos.get_workflow_status(f"sched-export-{schedule.last_fired_at}")
            return status is not None and status.status == "ERROR"

        await wait_until(failed_last, timeout=HANG_GUARD, what="a failed run of the schedule")
        page = (await client.get("/overview")).text
        assert 'data-kind="schedule-failed"' in page and "Schedule&#x27;s last run failed" in page
        assert "RuntimeError: the nightly export failed" in page  # read from the pickle
        # Paused, it is not judged: the operator has acted on it.
        await dbos.pause_schedule("export")
        page = (await client.get("/overview")).text
        assert 'data-kind="schedule-failed"' not in page


async def test_a_schedule_that_stopped_firing_is_a_warning(dbos_url: str) -> None:
    async with served(dbos_url) as (_dbos, _fns, client):
        async with Client(dbos_url, use_listen_notify=False) as other:
            await other.create_schedule(
                schedule_name="hourly-elsewhere",
                workflow_name="report",
                schedule="0 * * * *",
                application_name="another-app",
            )
        # Its application has no executor: it fired once, three hours ago, and never since.
        await execute(
            dbos_url,
            "UPDATE {t}workflow_schedules SET last_fired_at = %s WHERE schedule_name = %s",
            "2020-01-01T00:00:00+00:00",
            "hourly-elsewhere",
        )
        page = (await client.get("/overview")).text
        assert 'data-kind="schedule-stopped"' in page and "hourly-elsewhere" in page
        assert "(another-app)" in page


async def test_the_schedules_page_shows_next_fire_and_pauses_resumes_triggers(
    dbos_url: str,
) -> None:
    async with served(dbos_url) as (dbos, fns, client):
        await dbos.create_schedule(
            schedule_name="nightly", workflow=fns["ticking"], schedule="0 3 * * *"
        )
        page = await client.get("/schedules")
        assert re.search(
            r"20\d\d-\d\d-\d\d 03:00:00\.000 UTC</time> <span class=\"age\">in ", page.text
        )
        csrf = csrf_of(page.text)
        refused = await client.post("/schedule", {"name": "nightly", "action": "pause"})
        assert refused.status == 403  # no CSRF field
        reply = await client.post("/schedule", {"name": "nightly", "action": "pause", "csrf": csrf})
        assert reply.status == 303 and "done=paused" in reply.headers["location"]
        schedule = await dbos.get_schedule("nightly")
        assert schedule is not None and schedule.status == "PAUSED"
        page = await client.get(reply.headers["location"])
        assert "Paused: it fires no more" in page.text and "schedule-resume" in page.text
        await client.post("/schedule", {"name": "nightly", "action": "resume", "csrf": csrf})
        schedule = await dbos.get_schedule("nightly")
        assert schedule is not None and schedule.status == "ACTIVE"
        reply = await client.post(
            "/schedule", {"name": "nightly", "action": "trigger", "csrf": csrf}
        )
        assert reply.status == 303 and "sched-nightly-trigger-" in reply.headers["location"]
        missing = await client.post("/schedule", {"name": "nope", "action": "pause", "csrf": csrf})
        assert missing.status == 404
        bad = await client.post("/schedule", {"name": "nightly", "action": "x", "csrf": csrf})
        assert bad.status == 400
        read_only = Browserless(await dbos.serve_dashboard(port=0, read_only=True))
        assert "schedule-pause" not in (await read_only.get("/schedules")).text
        reply = await read_only.post("/schedule", {"name": "nightly", "action": "pause"})
        assert reply.status == 403
        await dbos.pause_schedule("nightly")


async def test_a_bad_window_is_a_400_and_the_root_opens_the_overview(dbos_url: str) -> None:
    async with served(dbos_url) as (_dbos, _fns, client):
        assert (await client.get("/")).headers["location"] == "/overview"
        for bad in ("0", "x", "99999999"):
            reply = await client.get(f"/overview?minutes={bad}")
            assert reply.status == 400 and "minutes" in reply.text
        assert (await client.get("/overview?minutes=1440")).status == 200


async def test_an_executor_silent_with_pending_work_is_a_warning(dbos_url: str) -> None:
    async with served(dbos_url) as (_dbos, _fns, client):
        # Another application's executor starts a workflow and goes away while it waits
        # (its row stays PENDING under its id), and five minutes pass without a stamp.
        other = DBOS(
            Config(
                app_name="elsewhere",
                database_url=dbos_url,
                app_version="e1",
                executor_id="doomed-executor",
            )
        )

        @other.workflow(name="waits")
        async def waits() -> object:
            return await other.recv("never", timeout_seconds=3600)

        async with other.launched():
            handle = await other.start_workflow(waits)

            async def pending() -> bool:
                status = await other.get_workflow_status(handle.workflow_id)
                return status is not None and status.status == "PENDING"

            await wait_until(pending, timeout=HANG_GUARD, what="the workflow running")
        await execute(
            dbos_url,
            "UPDATE {t}workflow_status SET updated_at = updated_at - 300000 "
            "WHERE executor_id = %s",
            "doomed-executor",
        )
        page = (await client.get("/overview")).text
        assert 'data-kind="silent-executor"' in page and "doomed-executor" in page
        assert "dbos-trio workflow recover --executor doomed-executor -a elsewhere" in page
        executors = (await client.get("/executors")).text
        assert "status-error\">silent</span>" in executors
        assert re.search(r"not stamped for [56] min", executors)
        assert "status-success\">live</span>" not in executors  # the served one runs nothing
