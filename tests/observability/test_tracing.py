"""OpenTelemetry spans: nesting, attribute names, status, retry events, and the trace
carrier persisted with the row — through a queue, and through recovery in another
process (a real subprocess, SIGKILLed). Spans go to an in-memory exporter; each backend
in turn."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.lowlevel
from opentelemetry.trace import StatusCode

from dbos_trio import (
    DBOS,
    Client,
    Config,
    DBOSConfigError,
    DBOSMaxStepRetriesExceeded,
    EnqueueOptions,
    SetWorkflowID,
)

from support.backends import execute, query
from support.otel_support import memory_provider, named, one
from support.queue_fixtures import start_script
from support.traced_apps import build_traced_app

SRC = Path(__file__).resolve().parents[2] / "src"


def _attributes_of(raw: Any) -> dict[str, Any]:
    return raw if isinstance(raw, dict) else json.loads(raw)


async def test_workflow_and_step_spans_nest_under_the_callers_span_with_legacy_attributes(
    dbos_url: str,
) -> None:
    provider, exporter = memory_provider()
    app = build_traced_app(dbos_url, "exec-a", provider)
    tracer = provider.get_tracer("test")
    async with app.dbos.launched():
        with tracer.start_as_current_span("caller") as caller, SetWorkflowID("nest-1"):
            assert await app.traced(1) == 4
    spans = exporter.get_finished_spans()
    workflow = one(spans, "otel.traced")
    first, second = one(spans, "otel.first"), one(spans, "otel.second")
    assert workflow.parent is not None
    assert workflow.parent.span_id == caller.get_span_context().span_id
    assert workflow.context.trace_id == caller.get_span_context().trace_id
    for step in (first, second):
        assert step.parent is not None and step.parent.span_id == workflow.context.span_id
        assert step.attributes is not None
        assert step.attributes["operationType"] == "step"
        assert step.attributes["operationUUID"] == "nest-1"
        assert step.status.status_code is StatusCode.OK
    assert workflow.attributes is not None
    assert dict(workflow.attributes) == {
        "operationUUID": "nest-1",
        "operationType": "workflow",
        "applicationVersion": "v1",
        "executorID": "exec-a",
    }
    assert workflow.status.status_code is StatusCode.OK
    assert workflow.instrumentation_scope is not None
    assert workflow.instrumentation_scope.name == "dbos-tracer"


async def test_semconv_names_the_attributes_in_the_dbos_namespace(dbos_url: str) -> None:
    provider, exporter = memory_provider()
    app = build_traced_app(dbos_url, "exec-s", provider, otel_attribute_format="semconv")
    async with app.dbos.launched():
        with SetWorkflowID("semconv-1"):
            await app.traced(2)
    workflow = one(exporter.get_finished_spans(), "otel.traced")
    assert workflow.attributes is not None
    assert dict(workflow.attributes) == {
        "dbos.operation.workflow_id": "semconv-1",
        "dbos.operation.type": "workflow",
        "dbos.application.version": "v1",
        "dbos.executor.id": "exec-s",
    }


def test_an_unknown_attribute_format_is_refused_at_config() -> None:
    with pytest.raises(DBOSConfigError, match=r"otel_attribute_format.*'legacy' or 'semconv'"):
        Config(app_name="otel-tests", enable_otel=True, otel_attribute_format="camel")


async def test_a_retried_step_adds_attempt_events_and_failures_are_error_spans(
    dbos_url: str,
) -> None:
    provider, exporter = memory_provider()
    dbos = DBOS(
        Config(
            app_name="otel-tests",
            database_url=dbos_url,
            app_version="v1",
            enable_otel=True,
            otel_tracer_provider=provider,
        )
    )

    @dbos.step(name="otel.flaky", retries_allowed=True, max_attempts=3, interval_seconds=0.001)
    async def flaky() -> None:
        raise RuntimeError("disk on fire")

    @dbos.workflow(name="otel.fails")
    async def fails() -> None:
        await flaky()

    async with dbos.launched():
        with pytest.raises(DBOSMaxStepRetriesExceeded):
            await fails()
    spans = exporter.get_finished_spans()
    step = one(spans, "otel.flaky")
    assert [event.name for event in step.events] == [
        "Step attempt 1 failed",
        "Step attempt 2 failed",
    ]
    assert step.events[0].attributes is not None
    assert step.events[0].attributes["exception.message"] == "disk on fire"
    assert step.status.status_code is StatusCode.ERROR
    workflow = one(spans, "otel.fails")
    assert workflow.status.status_code is StatusCode.ERROR
    assert "DBOSMaxStepRetriesExceeded" in (workflow.status.description or "")


async def test_user_spans_in_async_and_thread_steps_nest_under_the_step_span(
    dbos_url: str,
) -> None:
    provider, exporter = memory_provider()
    tracer = provider.get_tracer("user")
    dbos = DBOS(
        Config(
            app_name="otel-tests",
            database_url=dbos_url,
            enable_otel=True,
            otel_tracer_provider=provider,
        )
    )

    @dbos.step(name="otel.in_thread")
    def in_thread() -> None:
        with tracer.start_as_current_span("user.thread"):
            pass

    @dbos.step(name="otel.in_task")
    async def in_task() -> None:
        with tracer.start_as_current_span("user.task"):
            await trio.lowlevel.checkpoint()

    @dbos.workflow(name="otel.user_spans")
    async def user_spans() -> None:
        await in_thread()
        await in_task()
        await dbos.sleep(0)

    async with dbos.launched():
        await user_spans()
    spans = exporter.get_finished_spans()
    for step, user in (("otel.in_thread", "user.thread"), ("otel.in_task", "user.task")):
        parent = one(spans, user).parent
        assert parent is not None and parent.span_id == one(spans, step).context.span_id


async def test_a_child_workflow_and_a_send_nest_under_the_parent_workflow_span(
    dbos_url: str,
) -> None:
    provider, exporter = memory_provider()
    dbos = DBOS(
        Config(
            app_name="otel-tests",
            database_url=dbos_url,
            enable_otel=True,
            otel_tracer_provider=provider,
        )
    )

    @dbos.workflow(name="otel.child")
    async def child() -> str:
        return str(await dbos.recv("topic", timeout_seconds=10))

    @dbos.workflow(name="otel.parent")
    async def parent() -> str:
        handle = await dbos.start_workflow(child)
        await dbos.send(handle.workflow_id, "hello", "topic")
        return str(await handle.get_result())

    async with dbos.launched():
        assert await parent() == "hello"
    spans = exporter.get_finished_spans()
    parent_span, child_span = one(spans, "otel.parent"), one(spans, "otel.child")
    send_span = one(spans, "DBOS.send")
    for span in (child_span, send_span):
        assert span.parent is not None and span.parent.span_id == parent_span.context.span_id
    assert child_span.context.trace_id == parent_span.context.trace_id


async def test_an_enqueued_workflow_continues_the_enqueuers_trace_from_the_persisted_carrier(
    dbos_url: str,
) -> None:
    provider, exporter = memory_provider()
    app = build_traced_app(dbos_url, "exec-q", provider)
    queue = app.dbos.register_queue("otel-q", polling_interval_sec=0.05)
    tracer = provider.get_tracer("test")
    async with app.dbos.launched():
        with tracer.start_as_current_span("enqueuer") as enqueuer, SetWorkflowID("queued-1"):
            handle = await queue.enqueue(app.traced, 3)
        assert await handle.get_result() == 8
    rows = await query(
        dbos_url, "SELECT attributes FROM {t}workflow_status WHERE workflow_uuid = 'queued-1'"
    )
    carrier = _attributes_of(rows[0][0])["dbos.otelContext"]
    context = enqueuer.get_span_context()
    flags = int(context.trace_flags)
    assert carrier == {
        "traceparent": f"00-{context.trace_id:032x}-{context.span_id:016x}-{flags:02x}"
    }
    workflow = one(exporter.get_finished_spans(), "otel.traced")
    assert workflow.parent is not None and workflow.parent.span_id == context.span_id
    assert workflow.context.trace_id == context.trace_id
    assert workflow.attributes is not None and workflow.attributes["queueName"] == "otel-q"


async def test_a_workflow_enqueued_by_name_continues_the_enqueuers_trace(dbos_url: str) -> None:
    # dbos.enqueue(EnqueueOptions(...)) writes its row apart from Queue.enqueue: it must
    # persist the same carrier.
    provider, exporter = memory_provider()
    app = build_traced_app(dbos_url, "exec-n", provider)
    app.dbos.register_queue("otel-n", polling_interval_sec=0.05)
    tracer = provider.get_tracer("test")
    async with app.dbos.launched():
        with tracer.start_as_current_span("enqueuer") as enqueuer:
            options = EnqueueOptions(
                workflow_name="otel.traced", queue_name="otel-n", workflow_id="named-1"
            )
            handle = await app.dbos.enqueue(options, 3)
        assert await handle.get_result() == 8
    workflow = one(exporter.get_finished_spans(), "otel.traced")
    assert workflow.context.trace_id == enqueuer.get_span_context().trace_id
    assert workflow.parent is not None
    assert workflow.parent.span_id == enqueuer.get_span_context().span_id


async def test_a_workflow_a_client_enqueues_inside_a_span_continues_that_trace(
    dbos_url: str,
) -> None:
    provider, exporter = memory_provider()
    tracer = provider.get_tracer("web")
    with tracer.start_as_current_span("request") as request:
        async with Client(dbos_url, app_name="otel-tests") as client:
            options = EnqueueOptions(
                workflow_name="otel.traced", queue_name="otel-c", workflow_id="client-1"
            )
            await client.enqueue(options, 5)
    worker = build_traced_app(dbos_url, "exec-c", provider)
    worker.dbos.register_queue("otel-c", polling_interval_sec=0.05)
    async with worker.dbos.launched():
        handle = await worker.dbos.retrieve_workflow("client-1")
        assert await handle.get_result() == 12
    workflow = one(exporter.get_finished_spans(), "otel.traced")
    assert workflow.context.trace_id == request.get_span_context().trace_id
    assert workflow.parent is not None
    assert workflow.parent.span_id == request.get_span_context().span_id


async def test_a_debounced_workflow_continues_the_trace_of_the_bounce_that_created_it(
    dbos_url: str,
) -> None:
    provider, exporter = memory_provider()
    app = build_traced_app(dbos_url, "exec-d", provider)
    tracer = provider.get_tracer("test")
    async with app.dbos.launched():
        with tracer.start_as_current_span("first-bounce") as first:
            handle = await app.dbos.debouncer(app.traced).debounce("key", 0.1, 2)
        assert await handle.get_result() == 6
    workflow = one(exporter.get_finished_spans(), "otel.traced")
    assert workflow.context.trace_id == first.get_span_context().trace_id


async def test_a_malformed_carrier_is_ignored_and_the_workflow_still_runs(dbos_url: str) -> None:
    provider, exporter = memory_provider()
    enqueuer = build_traced_app(dbos_url, "exec-m", provider, listen_queues=[])
    enqueuer.dbos.register_queue("otel-m")
    async with enqueuer.dbos.launched():  # serves no queue: the row stays ENQUEUED
        with SetWorkflowID("bad-carrier"):
            await enqueuer.dbos.enqueue_workflow("otel-m", enqueuer.traced, 1)
    # Attributes are user data: any shape may be found there.
    await execute(
        dbos_url,
        "UPDATE {t}workflow_status SET attributes = %s WHERE workflow_uuid = 'bad-carrier'",
        json.dumps({"dbos.otelContext": {"traceparent": 42}}),
    )
    worker = build_traced_app(dbos_url, "exec-m", provider)
    worker.dbos.register_queue("otel-m", polling_interval_sec=0.05)
    async with worker.dbos.launched():
        handle = await worker.dbos.retrieve_workflow("bad-carrier")
        assert await handle.get_result() == 4
    workflow = one(exporter.get_finished_spans(), "otel.traced")
    assert workflow.parent is None
    assert workflow.status.status_code is StatusCode.OK


async def test_a_workflow_recovered_in_another_process_continues_the_crashed_callers_trace(
    dbos_url: str,
) -> None:
    crashed = start_script("traced_crash.py", dbos_url, "exec-crash", "recover-1")
    try:
        await crashed.wait_for_line("TRACE", timeout=60)
    finally:
        crashed.kill()
    assert await crashed.wait() == -9, crashed.output()
    line = next(x for x in crashed.output().splitlines() if x.startswith("TRACE"))
    _, trace_id, caller_span_id = line.split()

    provider, exporter = memory_provider()
    app = build_traced_app(dbos_url, "exec-crash", provider)
    async with app.dbos.launched():
        handle = await app.dbos.retrieve_workflow("recover-1")
        assert await handle.get_result() == 4
    spans = exporter.get_finished_spans()
    workflow = one(spans, "otel.traced")
    assert f"{workflow.context.trace_id:032x}" == trace_id
    assert workflow.parent is not None
    assert f"{workflow.parent.span_id:016x}" == caller_span_id
    # Step 1 is replayed from its checkpoint (its span is there, nested); step 2 runs.
    second = one(spans, "otel.second")
    assert second.parent is not None and second.parent.span_id == workflow.context.span_id
    assert len(named(spans, "otel.first")) == 1


def test_with_tracing_off_nothing_imports_opentelemetry(tmp_path: Path) -> None:
    script = """
import sys, trio
from dbos_trio import DBOS, Config

dbos = DBOS(Config(app_name="otel-off", database_url=sys.argv[1]))

@dbos.step()
async def step() -> int:
    return 1

@dbos.workflow()
async def wf() -> int:
    return await step()

async def main() -> None:
    async with dbos.launched():
        assert await wf() == 1
        q = dbos_queue = None

trio.run(main)
loaded = sorted(m for m in sys.modules if m.startswith(("opentelemetry", "prometheus_client")))
print("LOADED", loaded)
"""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    url = f"sqlite:///{tmp_path / 'off.sqlite'}"
    done = subprocess.run(
        [sys.executable, "-c", script, url], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "LOADED []" in done.stdout, done.stdout
