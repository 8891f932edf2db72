"""A scheduled job: a workflow run on a cron schedule, exactly once per tick.

    python examples/scheduled_job.py --runs 3

``@dbos.scheduled`` over ``@dbos.workflow()`` declares the schedule; every launch applies
it. Each tick's workflow id is derived from the schedule's name and the tick's time, so
however many executors serve the application, a tick runs once; the workflow receives
the tick's scheduled time and the schedule's context. A six-field cron expression has a
seconds field (``*/2 * * * * *``: every two seconds); five fields are the usual minutes.
"""

from __future__ import annotations

import argparse
from datetime import datetime

import trio

from dbos_trio import DBOS, Config

dbos = DBOS(Config(app_name="scheduled-job"))
ran = trio.Event()
runs: list[str] = []


@dbos.step()
async def report(scheduled_time: datetime) -> str:
    return f"report for {scheduled_time:%H:%M:%S}"


@dbos.scheduled("*/2 * * * * *", name="every-two-seconds", context={"team": "ops"})
@dbos.workflow()
async def periodic_report(scheduled_time: datetime, context: dict[str, str]) -> str:
    line = await report(scheduled_time)
    print(f"{line} (team {context['team']})", flush=True)
    runs.append(line)
    ran.set()
    return line


async def main(wanted: int) -> None:
    global ran
    async with dbos.launched():
        while len(runs) < wanted:
            await ran.wait()
            ran = trio.Event()
    print(f"{len(runs)} scheduled runs", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="stop after this many runs")
    trio.run(main, parser.parse_args().runs)
