"""Payload store I/O runs off the Trio thread, and a cancelled put leaves no partial entry.

A store whose ``put`` is held (inside its ``fsync``, between the temporary file's write and
its rename) shows both: while a workflow's large step output is being put, other workflows
of the same executor run to completion, and the put ran on a worker thread; a put whose
caller is cancelled is waited for — the entry is then whole (or absent, if the put fails),
no temporary file is left — and the cancellation is raised before the row is written.
Nothing here is timed: each test waits on the held put's own events.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import trio
import trio.testing

from dbos_trio import (
    DBOS,
    Config,
    DBOSPayloadError,
    DirectoryPayloadStore,
    PickleSerializer,
    SetWorkflowID,
)
from dbos_trio._serialization import Codec
from dbos_trio.testing import sqlite_url

from support.backends import query
from support.waiting import HANG_GUARD

MakeDBOS = Callable[..., DBOS]
LARGE = "payload " * 40_000  # 320 kB once pickled: over the 64 KiB threshold
REFERENCE = "dbos_trio_payload:1:"


class HeldPuts:
    """Holds every ``os.fsync`` of a payload store's put until released: ``entered`` is set
    when one is held (its thread recorded), ``release`` lets it go on — or fail, with
    ``fail``, as a full disk would."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.fail = False
        self.threads: list[threading.Thread] = []
        original = os.fsync

        def fsync(fd: int) -> None:
            self.threads.append(threading.current_thread())
            self.entered.set()
            # Bounded: a put wrongly run on the Trio thread fails the test, never hangs it.
            self.release.wait(HANG_GUARD)
            if self.fail:
                raise OSError(28, "No space left on device")
            original(fd)

        monkeypatch.setattr(os, "fsync", fsync)

    async def held(self) -> None:
        """Return once a put is held (waited for on a thread of its own)."""
        assert await trio.to_thread.run_sync(self.entered.wait, HANG_GUARD), "no put was held"


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[HeldPuts]:
    puts = HeldPuts(monkeypatch)
    yield puts
    puts.release.set()


def entries(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob("*") if path.is_file())


async def test_other_workflows_run_to_completion_while_a_large_put_is_held(
    make_dbos: MakeDBOS, tmp_path: Path, held: HeldPuts
) -> None:
    store = DirectoryPayloadStore(tmp_path / "payloads")
    dbos = make_dbos(payload_store=store)

    @dbos.step()
    async def produce() -> str:
        return LARGE

    @dbos.workflow()
    async def large() -> int:
        return len(await produce())

    @dbos.workflow()
    async def small(n: int) -> int:
        return n + 1

    async with dbos.launched():
        with SetWorkflowID("large-1"):
            handle = await dbos.start_workflow(large)
        await held.held()  # the step's output is being put, and the put is held
        # The Trio thread is free: three more workflows start, run and finish meanwhile.
        assert [await small(n) for n in range(3)] == [1, 2, 3]
        assert not handle_done(dbos, "large-1")
        held.release.set()
        assert await handle.get_result() == len(LARGE)
    assert held.threads and all(t is not threading.main_thread() for t in held.threads)
    [entry] = entries(tmp_path / "payloads")
    assert not entry.name.startswith(".")


def handle_done(dbos: DBOS, workflow_id: str) -> bool:
    """Whether the workflow's execution here has ended (its outcome decided)."""
    execution = dbos._require_executor("test").local.get(workflow_id)
    return execution is None or execution.done.is_set()


async def test_a_cancelled_put_completes_or_leaves_nothing_and_writes_no_row(
    make_dbos: MakeDBOS, dbos_url: str, tmp_path: Path, held: HeldPuts
) -> None:
    root = tmp_path / "payloads"
    dbos = make_dbos(payload_store=DirectoryPayloadStore(root))

    @dbos.step()
    async def produce() -> str:
        return LARGE

    @dbos.workflow()
    async def large() -> int:
        return len(await produce())

    async with dbos.launched():
        with SetWorkflowID("cancelled-1"):
            handle = await dbos.start_workflow(large)
        await held.held()
        execution = dbos._require_executor("test").local["cancelled-1"]
        await dbos.cancel_workflow("cancelled-1")  # while its step's output is being put
        held.release.set()
        with trio.fail_after(HANG_GUARD):
            await execution.done.wait()  # the execution ended (cancelled)
        status = await handle.get_status()
    assert status.status == "CANCELLED"
    # The put was waited for: its entry is whole (it reads back, hash checked), no
    # temporary file is left, and the cancellation stopped the step's row being written.
    [entry] = entries(root)
    assert DirectoryPayloadStore(root).get(entry.name)
    steps = await query(
        dbos_url, "SELECT output FROM {t}operation_outputs WHERE workflow_uuid = %s", "cancelled-1"
    )
    assert steps == []


