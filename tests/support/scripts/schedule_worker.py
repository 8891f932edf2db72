"""An executor process for the schedule and debounce tests across processes.

Usage: ``schedule_worker.py SPEC_JSON`` where the spec has ``url`` and ``executor_id``, and
optionally ``bounces`` ([key, period, label, count, spacing_seconds, start_file]). It
launches app ``sched-mp`` (scheduler polling every second) with two workflows whose
executions log themselves to the side table (blocking, past the library): ``tick``
(scheduled) and ``collect`` (debounced). Prints ``READY`` once launched; with ``bounces``,
waits for ``start_file`` to hold an epoch time (the test writes it once every worker is
ready, however long their start-up took), waits for that time (wall clock), bounces, and
prints ``BOUNCED <json ids>``.
Runs until killed.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import trio

from dbos_trio import DBOS, Config

from support.queue_fixtures import SideTable
from support.waiting import wait_until


async def main(spec_json: str) -> None:
    spec = json.loads(spec_json)
    side = SideTable(spec["url"])
    dbos = DBOS(
        Config(
            app_name="sched-mp",
            database_url=spec["url"],
            executor_id=spec["executor_id"],
            app_version="v1",
            scheduler_polling_interval_sec=1.0,
        )
    )

    @dbos.workflow(name="tick")
    async def tick(scheduled_time: datetime, context: Any) -> None:
        await trio.to_thread.run_sync(
            side.log,
            dbos.workflow_id,
            "tick",
            f"{spec['executor_id']} {scheduled_time.isoformat()}",
        )

    @dbos.workflow(name="collect")
    async def collect(value: str) -> str:
        await trio.to_thread.run_sync(side.log, dbos.workflow_id, "collect", value)
        return value

    async with dbos.launched():
        print("READY", flush=True)
        bounces = spec.get("bounces")
        if bounces:
            key, period, label, count, spacing, start_file = bounces
            start_at = await _start_time(Path(start_file))
            await trio.sleep(max(0.0, start_at - time.time()))
            debouncer = dbos.debouncer(collect)
            ids = []
            for i in range(count):
                ids.append((await debouncer.debounce(key, period, f"{label}{i}")).workflow_id)
                await trio.sleep(spacing)
            print("BOUNCED " + json.dumps(ids), flush=True)
        await trio.sleep_forever()


async def _start_time(start_file: Path) -> float:
    """The epoch time written to ``start_file``, once it is there (written whole, by a
    rename, so a read never sees half of it)."""
    path = trio.Path(start_file)
    await wait_until(path.exists, timeout=600, what=f"{start_file} to be written")
    return float(await path.read_text())


if __name__ == "__main__":
    trio.run(main, sys.argv[1])
