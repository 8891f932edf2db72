"""asyncio-only libraries inside steps (dbos_trio.aio): an aiohttp client, in a step, against
an aiohttp server on 127.0.0.1 that the test starts on its own trio-asyncio loop.

Observed: the step's body ran on an asyncio loop and its value was checkpointed; a Trio
cancellation (the step's timeout) reached the asyncio coroutine as asyncio.CancelledError
and the step failed with the step-timeout error; an asyncio-side cancellation became the
step's ordinary, retried error; without trio-asyncio the error names the extra.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest
import sniffio
import trio
import trio_asyncio
from aiohttp import web

from dbos_trio import (
    DBOS,
    DBOSAwaitedWorkflowCancelledError,
    DBOSStepTimeoutError,
    SetWorkflowID,
)
from dbos_trio.aio import AsyncioCancelledError, as_trio, run_asyncio

from support.backends import status_row

MakeDBOS = Callable[..., DBOS]


class Server:
    """An aiohttp application on 127.0.0.1 (an ephemeral port), served on a trio-asyncio loop."""

    def __init__(self) -> None:
        self.url = ""
        self.hits: list[str] = []
        self.never = asyncio.Event()  # the /slow handler waits on it: it never answers
        self.slow_arrived = trio.Event()  # (trio-asyncio runs both loops in one thread)

    def app(self) -> web.Application:
        async def hello(request: web.Request) -> web.Response:
            self.hits.append("hello")
            return web.json_response({"greeting": f"hello {request.query['name']}"})

        async def slow(request: web.Request) -> web.Response:
            self.hits.append("slow")
            self.slow_arrived.set()
            await self.never.wait()
            return web.Response(text="too late")

        app = web.Application()
        app.router.add_get("/hello", hello)
        app.router.add_get("/slow", slow)
        return app


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    served = Server()
    async with trio_asyncio.open_loop():

        @trio_asyncio.aio_as_trio
        async def start() -> web.AppRunner:
            runner = web.AppRunner(served.app())
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            port = runner.addresses[0][1]
            served.url = f"http://127.0.0.1:{port}"
            return runner

        runner = await start()
        # The steps under test must not find this loop: they open their own unless a test
        # opens one for them (the test task's context is what workflow tasks copy).
        token = trio_asyncio.current_loop.set(None)
        try:
            yield served
        finally:
            trio_asyncio.current_loop.reset(token)
            served.never.set()  # the /slow handlers end; cleanup would wait for them
            await trio_asyncio.aio_as_trio(runner.cleanup)()


async def get_json(url: str) -> Any:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        response.raise_for_status()
        return await response.json()


@pytest.mark.parametrize("shared_loop", [False, True], ids=["loop-per-call", "shared-loop"])
async def test_an_aiohttp_call_in_an_asyncio_step_is_checkpointed(
    make_dbos: MakeDBOS, server: Server, shared_loop: bool
) -> None:
    dbos = make_dbos()
    flavours: list[str] = []

    @dbos.step(asyncio=True)
    async def greet(name: str) -> str:
        flavours.append(sniffio.current_async_library())
        body = await get_json(f"{server.url}/hello?name={name}")
        return str(body["greeting"])

    @dbos.workflow()
    async def greeting(name: str) -> str:
        flavours.append(sniffio.current_async_library())
        return await greet(name)

    async with trio_asyncio.open_loop() if shared_loop else _no_loop(), dbos.launched():
        with SetWorkflowID("greet-1"):
            assert await greeting("trio") == "hello trio"
        # Again under the same id: the stored outcome answers, the server is not asked.
        with SetWorkflowID("greet-1"):
            assert await greeting("trio") == "hello trio"
        steps = await dbos.list_workflow_steps("greet-1")
    assert flavours == ["trio", "asyncio"]
    assert server.hits == ["hello"]
    assert [(s.function_name, s.output, s.error) for s in steps] == [
        (greet.__qualname__, "hello trio", None)
    ]


async def test_a_trio_timeout_cancels_the_asyncio_request(
    make_dbos: MakeDBOS, server: Server
) -> None:
    dbos = make_dbos()
    seen: list[str] = []

    @dbos.step(asyncio=True, timeout_seconds=0.5)
    async def wait_for_slow() -> str:
        try:
            return str(await get_json(f"{server.url}/slow"))
        except asyncio.CancelledError:
            seen.append(f"asyncio saw CancelledError in {sniffio.current_async_library()}")
            raise

    @dbos.workflow()
    async def impatient() -> str:
        try:
            return await wait_for_slow()
        except DBOSStepTimeoutError as timed_out:
            return f"timed out after {timed_out.timeout_seconds} s"

    async with dbos.launched():
        assert await impatient() == "timed out after 0.5 s"
    # (Whether the request reached the server within 0.5 s depends on the machine's load;
    # the next test waits for it.)
    assert seen == ["asyncio saw CancelledError in asyncio"]


async def test_cancelling_the_workflow_cancels_its_request_in_flight(
    make_dbos: MakeDBOS, server: Server
) -> None:
    dbos = make_dbos()
    seen: list[str] = []

    @dbos.step(asyncio=True)
    async def wait_for_slow() -> str:
        try:
            return str(await get_json(f"{server.url}/slow"))
        except asyncio.CancelledError:
            seen.append("asyncio saw CancelledError")
            raise

    @dbos.workflow()
    async def stuck() -> str:
        return await wait_for_slow()

    async with dbos.launched():
        with SetWorkflowID("stuck-1"):
            handle = await dbos.start_workflow(stuck)
        await server.slow_arrived.wait()  # the request is in flight, its handler waiting
        await dbos.cancel_workflow("stuck-1")
        with pytest.raises(DBOSAwaitedWorkflowCancelledError):
            await handle.get_result()
        steps = await dbos.list_workflow_steps("stuck-1")
    assert server.hits == ["slow"]
    assert seen == ["asyncio saw CancelledError"]
    assert steps == []  # a cancelled step records nothing


async def test_a_cancelled_trio_scope_sees_trio_cancelled_not_asyncio_cancelled_error(
    server: Server,
) -> None:
    cleaned: list[str] = []

    async def slow() -> None:
        try:
            await get_json(f"{server.url}/slow")
        finally:
            cleaned.append("asyncio finally ran")

    with trio.move_on_after(0.5) as scope:
        await run_asyncio(slow)
    assert scope.cancelled_caught  # trio.Cancelled reached the scope: caught by it
    assert cleaned == ["asyncio finally ran"]


async def test_an_asyncio_side_cancellation_is_the_steps_error_and_is_retried(
    make_dbos: MakeDBOS, server: Server
) -> None:
    dbos = make_dbos()
    attempts: list[int] = []

    @dbos.step(asyncio=True, retries_allowed=True, max_attempts=2, interval_seconds=0.01)
    async def cancels_itself_once() -> str:
        attempts.append(len(attempts) + 1)
        if len(attempts) == 1:
            task = asyncio.current_task()
            assert task is not None
            task.cancel()  # as a library cancelling its own task would
            await asyncio.sleep(1)
        return str((await get_json(f"{server.url}/hello?name=again"))["greeting"])

    @dbos.step(asyncio=True)
    async def always_cancels() -> None:
        raise asyncio.CancelledError

    @dbos.workflow()
    async def flow() -> str:
        first = await cancels_itself_once()
        try:
            await always_cancels()
        except AsyncioCancelledError as error:
            return f"{first}; {error}"
        return "unreachable"

    async with dbos.launched():
        with SetWorkflowID("self-cancel-1"):
            result = await flow()
        steps = await dbos.list_workflow_steps("self-cancel-1")
    assert result.startswith("hello again; ")
    assert "cancelled on the asyncio side" in result
    assert attempts == [1, 2]
    assert isinstance(steps[1].error, AsyncioCancelledError)


def test_an_asyncio_step_must_be_an_async_def() -> None:
    def not_async() -> None:
        pass

    with pytest.raises(TypeError, match="must be an async def"):
        as_trio(not_async)  # type: ignore[arg-type]


def test_without_trio_asyncio_the_error_names_the_extra(
    make_dbos: MakeDBOS, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "trio_asyncio", None)  # as if not installed
    dbos = make_dbos()

    async def body() -> None:
        pass

    with pytest.raises(ImportError, match=r"pip install 'dbos-trio\[asyncio\]'"):
        dbos.step(asyncio=True)(body)
    with pytest.raises(ImportError, match=r"dbos-trio\[asyncio\]"):
        trio.run(run_asyncio, body)


class _no_loop:
    """An empty async context (the steps open a loop per call)."""

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


@pytest.mark.parametrize("kind", [SystemExit, KeyboardInterrupt])
async def test_an_asyncio_step_stopping_the_process_leaves_launched_as_a_trio_step_would(
    make_dbos: MakeDBOS, dbos_url: str, kind: type[BaseException]
) -> None:
    # Raised inside an asyncio task, these escaped asyncio's loop instead of finishing
    # the task, so the step awaited it for ever and launched() never exited.
    dbos = make_dbos()

    @dbos.step(asyncio=True)
    async def stops() -> None:
        await asyncio.sleep(0)
        raise kind

    @dbos.workflow()
    async def flow() -> None:
        await stops()

    with trio.fail_after(30):  # a hang guard: before the fix, this never returned
        with pytest.raises(kind):
            async with dbos.launched():
                with SetWorkflowID(f"stops-{kind.__name__}"):
                    await dbos.start_workflow(flow)
                await trio.sleep_forever()
    assert (await status_row(dbos_url, f"stops-{kind.__name__}"))["status"] == "PENDING"
