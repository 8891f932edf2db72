"""Schedules and debouncing between dbos_trio and the official ``dbos`` 3.4, on one database.

The official side runs in its own virtualenv, as a subprocess (``official/driver.py``):

1. a schedule the official ``DBOSClient`` creates is fired and run by a dbos_trio executor
   that registers the workflow's name, with the official ids and inputs;
2. a schedule dbos_trio creates is listed, field for field, by the official client;
3. debounces from both SDKs on one key coalesce onto one workflow, which runs once with
   the last bounce's arguments;
4. a schedule dbos_trio's Client creates for an official application is fired and run by
   an official executor.
"""

from __future__ import annotations

import base64
import pickle
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import trio
from interop_support import official_executor, rows, run_official

from dbos_trio import DBOS, Client, Config, EnqueueOptions

from support.waiting import wait_until

pytestmark = pytest.mark.interop

APP = "trio-sched-interop"
INTERNAL_QUEUE = "_dbos_internal_queue"
# A debounce period no start-up of an official process comes near, however loaded the
# machine: a later call always lands inside it.
LONG_PERIOD = 600.0


class App:
    """The dbos_trio side: a scheduled workflow and a debounced one, recording their calls."""

    def __init__(self, dbos: DBOS, tick: Any, ticks: list[Any], collected: list[str]) -> None:
        self.dbos, self.tick, self.ticks, self.collected = dbos, tick, ticks, collected


def app(url: str) -> App:
    dbos = DBOS(
        Config(app_name=APP, database_url=url, app_version="v1", scheduler_polling_interval_sec=1)
    )
    ticks: list[tuple[str, datetime, Any]] = []
    collected: list[str] = []

    @dbos.workflow(name="interop_tick")
    async def interop_tick(scheduled_time: datetime, context: Any) -> None:
        assert dbos.workflow_id is not None
        ticks.append((dbos.workflow_id, scheduled_time, context))

    @dbos.workflow(name="interop_collect")
    async def interop_collect(value: str) -> str:
        collected.append(value)
        return value

    return App(dbos, interop_tick, ticks, collected)


async def test_a_schedule_the_official_client_created_is_fired_by_dbos_trio(
    url: str, official_python: Path
) -> None:
    created = await run_official(
        official_python,
        "schedule-create",
        url,
        APP,
        "official-made",
        "interop_tick",
        "* * * * * *",
        '{"from": "official"}',
    )
    assert created == {"created": "official-made"}
    trio_app = app(url)
    dbos, ticks = trio_app.dbos, trio_app.ticks
    async with dbos.launched():
        await wait_until(lambda: len(ticks) >= 3, timeout=30)
        await dbos.pause_schedule("official-made")
        listed = await dbos.list_workflows(schedule_name="official-made", status="SUCCESS")
    for workflow_id, scheduled_time, context in ticks:
        assert workflow_id == f"sched-official-made-{scheduled_time.isoformat()}"
        assert scheduled_time.tzinfo is not None and scheduled_time.utcoffset().total_seconds() == 0  # type: ignore[union-attr]
        assert context == {"from": "official"}
    assert {w.workflow_id for w in listed} >= {t[0] for t in ticks}
    [(inputs,)] = await rows(
        url,
        "SELECT inputs FROM dbos.workflow_input WHERE workflow_uuid = %s",
        ticks[0][0],
    )
    # Our firing's row reads back as the official SDK writes it: a pickle of the envelope.
    envelope = pickle.loads(base64.b64decode(inputs))
    assert envelope == {"args": (ticks[0][1], {"from": "official"}), "kwargs": {}}


async def test_a_dbos_trio_schedule_is_listed_by_the_official_client(
    url: str, official_python: Path
) -> None:
    trio_app = app(url)
    dbos = trio_app.dbos
    async with dbos.launched():
        await dbos.create_schedule(
            schedule_name="trio-made",
            workflow=trio_app.tick,
            schedule="0 30 9 * * 1-5",
            context={"region": "eu", "limit": 5},
            cron_timezone="Europe/Paris",
            automatic_backfill=True,
        )
        await dbos.pause_schedule("trio-made")
        ours = await dbos.get_schedule("trio-made")
    listed = await run_official(official_python, "schedule-list", url, APP)
    [theirs] = [s for s in listed if s["schedule_name"] == "trio-made"]
    assert ours is not None
    assert theirs == {
        "schedule_id": ours.schedule_id,
        "schedule_name": "trio-made",
        "workflow_name": "interop_tick",
        "workflow_class_name": None,
        "schedule": "0 30 9 * * 1-5",
        "status": "PAUSED",
        "context": {"region": "eu", "limit": 5},
        "last_fired_at": None,
        "automatic_backfill": True,
        "cron_timezone": "Europe/Paris",
        "queue_name": None,
        "application_name": APP,
        "shard_key": None,
    }


async def test_debounces_from_both_sdks_coalesce_onto_one_workflow(
    url: str, official_python: Path
) -> None:
    trio_app = app(url)
    dbos, collected = trio_app.dbos, trio_app.collected
    async with dbos.launched(), Client(url, app_name=APP) as client:
        first = await run_official(
            official_python,
            "debounce",
            url,
            APP,
            "interop_collect",
            INTERNAL_QUEUE,
            "shared-key",
            # Each later call must land inside the previous one's period, and starting an
            # official process takes seconds, more on a loaded machine: the first two
            # periods are far longer than that. They cost nothing, as the last call's
            # period (2 s) replaces them and is when the workflow runs.
            str(LONG_PERIOD),
            '"from official"',
        )
        ours = client.debouncer(
            EnqueueOptions(workflow_name="interop_collect", queue_name=INTERNAL_QUEUE)
        )
        second = await ours.debounce("shared-key", LONG_PERIOD, "from dbos_trio")
        # Read while the second call's long period surely still holds the workflow back;
        # after the third call's short one it may already have run.
        [(dedup, debounced, status)] = await rows(
            url,
            "SELECT deduplication_id, is_debounced, status FROM dbos.workflow_status "
            "WHERE workflow_uuid = %s",
            second.workflow_id,
        )
        third = await run_official(
            official_python,
            "debounce",
            url,
            APP,
            "interop_collect",
            INTERNAL_QUEUE,
            "shared-key",
            "2",
            '"official again"',
        )
        with trio.fail_after(LONG_PERIOD / 2):  # a hang guard, far beyond the 2 s period
            result = await second.get_result()
    assert first["workflow_id"] == second.workflow_id == third["workflow_id"]
    assert (dedup, debounced, status) == ("interop_collect-shared-key", True, "DELAYED")
    assert result == "official again" and collected == ["official again"]


async def test_a_schedule_dbos_trio_created_is_run_by_an_official_executor(
    url: str, official_python: Path
) -> None:
    official_app = "official-sched-interop"
    async with Client(url, app_name=official_app) as client:
        await client.create_schedule(
            schedule_name="for-official", workflow_name="official_tick", schedule="* * * * * *",
            context="ctx",
        )  # fmt: skip
        async with official_executor(official_python, url, official_app):

            async def three_done() -> bool:
                found = await client.list_workflows(
                    schedule_name="for-official", status="SUCCESS", load_input=False
                )
                return len(found) >= 3

            await wait_until(three_done, timeout=30)
            await client.pause_schedule("for-official")
        done = await client.list_workflows(schedule_name="for-official", status="SUCCESS")
    for workflow in done:
        tick = workflow.workflow_id[len("sched-for-official-") :]
        assert datetime.fromisoformat(tick).utcoffset() is not None
        assert workflow.output == f"{tick} ctx"
        assert workflow.application_name == official_app
