"""The chaos soak: ``python -m chaos.soak [--workflows W] [--executors E] ...``.

Runs its own throwaway PostgreSQL (never the shared server), enqueues W workflows of the
soak's application (:mod:`chaos.app`) on one queue, and runs E executor processes while
it SIGKILLs a random executor every few seconds (restarting it with the same executor
id) and restarts PostgreSQL every 10-30 s (alternating ``fast`` and ``immediate``,
holding it down for up to 5 s). Then it lets everything drain and checks:

* every workflow SUCCESS exactly once, with the right output;
* no step body ran after its own checkpoint had committed (each body asks first, on a
  connection of its own, and says what it found in ``public.step_runs``);
* no message lost, duplicated or misdelivered (every ping/pong pair got the other's
  message, and each message was consumed exactly once);
* no duplicate checkpoint rows;
* no executor crashed (no traceback in any executor's stderr);
* no workflow PENDING without progress for 30 s while its executor lived.

``--fleet`` is the fleet variant: executors stamp their rows every second and adopt each
other's work after 5 s of silence, every database outage lasts longer than that (all
executors cut off at once), and midway one executor dies for good and a new one (a new id)
takes its place, so its work must move by adoption. The same checks hold: in particular no
step body runs after its own checkpoint, i.e. no executor that was merely cut off has its
work taken and run again.

It prints a summary and exits 0 if every check held, 1 otherwise. ``--ci`` is the small
configuration CI runs (about two minutes); the defaults are the full one (W = 10,000).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import attrs
import psycopg
import trio

from dbos_trio import Client, EnqueueOptions
from dbos_trio._sysdb.open import open_system_database

from .app import (
    APP_NAME,
    APP_VERSION,
    QUEUE,
    SIDE_TABLE,
    expected_output,
    kind_of,
    workflow_id,
)
from .cluster import Cluster

STALL_SECONDS = 30.0


@attrs.define
class Settings:
    workflows: int = 10_000
    executors: int = 3
    concurrency: int = 10
    step_seconds: float = 0.1
    chaos_seconds: float = 420.0
    kill_every: tuple[float, float] = (3.0, 8.0)
    restart_every: tuple[float, float] = (10.0, 30.0)
    max_down: float = 5.0
    drain_timeout: float = 600.0
    seed: int = 0
    # The fleet variant (--fleet): heartbeat and adoption window of every executor.
    heartbeat: float | None = None
    adopt_after: float | None = None

    @property
    def fleet(self) -> bool:
        return self.adopt_after is not None

    def outage_seconds(self, rng: random.Random) -> float:
        """How long one database restart holds the server down: in the fleet variant,
        always longer than the adoption window (every executor silent past it at once)."""
        if self.adopt_after is not None:
            return rng.uniform(self.adopt_after + 1.0, self.adopt_after + 4.0)
        return rng.uniform(1.0, self.max_down)


@attrs.define
class Executor:
    executor_id: str
    log: Path
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0


@attrs.define
class Record:
    kills: int = 0
    restarts: int = 0
    outages: list[float] = attrs.field(factory=list)  # seconds down (stop to start returned)
    backs: list[float] = attrs.field(factory=list)  # wall time each start returned
    stalls: set[str] = attrs.field(factory=set)
    stall_notes: list[str] = attrs.field(factory=list)
    failures: list[str] = attrs.field(factory=list)
    dead: list[str] = attrs.field(factory=list)  # executor ids that never came back
    retired: list[Executor] = attrs.field(factory=list)


def start_executor(executor: Executor, url: str, settings: Settings) -> None:
    fleet = []
    if settings.heartbeat is not None:
        fleet += ["--heartbeat", str(settings.heartbeat)]
    if settings.adopt_after is not None:
        fleet += ["--adopt-after", str(settings.adopt_after)]
    with executor.log.open("ab") as log:
        executor.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "chaos.worker",
                url,
                executor.executor_id,
                "--concurrency",
                str(settings.concurrency),
                "--step-seconds",
                str(settings.step_seconds),
                *fleet,
            ],
            stdout=subprocess.DEVNULL,
            stderr=log,
            cwd=Path(__file__).resolve().parent.parent,
        )
    executor.started_at = time.time()


def kill_executor(executor: Executor) -> None:
    if executor.process is not None and executor.process.poll() is None:
        executor.process.send_signal(signal.SIGKILL)
        executor.process.wait()
    executor.process = None


async def enqueue_all(url: str, count: int) -> None:
    async with Client(url, app_name=APP_NAME) as client:
        for index in range(count):
            options = EnqueueOptions(
                workflow_name=kind_of(index),
                queue_name=QUEUE,
                workflow_id=workflow_id(index),
                app_version=APP_VERSION,
            )
            await client.enqueue(options, index)


def query(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True, connect_timeout=3) as conn:
        cursor = conn.execute(sql, params)
        return cursor.fetchall() if cursor.description is not None else []


def try_query(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]] | None:
    try:
        return query(url, sql, *params)
    except psycopg.Error:
        return None  # the server is down right now


async def chaos(
    settings: Settings,
    cluster: Cluster,
    executors: list[Executor],
    url: str,
    record: Record,
) -> None:
    rng = random.Random(settings.seed)
    now = time.monotonic()
    next_kill = now + rng.uniform(*settings.kill_every)
    # The first restart comes early, while the queue is full.
    next_restart = now + rng.uniform(3.0, settings.restart_every[0])
    end = now + settings.chaos_seconds
    # The fleet variant: midway, one executor dies for good and a new one replaces it.
    replace_at = now + settings.chaos_seconds / 3 if settings.fleet else math.inf
    mode = "fast"
    while time.monotonic() < end and not await trio.to_thread.run_sync(done, url, settings):
        now = time.monotonic()
        if now >= replace_at:
            replace_at = math.inf
            dead = executors.pop(rng.randrange(len(executors)))
            kill_executor(dead)
            record.kills += 1
            record.dead.append(dead.executor_id)
            newcomer = Executor(
                f"{dead.executor_id}-successor", dead.log.with_name("successor.log")
            )
            executors.append(newcomer)
            start_executor(newcomer, url, settings)
            record.retired.append(dead)
        if now >= next_kill:
            victim = rng.choice(executors)
            kill_executor(victim)
            record.kills += 1
            await trio.sleep(rng.uniform(0.2, 1.5))
            start_executor(victim, url, settings)
            next_kill = time.monotonic() + rng.uniform(*settings.kill_every)
        if now >= next_restart:
            down = settings.outage_seconds(rng)
            stopped = time.monotonic()
            await trio.to_thread.run_sync(cluster.stop, mode)
            await trio.sleep(down)
            await trio.to_thread.run_sync(cluster.start)
            record.outages.append(time.monotonic() - stopped)
            record.backs.append(time.time())
            record.restarts += 1
            mode = "immediate" if mode == "fast" else "fast"
            next_restart = time.monotonic() + rng.uniform(*settings.restart_every)
        await watch_stalls(url, executors, record)
        await trio.sleep(0.5)


async def watch_stalls(url: str, executors: list[Executor], record: Record) -> None:
    rows = await trio.to_thread.run_sync(
        try_query,
        url,
        "SELECT ws.workflow_uuid, ws.executor_id, "
        "GREATEST(ws.updated_at, COALESCE(max(oo.started_at_epoch_ms), 0)) "
        "FROM dbos.workflow_status AS ws "
        "LEFT JOIN dbos.operation_outputs AS oo ON oo.workflow_uuid = ws.workflow_uuid "
        "WHERE ws.status = 'PENDING' GROUP BY ws.workflow_uuid, ws.executor_id, ws.updated_at",
    )
    if rows is None:
        return
    alive_since = {
        e.executor_id: e.started_at
        for e in executors
        if e.process is not None and e.process.poll() is None
    }
    now = time.time()
    for workflow, executor_id, progress_ms in rows:
        since = alive_since.get(executor_id)
        if since is None or now - since < STALL_SECONDS + 5:
            continue
        if now - progress_ms / 1000 > STALL_SECONDS and workflow not in record.stalls:
            record.stalls.add(workflow)
            snapshot = await trio.to_thread.run_sync(stall_snapshot, url, workflow)
            record.stall_notes.append(f"{workflow} (executor {executor_id}): {snapshot}")


def stall_snapshot(url: str, workflow: str) -> str:
    """What a stalled workflow and its message partner look like, when the stall is seen:
    a stall is diagnosed from this, since the state has moved on by the end of the run."""
    index = int(workflow.rsplit("-", 1)[1])
    partner = {"ping": index - 1, "pong": index + 1}.get(kind_of(index))
    ids = [workflow] + ([] if partner is None else [workflow_id(partner)])
    rows = try_query(
        url,
        "SELECT ws.workflow_uuid, ws.status, ws.executor_id, ws.recovery_attempts, "
        "ws.updated_at, (SELECT string_agg(oo.function_id || ':' || oo.function_name, ',' "
        "ORDER BY oo.function_id) FROM dbos.operation_outputs AS oo "
        "WHERE oo.workflow_uuid = ws.workflow_uuid), "
        "(SELECT count(*) FROM dbos.notifications AS n "
        "WHERE n.destination_uuid = ws.workflow_uuid AND NOT n.consumed) "
        "FROM dbos.workflow_status AS ws WHERE ws.workflow_uuid = ANY(%s)",
        ids,
    )
    return "database unavailable" if rows is None else repr(rows)


def done(url: str, settings: Settings) -> bool:
    rows = try_query(
        url,
        "SELECT count(*) FROM dbos.workflow_status WHERE status IN ('SUCCESS', 'ERROR', "
        "'CANCELLED', 'MAX_RECOVERY_ATTEMPTS_EXCEEDED')",
    )
    return rows is not None and rows[0][0] >= settings.workflows


async def drain(settings: Settings, url: str, executors: list[Executor], record: Record) -> None:
    deadline = time.monotonic() + settings.drain_timeout
    while not await trio.to_thread.run_sync(done, url, settings):
        if time.monotonic() > deadline:
            record.failures.append(f"not drained within {settings.drain_timeout:.0f} s")
            return
        await watch_stalls(url, executors, record)
        await trio.sleep(1.0)


async def check(settings: Settings, url: str, executors: list[Executor], record: Record) -> None:
    async with Client(url, app_name=APP_NAME) as client:
        statuses = await client.list_workflows(load_input=False)
    by_id = {s.workflow_id: s for s in statuses}
    wrong: list[str] = []
    for index in range(settings.workflows):
        status = by_id.get(workflow_id(index))
        if status is None or status.status != "SUCCESS":
            wrong.append(f"{workflow_id(index)}: {None if status is None else status.status}")
        elif status.output != expected_output(index):
            wrong.append(f"{workflow_id(index)}: output {status.output!r}")
    if wrong:
        record.failures.append(f"{len(wrong)} workflows not SUCCESS as expected: {wrong[:5]}")
    late = query(url, "SELECT workflow_id, step_id FROM public.step_runs WHERE checkpointed_before")
    if late:
        record.failures.append(f"{len(late)} step bodies ran after their checkpoint: {late[:5]}")
    messages = query(
        url,
        "SELECT count(*), count(*) FILTER (WHERE consumed), "
        "count(DISTINCT (destination_uuid, consumed_by_function_id)) FROM dbos.notifications",
    )[0]
    pairs = sum(1 for i in range(settings.workflows) if kind_of(i) == "ping")
    if messages != (2 * pairs, 2 * pairs, 2 * pairs):
        record.failures.append(f"messages (sent, consumed, distinct receipts) = {messages}")
    duplicates = query(
        url,
        "SELECT workflow_uuid, function_id, count(*) FROM dbos.operation_outputs "
        "GROUP BY 1, 2 HAVING count(*) > 1",
    )
    if duplicates:
        record.failures.append(f"duplicate checkpoints: {duplicates[:5]}")
    for executor in [*executors, *record.retired]:
        text = executor.log.read_text(errors="replace")
        if "Traceback" in text:
            record.failures.append(f"a traceback in {executor.executor_id}'s stderr")
    if record.stalls:
        record.failures.append(
            f"{len(record.stalls)} workflows PENDING without progress for "
            f"{STALL_SECONDS:.0f} s while their executor lived: {sorted(record.stalls)[:5]}"
        )


def first_steps_after(url: str, backs: list[float]) -> list[float]:
    """For each time the database came back: seconds until the first step body ran."""
    delays = []
    for back in backs:
        rows = query(
            url,
            "SELECT extract(epoch FROM min(at)) FROM public.step_runs WHERE at > to_timestamp(%s)",
            back,
        )
        if rows and rows[0][0] is not None:
            delays.append(float(rows[0][0]) - back)
    return delays


async def soak(settings: Settings) -> int:
    started = time.monotonic()
    record = Record()
    with tempfile.TemporaryDirectory(prefix="dbos-trio-soak-") as logs, Cluster.create() as cluster:
        url = cluster.url()
        sysdb = await open_system_database(url)
        await sysdb.close()
        query(url, SIDE_TABLE)
        await enqueue_all(url, settings.workflows)
        executors = [
            Executor(f"exec-{n}", Path(logs) / f"exec-{n}.log") for n in range(settings.executors)
        ]
        for executor in executors:
            start_executor(executor, url, settings)
        try:
            await chaos(settings, cluster, executors, url, record)
            await drain(settings, url, executors, record)
            await check(settings, url, executors, record)
            delays = first_steps_after(url, record.backs)
        finally:
            for executor in executors:
                kill_executor(executor)
            if record.failures:  # the executors' logs outlive a failed run, for its diagnosis
                kept = Path(tempfile.mkdtemp(prefix="dbos-trio-soak-failed-"))
                shutil.copytree(logs, kept, dirs_exist_ok=True)
                record.failures.append(f"executor logs kept in {kept}")
    print(f"workflows: {settings.workflows}, executors: {settings.executors}")
    if settings.fleet:
        print(
            f"fleet: heartbeat {settings.heartbeat} s, adoption after {settings.adopt_after} s; "
            f"dead for good: {', '.join(record.dead) or 'none'}"
        )
    print(f"executor kills: {record.kills}, database restarts: {record.restarts}")
    if record.outages:
        print(f"longest outage: {max(record.outages):.1f} s")
    if delays:
        print(
            "database back -> first step: "
            f"median {statistics.median(delays):.2f} s, worst {max(delays):.2f} s"
        )
    print(f"wall time: {time.monotonic() - started:.0f} s")
    for failure in record.failures:
        print(f"FAILED: {failure}")
    for note in record.stall_notes:
        print(f"stalled: {note}")
    print("soak: OK" if not record.failures else "soak: FAILED")
    return 0 if not record.failures else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos.soak", description=__doc__)
    parser.add_argument("--workflows", type=int)
    parser.add_argument("--executors", type=int)
    parser.add_argument("--chaos-seconds", type=float)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--ci", action="store_true", help="the small configuration CI runs")
    parser.add_argument(
        "--fleet",
        action="store_true",
        help="heartbeat 1 s, adoption after 5 s, every outage longer than that, one "
        "executor dead for good midway",
    )
    args = parser.parse_args(argv)
    settings = Settings()
    if args.ci:
        settings = Settings(
            workflows=1500,
            chaos_seconds=90.0,
            kill_every=(2.0, 5.0),
            restart_every=(10.0, 20.0),
            drain_timeout=120.0,
        )
    if args.fleet:
        settings.heartbeat = 1.0
        settings.adopt_after = 5.0
    for field in ("workflows", "executors", "chaos_seconds", "seed"):
        value = getattr(args, field)
        if value is not None:
            setattr(settings, field, value)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    return trio.run(soak, settings)


if __name__ == "__main__":
    sys.exit(main())
