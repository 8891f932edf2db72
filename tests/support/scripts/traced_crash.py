"""Start (or enqueue) a traced workflow whose step never returns, then wait to be killed.

Used by the trace propagation test: the workflow is started inside a span ``caller`` of
this process; the script prints ``TRACE <trace id> <caller span id>`` once the workflow's
first step is checkpointed, and sleeps until SIGKILL. Another process recovers it.

Usage: ``traced_crash.py URL EXECUTOR_ID WORKFLOW_ID``.
"""

from __future__ import annotations

import sys

import trio

from dbos_trio import SetWorkflowID

from support.otel_support import memory_provider
from support.traced_apps import build_traced_app


async def main(url: str, executor_id: str, workflow_id: str) -> None:
    provider, _ = memory_provider()
    app = build_traced_app(url, executor_id, provider, gate=trio.sleep_forever)
    tracer = provider.get_tracer("test")
    async with app.dbos.launched():
        with tracer.start_as_current_span("caller") as caller, SetWorkflowID(workflow_id):
            await app.dbos.start_workflow(app.traced, 1)
        await app.first_done.wait()
        context = caller.get_span_context()
        print(f"TRACE {context.trace_id:032x} {context.span_id:016x}", flush=True)
        await trio.sleep_forever()


if __name__ == "__main__":
    trio.run(main, *sys.argv[1:4])
