"""Prometheus metrics: workflow and step counts by name, step latency (virtual time),
retries, queue depth and claim latency per queue, recoveries, database retries and
outages, and the in-process API (``metrics_text``, ``metrics_registry``)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import trio
import trio.testing
from prometheus_client import CollectorRegistry

from dbos_trio import DBOS, Config, DBOSException, DBOSNotLaunchedError, SetWorkflowID
from dbos_trio._engine.observability.metrics import MAX_DEPTH_SERIES, OTHER_QUEUES
from dbos_trio.testing.faults import lose_replies

from support.backends import execute
from support.waiting import wait_until


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    value = registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


def _dbos(url: str, **config: Any) -> DBOS:
    return DBOS(
        Config(
            app_name="metrics-tests",
            database_url=url,
            app_version="v1",
            enable_metrics=True,
            **config,
        )
    )


@pytest.fixture
def fast_clock() -> trio.testing.MockClock:
    return trio.testing.MockClock(rate=10)


async def test_workflows_and_steps_are_counted_by_name_and_steps_timed_on_trio_time(
    dbos_url: str, fast_clock: trio.testing.MockClock
) -> None:
    dbos = _dbos(dbos_url)
    calls: list[int] = []

    @dbos.step(name="m.slow")
    async def slow() -> None:
        await trio.sleep(3)

    @dbos.step(name="m.flaky", retries_allowed=True, max_attempts=3, interval_seconds=0.01)
    async def flaky() -> None:
        calls.append(1)
        if len(calls) < 3:
            raise RuntimeError("not yet")

    @dbos.workflow(name="m.ok")
    async def ok() -> None:
        await slow()
        await flaky()

    @dbos.step(name="m.boom")
    async def boom() -> None:
        raise ValueError("no")

    @dbos.workflow(name="m.bad")
    async def bad() -> None:
        await boom()

    async with dbos.launched():
        before_ok = trio.current_time()
        await ok()
        ok_took = trio.current_time() - before_ok
        for _ in range(2):
            with pytest.raises(ValueError):
                await bad()
        registry = dbos.metrics_registry
        text = dbos.metrics_text()
    assert sample(registry, "dbos_workflows_started_total", workflow="m.ok") == 1
    assert sample(registry, "dbos_workflows_completed_total", workflow="m.ok") == 1
    assert sample(registry, "dbos_workflows_started_total", workflow="m.bad") == 2
    assert sample(registry, "dbos_workflows_failed_total", workflow="m.bad") == 2
    assert sample(registry, "dbos_workflows_completed_total", workflow="m.bad") == 0
    # Failures by type: what an alert on one kind of error reads.
    by_type = {"workflow": "m.bad", "status": "ERROR", "error_type": "ValueError"}
    assert sample(registry, "dbos_workflow_failures_total", **by_type) == 2
    assert (
        sample(
            registry,
            "dbos_workflow_failures_total",
            workflow="m.ok",
            status="ERROR",
            error_type="ValueError",
        )
        == 0
    )
    assert sample(registry, "dbos_step_duration_seconds_count", step="m.slow") == 1
    # Trio's clock (virtual here): at least the 3 s sleep (0.3 real seconds), and no more
    # than the whole workflow call around the step took on that clock.
    assert 3 <= sample(registry, "dbos_step_duration_seconds_sum", step="m.slow") <= ok_took
    assert sample(registry, "dbos_step_duration_seconds_bucket", step="m.slow", le="2.5") == 0
    assert sample(registry, "dbos_step_retries_total", step="m.flaky") == 2
    assert sample(registry, "dbos_step_failures_total", step="m.flaky") == 0
    assert sample(registry, "dbos_step_failures_total", step="m.boom") == 2
    assert sample(registry, "dbos_step_duration_seconds_count", step="m.boom") == 2
    assert 'dbos_workflows_started_total{workflow="m.ok"} 1.0' in text


async def test_queue_depth_and_claim_latency_per_queue(dbos_url: str) -> None:
    enqueuer = _dbos(dbos_url, listen_queues=[])
    enqueuer.register_queue("mq")

    @enqueuer.workflow(name="m.queued")
    async def queued(i: int) -> int:
        return i

    async with enqueuer.launched():  # serves no queue: the rows wait
        for i in range(3):
            await enqueuer.enqueue_workflow("mq", queued, i)
        await enqueuer.refresh_metrics()
        registry = enqueuer.metrics_registry
        assert sample(registry, "dbos_queue_depth", queue="mq", status="ENQUEUED") == 3

    worker = _dbos(dbos_url)
    worker.register_queue("mq", polling_interval_sec=0.05)

    @worker.workflow(name="m.queued")
    async def queued_too(i: int) -> int:
        return i

    async with worker.launched():
        registry = worker.metrics_registry
        await wait_until(
            lambda: sample(registry, "dbos_workflows_completed_total", workflow="m.queued") == 3,
            what="the three queued workflows",
        )
        await worker.refresh_metrics()
        assert sample(registry, "dbos_queue_depth", queue="mq", status="ENQUEUED") == 0
        assert sample(registry, "dbos_queue_wait_seconds_count", queue="mq") == 3
        assert sample(registry, "dbos_workflows_recovered_total") == 0


async def test_a_workflow_interrupted_by_shutdown_counts_as_recovered_in_the_next_launch(
    dbos_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="dbos_trio")
    registry = CollectorRegistry()
    gate = trio.Event()

    def build() -> tuple[DBOS, Any]:
        dbos = _dbos(dbos_url, metrics_registry=registry, executor_id="ex-r")

        @dbos.step(name="m.gate")
        async def wait_gate() -> None:
            await gate.wait()

        @dbos.workflow(name="m.interrupted")
        async def interrupted() -> str:
            await wait_gate()
            return "done"

        return dbos, interrupted

    first, interrupted = build()
    async with first.launched():
        with SetWorkflowID("interrupted-1"):
            await first.start_workflow(interrupted)
        await trio.sleep(0.1)
    # Shutdown left it PENDING; the same registry is registered again (no collision).
    assert sample(registry, "dbos_workflows_started_total", workflow="m.interrupted") == 0
    gate.set()
    second, _ = build()
    async with second.launched():
        handle = await second.retrieve_workflow("interrupted-1")
        assert await handle.get_result() == "done"
        assert second.metrics_registry is registry
        assert sample(registry, "dbos_workflows_recovered_total") >= 1
        assert sample(registry, "dbos_workflows_completed_total", workflow="m.interrupted") == 1
    recovering = [r for r in caplog.records if r.getMessage().startswith("recovering workflow")]
    assert [(r.levelno, r.getMessage()) for r in recovering] == [
        (logging.INFO, "recovering workflow interrupted-1 (m.interrupted): dispatch 2")
    ]


@pytest.mark.postgres_only("a lost connection (the driver's fault injection)")
async def test_database_retries_and_outages_are_counted(dbos_url: str) -> None:
    dbos = _dbos(dbos_url)

    @dbos.step(name="m.step")
    async def step() -> int:
        return 1

    @dbos.workflow(name="m.retried")
    async def retried() -> int:
        return await step()

    async with dbos.launched():
        registry = dbos.metrics_registry
        assert sample(registry, "dbos_database_outages_total") == 0
        with lose_replies("record_step") as faults:
            assert await retried() == 1
        assert faults.lost == ["record_step"]
        assert sample(registry, "dbos_database_retries_total") >= 1
        assert sample(registry, "dbos_database_outages_total") == 1


async def test_metrics_text_says_how_to_turn_metrics_on(dbos_url: str) -> None:
    dbos = DBOS(Config(app_name="metrics-tests", database_url=dbos_url))
    with pytest.raises(DBOSNotLaunchedError):
        dbos.metrics_text()
    async with dbos.launched():
        with pytest.raises(DBOSException, match=r"enable_metrics=True"):
            dbos.metrics_text()


def _depth_series(registry: CollectorRegistry) -> dict[tuple[str, str], float]:
    return {
        (s.labels["queue"], s.labels["status"]): s.value
        for metric in registry.collect()
        if metric.name == "dbos_queue_depth"
        for s in metric.samples
    }


async def test_queue_depth_series_are_bounded_and_removed_once_their_rows_are_gone(
    dbos_url: str,
) -> None:
    # Any writer may put any queue name in the table: 300 names, 300 waiting rows.
    for i in range(300):
        await execute(
            dbos_url,
            "INSERT INTO {t}workflow_status (workflow_uuid, status, name, queue_name, "
            "created_at, updated_at) VALUES (%s, 'ENQUEUED', 'm.nobody', %s, 1, 1)",
            f"row-{i}",
            f"queue-{i:03d}",
        )
    dbos = _dbos(dbos_url, listen_queues=[])
    async with dbos.launched():
        registry = dbos.metrics_registry
        await dbos.refresh_metrics()
        series = _depth_series(registry)
        assert len(series) <= MAX_DEPTH_SERIES
        assert len([key for key in series if key[0] != OTHER_QUEUES]) == MAX_DEPTH_SERIES - 3
        assert series[(OTHER_QUEUES, "ENQUEUED")] == 300 - (MAX_DEPTH_SERIES - 3)
        assert sum(series.values()) == 300
        await execute(dbos_url, "DELETE FROM {t}workflow_status WHERE name = 'm.nobody'")
        await dbos.refresh_metrics()
        assert set(_depth_series(registry).values()) == {0.0}  # the drop is seen once
        await dbos.refresh_metrics()
        assert _depth_series(registry) == {}
