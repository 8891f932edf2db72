"""The faces that show values to a person (CLI, dashboard) get a preview of a large
payload — its size and first characters — instead of decoding and printing it whole;
the API still returns whole values."""

from __future__ import annotations

import json
from collections.abc import Callable

from dbos_trio import DBOS, SetWorkflowID
from dbos_trio._core.previews import PREVIEW_CHARS, PREVIEW_THRESHOLD_BYTES, PayloadPreview
from dbos_trio._ops import inspect
from dbos_trio.cli import _format as cli_format

MakeDBOS = Callable[..., DBOS]
LARGE = "L" * (2 * PREVIEW_THRESHOLD_BYTES)


async def test_a_large_payload_is_previewed_for_the_faces_and_whole_for_the_api(
    make_dbos: MakeDBOS,
) -> None:
    dbos = make_dbos()

    @dbos.step()
    async def big_step(value: str) -> str:
        return value

    @dbos.workflow()
    async def big(value: str) -> str:
        return await big_step(value)

    async with dbos.launched():
        with SetWorkflowID("big-1"):
            await big(LARGE)
        whole = await inspect.get_workflow_status(dbos._reach, "big-1")
        shown = await inspect.get_workflow_status(dbos._reach, "big-1", previews=True)
        steps = await inspect.list_workflow_steps(dbos._reach, "big-1", previews=True)

    assert whole is not None and whole.output == LARGE and whole.input["args"] == (LARGE,)
    assert shown is not None
    for preview in (shown.output, steps[0].output):
        assert isinstance(preview, PayloadPreview)
        assert preview.format == "py_pickle" and preview.size > len(LARGE)
        assert len(preview.head) == PREVIEW_CHARS
    assert isinstance(shown.input, PayloadPreview)
    detail = cli_format.workflow_detail(shown, steps, decoded=True)
    assert "stored as py_pickle, not decoded to show" in detail
    assert len(detail) < 10 * PREVIEW_CHARS  # not the value: its preview
    document = json.loads(cli_format.workflow_json(shown, steps))
    assert document["output"]["size"] == shown.output.size
    assert set(document["output"]) == {"size", "format", "head"}
