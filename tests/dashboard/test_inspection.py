"""The read-only inspection statements the dashboard pages use, on both backends: events,
messages, stream values, application versions, executor summaries and queue depths."""

from __future__ import annotations

from dbos_trio import SetWorkflowID

from support.dashboard_support import HOSTILE_ID, SCRIPT, demo_app


async def test_inspection_reads_what_the_workflows_wrote(dbos_url: str) -> None:
    dbos, fns = demo_app(dbos_url, app_name="inspect")
    async with dbos.launched():
        with SetWorkflowID(HOSTILE_ID):
            await (await dbos.start_workflow(fns["order"], 5, SCRIPT)).get_result()
        waiting = await dbos.start_workflow(fns["waiter"])
        await dbos.send(waiting.workflow_id, "one", "t1")
        await dbos.send(waiting.workflow_id, "two", "t2")
        sysdb = dbos._require_executor("test").sysdb

        [event] = await sysdb.list_events(HOSTILE_ID, 10)
        assert event.key == f"state-{SCRIPT}" and event.serialization == "portable_json"
        entries = await sysdb.list_stream_entries(HOSTILE_ID, 10)
        assert [(e.key, e.offset) for e in entries] == [("progress", 0), ("progress", 1)]
        assert len(await sysdb.list_stream_entries(HOSTILE_ID, 1)) == 1
        messages = await sysdb.list_messages(waiting.workflow_id, 10)
        assert sorted(m.topic for m in messages) == ["t1", "t2"]  # same ms: any order
        assert not any(m.consumed for m in messages) and messages[0].created_at_epoch_ms
        assert await sysdb.list_messages(HOSTILE_ID, 10) == []

        versions = await sysdb.list_application_versions(None)
        assert any(v.version_name == "v1" for v in versions)
        [summary] = [e for e in await sysdb.list_executor_summaries() if e.executor_id == "local"]
        assert summary.application_version == "v1" and summary.pending == 1
        assert summary.total == 3  # the order, its child, the waiter

        depths = {(d.queue_name, d.status): d.count for d in await sysdb.queue_depths()}
        assert all(count > 0 for count in depths.values())
        await dbos.cancel_workflow(waiting.workflow_id)
        summary_after = [
            e for e in await sysdb.list_executor_summaries() if e.executor_id == "local"
        ]
        assert summary_after[0].pending == 0
