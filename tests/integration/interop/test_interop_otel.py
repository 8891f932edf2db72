"""Trace propagation across SDKs: a row the official 3.4 client enqueued with its trace
carrier (``attributes["dbos.otelContext"]``, the official format) is run by a dbos_trio
executor under that trace, and a carrier dbos_trio persisted reads as the official SDK
expects it (the same key, a W3C ``traceparent``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from interop_support import rows, run_official

from support.otel_support import memory_provider, one
from support.traced_apps import build_traced_app

pytestmark = pytest.mark.interop

DRIVER = Path(__file__).parent / "official" / "otel_driver.py"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN_ID = "00f067aa0ba902b7"


def _attributes(raw: Any) -> dict[str, Any]:
    return raw if isinstance(raw, dict) else json.loads(raw)


async def test_a_row_the_official_client_enqueued_runs_under_its_carrier(
    url: str, official_python: Path
) -> None:
    enqueued = await run_official(
        official_python,
        "enqueue-traced",
        url,
        "otel-interop",
        "otel.traced",
        f"00-{TRACE_ID}-{SPAN_ID}-01",
        "[4]",
        driver=DRIVER,
    )
    provider, exporter = memory_provider()
    app = build_traced_app(url, "exec-interop", provider)
    app.dbos.register_queue("otel-interop", polling_interval_sec=0.05)
    async with app.dbos.launched():
        handle = await app.dbos.retrieve_workflow(enqueued["workflow_id"])
        assert await handle.get_result() == 10
    workflow = one(exporter.get_finished_spans(), "otel.traced")
    assert f"{workflow.context.trace_id:032x}" == TRACE_ID
    assert workflow.parent is not None and f"{workflow.parent.span_id:016x}" == SPAN_ID
    assert workflow.parent.is_remote


async def test_the_carrier_dbos_trio_persists_has_the_official_shape(url: str) -> None:
    provider, _ = memory_provider()
    app = build_traced_app(url, "exec-shape", provider, listen_queues=[])
    app.dbos.register_queue("otel-shape")
    tracer = provider.get_tracer("test")
    async with app.dbos.launched():
        with tracer.start_as_current_span("caller") as caller:
            handle = await app.dbos.enqueue_workflow("otel-shape", app.traced, 1)
    [(raw,)] = await rows(
        url,
        "SELECT attributes FROM dbos.workflow_status WHERE workflow_uuid = %s",
        handle.workflow_id,
    )
    context = caller.get_span_context()
    carrier = _attributes(raw)["dbos.otelContext"]
    assert set(carrier) == {"traceparent"}
    assert carrier["traceparent"].startswith(f"00-{context.trace_id:032x}-{context.span_id:016x}-")
