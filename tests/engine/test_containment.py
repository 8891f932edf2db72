"""Nothing a workflow does stops the executor: its exceptions are contained to it.

Per kind of ``BaseException`` a workflow body may raise (the table of
:mod:`dbos_trio._core.ending`):

* a ``trio.Cancelled`` of a scope it does not own (caught inside that scope, re-raised
  outside it), a ``GeneratorExit``, an exception class deriving from ``BaseException``:
  the workflow's ERROR, recorded as :class:`DBOSWorkflowAbortedError` naming the type,
  never silent, never a hang — and every other workflow of the executor goes on;
* ``SystemExit`` and ``KeyboardInterrupt``: the process is to stop, so they come out of
  ``launched()``, and the workflow stays PENDING for the next launch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import trio

from dbos_trio import DBOS, DBOSWorkflowAbortedError, SetWorkflowID

from support.backends import status_row

MakeDBOS = Callable[..., DBOS]


class Custom(BaseException):
    """A user's own BaseException subclass."""


def register(dbos: DBOS) -> dict[str, Any]:
    @dbos.workflow()
    async def stray_cancelled() -> None:
        saved: BaseException | None = None
        with trio.move_on_after(0):
            try:
                await trio.sleep(10)
            except trio.Cancelled as cancelled:
                saved = cancelled
                raise
        assert saved is not None
        raise saved  # outside the scope it belongs to

    @dbos.workflow()
    async def generator_exit() -> None:
        raise GeneratorExit("closed")

    @dbos.workflow()
    async def custom() -> None:
        raise Custom("mine")

    @dbos.workflow()
    async def exits() -> None:
        raise SystemExit(3)

    @dbos.workflow()
    async def interrupted() -> None:
        raise KeyboardInterrupt

    @dbos.workflow()
    async def fine(x: int) -> int:
        await trio.sleep(0.01)
        return x + 1

    return {
        "stray_cancelled": stray_cancelled,
        "generator_exit": generator_exit,
        "custom": custom,
        "exits": exits,
        "interrupted": interrupted,
        "fine": fine,
    }


@pytest.mark.parametrize(
    ("name", "type_name"),
    [("stray_cancelled", "Cancelled"), ("generator_exit", "GeneratorExit"), ("custom", "Custom")],
)
async def test_a_workflow_raising_a_non_exception_ends_as_error_and_the_executor_goes_on(
    make_dbos: MakeDBOS, dbos_url: str, name: str, type_name: str
) -> None:
    dbos = make_dbos()
    workflows = register(dbos)
    async with dbos.launched():
        with SetWorkflowID(f"{name}-started"):
            handle = await dbos.start_workflow(workflows[name])
        with pytest.raises(DBOSWorkflowAbortedError) as raised:
            await handle.get_result()
        assert raised.value.type_name == type_name
        # Called directly, in the caller's own task: the same error, raised to the caller.
        with SetWorkflowID(f"{name}-direct"), pytest.raises(DBOSWorkflowAbortedError):
            await workflows[name]()
        # The executor is unharmed: other workflows run, in the same launch.
        assert await workflows["fine"](1) == 2
        fetched = await dbos.retrieve_workflow(f"{name}-started")
        with pytest.raises(DBOSWorkflowAbortedError):
            await fetched.get_result()
    for suffix in ("started", "direct"):
        row = await status_row(dbos_url, f"{name}-{suffix}")
        assert row["status"] == "ERROR"
    # Recorded, so a relaunch does not run it again.
    async with dbos.launched():
        assert await workflows["fine"](2) == 3
    assert (await status_row(dbos_url, f"{name}-started"))["status"] == "ERROR"


@pytest.mark.parametrize(
    ("name", "kind"), [("exits", SystemExit), ("interrupted", KeyboardInterrupt)]
)
async def test_a_workflow_stopping_the_process_stops_launched_and_stays_pending(
    make_dbos: MakeDBOS, dbos_url: str, name: str, kind: type[BaseException]
) -> None:
    dbos = make_dbos()
    workflows = register(dbos)
    with pytest.raises(kind):
        async with dbos.launched():
            with SetWorkflowID(f"{name}-1"):
                await dbos.start_workflow(workflows[name])
            await trio.sleep_forever()
    assert (await status_row(dbos_url, f"{name}-1"))["status"] == "PENDING"
