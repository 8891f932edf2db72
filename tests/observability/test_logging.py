"""Contextual logging: the filter's fields inside workflows, steps and threads; the JSON
formatter; configure_logging; the levels of launch, migration and retry messages."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

import dbos_trio
from dbos_trio import DBOS, Config, DBOSContextFilter, JSONFormatter, SetWorkflowID

from support.otel_support import memory_provider, one


class Capture(logging.Handler):
    """Keeps the records it sees, after its filters ran (as a real handler would)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.addFilter(DBOSContextFilter())

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def by_message(self, text: str) -> logging.LogRecord:
        found = [r for r in self.records if r.getMessage() == text]
        assert len(found) == 1, [r.getMessage() for r in self.records]
        return found[0]


@pytest.fixture
def capture() -> Iterator[Capture]:
    handler = Capture()
    library = logging.getLogger("dbos_trio")
    level = library.level
    library.addHandler(handler)
    library.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        library.removeHandler(handler)
        library.setLevel(level)


@pytest.fixture
def restore_library_logger() -> Iterator[None]:
    library = logging.getLogger("dbos_trio")
    saved = (list(library.handlers), library.level, library.propagate)
    try:
        yield
    finally:
        library.handlers[:] = saved[0]
        library.setLevel(saved[1])
        library.propagate = saved[2]


async def test_records_in_workflows_steps_and_threads_carry_their_context(
    dbos_url: str, capture: Capture
) -> None:
    dbos = DBOS(
        Config(app_name="log-tests", database_url=dbos_url, app_version="v7", executor_id="ex-9")
    )
    log = dbos_trio.logger

    @dbos.step()
    def in_thread() -> None:
        log.info("from a thread step")

    @dbos.step()
    async def in_task() -> None:
        log.info("from an async step")

    @dbos.workflow()
    async def wf() -> None:
        log.info("from the body")
        await in_thread()
        await in_task()

    async with dbos.launched():
        with SetWorkflowID("log-1"):
            await wf()
        log.info("outside")
    body = capture.by_message("from the body")
    assert (body.workflow_id, body.step_id) == ("log-1", None)
    assert (body.executor_id, body.app_version, body.trace_id) == ("ex-9", "v7", None)
    assert body.operationUUID == "log-1"
    for message, step_id in (("from a thread step", 1), ("from an async step", 2)):
        record = capture.by_message(message)
        assert (record.workflow_id, record.step_id, record.executor_id) == (
            "log-1",
            step_id,
            "ex-9",
        )
    outside = capture.by_message("outside")
    assert (outside.workflow_id, outside.step_id, outside.executor_id) == (None, None, None)


async def test_with_tracing_on_records_carry_the_spans_trace_id(
    dbos_url: str, capture: Capture
) -> None:
    provider, exporter = memory_provider()
    dbos = DBOS(
        Config(
            app_name="log-tests",
            database_url=dbos_url,
            enable_otel=True,
            otel_tracer_provider=provider,
        )
    )

    @dbos.step(name="log.step")
    async def step() -> None:
        dbos_trio.logger.info("traced step")

    @dbos.workflow(name="log.wf")
    async def wf() -> None:
        await step()

    async with dbos.launched():
        await wf()
    record = capture.by_message("traced step")
    span = one(exporter.get_finished_spans(), "log.step")
    assert record.trace_id == f"{span.context.trace_id:032x}"
    assert record.traceId == record.trace_id


def test_the_json_formatter_writes_one_object_with_the_set_fields() -> None:
    record = logging.LogRecord("dbos_trio.app", logging.WARNING, __file__, 1, "hi %s", ("x",), None)
    DBOSContextFilter().filter(record)
    record.workflow_id = "wf-<script>"
    entry = json.loads(JSONFormatter().format(record))
    assert entry["message"] == "hi x"
    assert entry["level"] == "WARNING"
    assert entry["logger"] == "dbos_trio.app"
    assert entry["workflow_id"] == "wf-<script>"
    assert "step_id" not in entry  # unset fields are left out
    assert entry["time"].endswith("+00:00")


def test_the_json_formatter_includes_the_traceback() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    entry = json.loads(JSONFormatter().format(record))
    assert "ValueError: boom" in entry["exception"]


async def test_configure_logging_emits_json_lines_once_per_record_and_replaces_itself(
    dbos_url: str, restore_library_logger: None
) -> None:
    first = io.StringIO()
    dbos_trio.configure_logging(json_format=True, stream=first)
    stream = io.StringIO()
    dbos_trio.configure_logging("INFO", json_format=True, stream=stream)
    dbos = DBOS(Config(app_name="log-tests", database_url=dbos_url, executor_id="ex-j"))

    @dbos.workflow()
    async def wf() -> None:
        dbos_trio.logger.info("inside")

    async with dbos.launched():
        with SetWorkflowID("json-1"):
            await wf()
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    inside = [entry for entry in lines if entry["message"] == "inside"]
    assert len(inside) == 1
    assert inside[0]["workflow_id"] == "json-1"
    assert inside[0]["executor_id"] == "ex-j"
    assert any(entry["message"].startswith("launched log-tests") for entry in lines)
    assert first.getvalue() == ""  # the first handler was replaced, not kept


async def test_a_fresh_sqlite_launch_logs_one_info_line_for_its_migrations(
    tmp_path: Path, capture: Capture
) -> None:
    url = f"sqlite:///{tmp_path / 'fresh.sqlite'}"
    dbos = DBOS(Config(app_name="log-tests", database_url=url))
    async with dbos.launched():
        pass
    migrate = [r for r in capture.records if r.name == "dbos_trio.migrate"]
    assert len([r for r in migrate if r.levelno >= logging.INFO]) == 1, [
        r.getMessage() for r in migrate
    ]
    assert len([r for r in migrate if r.levelno == logging.DEBUG]) > 10


async def test_a_retried_step_attempt_is_logged_at_info_with_its_workflow(
    dbos_url: str, capture: Capture
) -> None:
    dbos = DBOS(Config(app_name="log-tests", database_url=dbos_url))
    attempts = []

    @dbos.step(name="log.flaky", retries_allowed=True, max_attempts=2, interval_seconds=0.001)
    async def flaky() -> int:
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("first time")
        return 1

    @dbos.workflow()
    async def wf() -> int:
        return await flaky()

    async with dbos.launched():
        with SetWorkflowID("retry-1"):
            assert await wf() == 1
    retried = [r for r in capture.records if "attempt 1 failed" in r.getMessage()]
    assert len(retried) == 1
    assert retried[0].levelno == logging.INFO
    assert retried[0].workflow_id == "retry-1"
    assert "first time" in retried[0].getMessage()


async def test_the_text_format_names_the_workflow_and_step_only_inside_one(
    dbos_url: str, restore_library_logger: None
) -> None:
    stream = io.StringIO()
    dbos_trio.configure_logging("INFO", stream=stream)
    dbos = DBOS(Config(app_name="log-text", database_url=dbos_url))

    @dbos.step()
    async def noted() -> None:
        dbos_trio.logger.info("in the step")

    @dbos.workflow()
    async def wf() -> None:
        await noted()

    async with dbos.launched():
        with SetWorkflowID("text-1"):
            await wf()
    lines = stream.getvalue().splitlines()
    launched = [line for line in lines if "launched log-text" in line]
    assert len(launched) == 1 and "workflow=" not in launched[0]  # no "workflow=None"
    inside = [line for line in lines if "in the step" in line]
    assert len(inside) == 1 and inside[0].endswith("[workflow=text-1 step=1]")
