"""A fleet cut off from its database together comes back without adopting, repeating or
stalling.

Three executor processes (worker concurrency 1, heartbeat 1 s, automatic adoption after
5 s) reach PostgreSQL through a proxy that drops every connection and refuses new ones for
8 s — longer than the adoption window — while each runs a job. When the proxy lets them back,
each sees the others' rows unstamped for longer than the window; none of them judges that
silence, since it could not hear anything either, so no row changes hands and no step body
runs twice, and the jobs in flight, the rest of the backlog and a batch enqueued after the
outage all finish (before the fix, the executors adopted each other's live work, steps ran
two or three times, and the waiters for the new owners held every queue slot).
"""

from __future__ import annotations

from collections import Counter
from urllib.parse import urlsplit, urlunsplit

import pytest
import trio

from dbos_trio import Client, EnqueueOptions

from support.backends import query
from support.outage_proxy import outage_proxy
from support.queue_fixtures import SideTable, start_script
from support.waiting import wait_until

pytestmark = pytest.mark.postgres_only_module("a TCP outage between executors and PostgreSQL")

JOBS_BEFORE = 9
JOBS_AFTER = 6
OUTAGE_SECONDS = 8.0


def through(url: str, port: int) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)
    host = f"127.0.0.1:{port}"
    return urlunsplit(parts._replace(netloc=f"{netloc[0]}@{host}" if len(netloc) == 2 else host))


async def job_statuses(url: str) -> Counter[str]:
    rows = await query(
        url, "SELECT status FROM {t}workflow_status WHERE name = %s", "fleet.job"
    )
    return Counter(row[0] for row in rows)


async def _at_least(url: str, status: str, count: int) -> bool:
    return (await job_statuses(url))[status] >= count


async def enqueue(client: Client, count: int) -> None:
    options = EnqueueOptions(workflow_name="fleet.job", queue_name="fleet", app_version="fleet-v1")
    for _ in range(count):
        await client.enqueue(options)


@pytest.mark.slow
async def test_a_fleet_cut_off_together_finishes_its_work_with_every_step_run_once(
    dbos_url: str,
) -> None:
    side = SideTable(dbos_url)
    side.create()
    port = urlsplit(dbos_url).port or 5432
    async with outage_proxy(port) as proxy:
        proxied = through(dbos_url, proxy.port)
        workers = [
            start_script("fleet_worker.py", proxied, dbos_url, f"fleet-{n}") for n in (1, 2, 3)
        ]
        try:
            for worker in workers:
                await worker.wait_for_line("READY", timeout=60)
            async with Client(dbos_url) as client:
                await enqueue(client, JOBS_BEFORE)
                # Every executor is inside a job (worker concurrency 1 each): cut them off.
                await wait_until(
                    lambda: _at_least(dbos_url, "PENDING", 3),
                    timeout=60,
                    what="every executor inside a job",
                )
                proxy.cut()
                await trio.sleep(OUTAGE_SECONDS)
                proxy.restore()
                await enqueue(client, JOBS_AFTER)
                # A hang guard: before the fix, the fleet stalled here.
                await wait_until(
                    lambda: _at_least(dbos_url, "SUCCESS", JOBS_BEFORE + JOBS_AFTER),
                    timeout=120,
                    interval=0.2,
                    what="every job SUCCESS",
                )
            assert proxy.refused > 0, "the executors never noticed the outage"
            runs = Counter(
                (row[0], row[1])
                for row in await query(dbos_url, "SELECT workflow_id, label FROM side_effects")
            )
            assert len(runs) == 3 * (JOBS_BEFORE + JOBS_AFTER)
            repeated = {key: count for key, count in runs.items() if count > 1}
            assert not repeated, f"step bodies ran more than once: {repeated}"
            outputs = [worker.output() for worker in workers]
            assert not any("adopted its" in output for output in outputs), outputs
        finally:
            for worker in workers:
                await worker.stop()