async def test_a_cancelled_put_that_fails_leaves_no_entry_and_no_temporary_file(
    tmp_path: Path, held: HeldPuts
) -> None:
    root = tmp_path / "payloads"
    codec = Codec(
        PickleSerializer(), payload_store=DirectoryPayloadStore(root), payload_store_threshold=1024
    )
    text = codec.encode(LARGE, defer=True)
    assert text.startswith(REFERENCE) and entries(root) == []  # deferred: nothing put yet
    outcome: list[object] = []

    async def write() -> None:
        try:
            outcome.append(await codec.settle(text))
        except DBOSPayloadError as failed:
            outcome.append(failed)
        await trio.lowlevel.checkpoint()  # where the row's write would be
        outcome.append("row written")

    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(write)
            await held.held()
            scope.cancel()  # the put is not abandoned: the scope waits for it
            held.fail = True
            held.release.set()
    assert scope.cancelled_caught
    [failed] = outcome  # the failure was raised; the row's write never came
    assert isinstance(failed, DBOSPayloadError)
    assert "No space left on device" in str(failed) and codec.io.store is not None
    assert entries(root) == []  # no entry, and the failed put removed its temporary file


async def test_a_deferred_value_settles_to_the_reference_the_sync_path_writes(
    tmp_path: Path,
) -> None:
    store = DirectoryPayloadStore(tmp_path / "payloads")
    codec = Codec(PickleSerializer(), payload_store=store, payload_store_threshold=1024)
    deferred = codec.encode(LARGE, defer=True)
    settled = await codec.settle(deferred)
    assert type(settled) is str and settled == codec.encode(LARGE)
    await codec.prefetch(settled)  # read ahead in a thread; the decode takes it from there
    assert codec.decode(settled, "py_pickle") == LARGE


class ThreadRecordingStore(DirectoryPayloadStore):
    """A directory store that records the thread each put and get ran on."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.threads: list[threading.Thread] = []

    def put(self, sha256: str, data: bytes) -> None:
        self.threads.append(threading.current_thread())
        super().put(sha256, data)

    def get(self, sha256: str) -> bytes:
        self.threads.append(threading.current_thread())
        return super().get(sha256)


async def test_under_the_autojump_clock_store_io_stays_on_the_trio_thread(
    autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    # A thread's wait counts as idle there: virtual time would run ahead of the write.
    store = ThreadRecordingStore(tmp_path / "payloads")
    dbos = DBOS(
        Config(
            app_name="virtual-store",
            database_url=sqlite_url(tmp_path / "db.sqlite"),
            payload_store=store,
        )
    )

    @dbos.step()
    async def produce() -> str:
        return LARGE

    @dbos.workflow()
    async def slow() -> str:
        value = await produce()
        await dbos.sleep(3600)  # an hour of virtual time
        return value

    async with dbos.launched():
        assert await slow() == LARGE
        assert await (await dbos.retrieve_workflow(await last_id(dbos))).get_result() == LARGE
    assert store.threads and all(t is threading.main_thread() for t in store.threads)


async def last_id(dbos: DBOS) -> str:
    [status] = await dbos.list_workflows(limit=1)
    return status.workflow_id


async def test_a_queued_enqueue_puts_its_large_inputs_from_a_thread(
    make_dbos: MakeDBOS, dbos_url: str, tmp_path: Path, held: HeldPuts
) -> None:
    # Queue.enqueue of large inputs: the put runs on a worker thread while other
    # workflows go on; the row is written only once the entry is whole, and the dequeued
    # workflow reads its inputs back through the store.
    store = DirectoryPayloadStore(tmp_path / "payloads")
    dbos = make_dbos(payload_store=store)
    queue = dbos.register_queue("big_inputs")

    @dbos.workflow()
    async def measure(text: str) -> int:
        return len(text)

    @dbos.workflow()
    async def small(n: int) -> int:
        return n + 1

    enqueued = trio.Event()
    handles: list[object] = []

    async def enqueue() -> None:
        with SetWorkflowID("queued-big"):
            handles.append(await queue.enqueue(measure, LARGE))  # type: ignore[attr-defined]
        enqueued.set()

    async with dbos.launched(), trio.open_nursery() as nursery:
        nursery.start_soon(enqueue)
        await held.held()
        assert [await small(n) for n in range(3)] == [1, 2, 3]
        rows = await query(
            dbos_url,
            "SELECT count(*) FROM {t}workflow_status WHERE workflow_uuid = %s",
            "queued-big",
        )
        assert rows == [(0,)]  # no row before its inputs' entry is whole
        held.release.set()
        with trio.fail_after(HANG_GUARD):
            await enqueued.wait()
            assert await handles[0].get_result() == len(LARGE)  # type: ignore[attr-defined]
    assert held.threads and all(t is not threading.main_thread() for t in held.threads)
