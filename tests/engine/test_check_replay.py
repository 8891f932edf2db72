"""``check``: recorded workflows replayed against new code in the sandbox.

One application, ``order``, is recorded at generation "v1" on each backend: one run
finished, one left PENDING in ``recv`` (the launch ends while it waits), one left
PENDING after its last step (crash injection: killed instead of writing its outcome).
Later generations change the code — two steps reordered, a step added at the end, the
reordering behind ``dbos.patch`` — and ``check_upgrade`` must name each workflow's first
divergence (function id, names, the new call's source line) without running a step body
or writing a row.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from dbos_trio import DBOS, Client, SetWorkflowID
from dbos_trio._ops.check import CheckSelection, load_histories
from dbos_trio.testing import CheckReport, CrashPoint, check_upgrade, run_until_crash

from support.backends import steps_of
from support.waiting import HANG_GUARD

HERE = Path(__file__)


def line_of(marker: str) -> str:
    """``file:line`` of the line of this file holding ``marker`` (a new call)."""
    for number, text in enumerate(HERE.read_text().splitlines(), start=1):
        if text.rstrip().endswith(f"# {marker}"):
            return f"{HERE}:{number}"
    raise AssertionError(marker)


def build(make_dbos: Callable[..., DBOS], generation: str) -> tuple[DBOS, Counter[str], Any]:
    dbos = make_dbos()
    ran: Counter[str] = Counter()

    @dbos.step(name="a")
    async def a(x: int) -> int:
        ran["a"] += 1
        return x + 1

    @dbos.step(name="b")
    async def b(x: int) -> int:
        ran["b"] += 1
        return x + 2

    @dbos.step(name="c")
    async def c(message: str) -> str:
        ran["c"] += 1
        return message.upper()

    @dbos.step(name="d")
    async def d() -> str:
        ran["d"] += 1
        return "d"

    @dbos.workflow(name="order")
    async def order(x: int) -> list[Any]:
        if generation == "reordered":
            second = await b(x)  # new-call: reordered
            first = await a(x)
        elif generation == "patched":
            if await dbos.patch("reorder"):
                second = await b(x)
                first = await a(x)
            else:
                first = await a(x)
                second = await b(x)
        else:
            first = await a(x)
            second = await b(x)
        await dbos.set_event("ready", True)
        message = await dbos.recv("go", timeout_seconds=3600)
        result = [first, second, await c(message)]
        if generation == "added":
            result.append(await d())  # new-call: added
        return result

    return dbos, ran, order


async def record(make_dbos: Callable[..., DBOS]) -> None:
    """Generation v1's history: 'done' finished, 'waiting' in recv, 'crashed' killed
    before its outcome (both PENDING)."""
    dbos, _, order = build(make_dbos, "v1")
    async with dbos.launched():
        with SetWorkflowID("done"):
            handle = await dbos.start_workflow(order, 1)
        await dbos.send("done", "go", "go")
        assert await handle.get_result() == [2, 3, "GO"]
        with SetWorkflowID("waiting"):
            await dbos.start_workflow(order, 2)
        assert await dbos.get_event("waiting", "ready", timeout_seconds=HANG_GUARD) is True
    async with run_until_crash(dbos, CrashPoint.before_outcome("crashed")) as run:
        with SetWorkflowID("crashed"):
            await dbos.start_workflow(order, 3)
        await dbos.send("crashed", "go", "go")
        await run.wait()
    assert run.crashed


async def check_against(
    make_dbos: Callable[..., DBOS], url: str, generation: str
) -> tuple[CheckReport, Counter[str], DBOS, Any]:
    dbos, ran, order = build(make_dbos, generation)
    report = await check_upgrade(dbos, url, finished=10)
    assert not ran, f"a step body ran during the check: {ran}"
    return report, ran, dbos, order


async def test_the_same_code_replays_every_recorded_workflow(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    await record(make_dbos)
    before = await steps_of(dbos_url, "waiting")
    report, _, _, _ = await check_against(make_dbos, dbos_url, "v1")
    results = report.by_id()
    assert set(results) == {"done", "waiting", "crashed"}
    assert results["done"].verdict == "compatible"
    assert results["crashed"].verdict == "compatible"  # its whole record, then it returns
    # Mid-recv: the record ends where it waited; past it is fine for PENDING work.
    assert results["waiting"].verdict == "new_code"
    assert results["waiting"].new is not None
    assert results["waiting"].new.kind == "recv"
    assert report.ok, report.summary()
    assert await steps_of(dbos_url, "waiting") == before  # nothing written


async def test_reordered_steps_diverge_at_the_first_moved_call_with_its_source_line(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    await record(make_dbos)
    report, _, _, _ = await check_against(make_dbos, dbos_url, "reordered")
    assert not report.ok
    for workflow_id in ("done", "waiting", "crashed"):
        result = report.by_id()[workflow_id]
        assert result.verdict == "diverged", result
        assert result.recorded is not None and result.new is not None
        assert (result.recorded.function_id, result.recorded.name) == (1, "a")
        assert (result.new.function_id, result.new.name) == (1, "b")
        assert result.new.where == line_of("new-call: reordered")
        assert "diverged at function id 1: recorded a" in result.message
    # Only in-flight work fails the check; the finished one is reported.
    assert {r.workflow_id for r in report.failing} == {"crashed", "waiting"}
    assert not report.by_id()["done"].fails
    assert "FAILED: 2 in-flight" in report.summary()


async def test_a_step_added_at_the_end_is_new_code_past_the_record(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    await record(make_dbos)
    report, _, _, _ = await check_against(make_dbos, dbos_url, "added")
    crashed = report.by_id()["crashed"]
    assert crashed.verdict == "new_code"
    assert crashed.new is not None
    assert (crashed.new.name, crashed.new.kind) == ("d", "step")
    assert crashed.new.where == line_of("new-call: added")
    assert crashed.replayed_calls == crashed.recorded_calls
    assert "reached new code past the record" in crashed.message
    assert report.ok, report.summary()


async def test_the_reordering_behind_a_patch_replays_and_then_completes_every_workflow(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    await record(make_dbos)
    report, ran, dbos, order = await check_against(make_dbos, dbos_url, "patched")
    assert report.by_id()["done"].verdict == "compatible"
    assert report.by_id()["crashed"].verdict == "compatible"
    assert report.ok, report.summary()
    # Launching the patched code completes the in-flight work on the old branch.
    async with dbos.launched():
        await dbos.send("waiting", "go", "go")
        for workflow_id, x in (("waiting", 2), ("crashed", 3)):
            handle = await dbos.retrieve_workflow(workflow_id)
            with trio.fail_after(HANG_GUARD):
                assert await handle.get_result() == [x + 1, x + 2, "GO"]
        with SetWorkflowID("patched-run"):  # a new execution takes the patched branch
            handle = await dbos.start_workflow(order, 7)
        await dbos.send("patched-run", "go", "go")
        assert await handle.get_result() == [8, 9, "GO"]
    assert ran["c"] == 2  # the waiting one ran on for real after the check, and the new one
    # Its history (the marker, then b before a) replays on the patched branch ...
    again, _, _, _ = await check_against(make_dbos, dbos_url, "patched")
    assert again.by_id()["patched-run"].verdict == "compatible", again.summary()
    # ... and code without the patch would meet the marker first.
    old, _, _, _ = await check_against(make_dbos, dbos_url, "v1")
    old_run = old.by_id()["patched-run"]
    assert old_run.verdict == "diverged"
    assert old_run.recorded is not None
    assert (old_run.recorded.kind, old_run.recorded.name) == ("patch", "DBOS.patch-reorder")


async def test_undecodable_inputs_and_unknown_names_are_reported_not_fatal(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    await record(make_dbos)
    dbos, ran, _ = build(make_dbos, "v1")
    good = await check_upgrade(dbos, dbos_url, workflow_ids=["done"])
    assert good.by_id()["done"].verdict == "compatible"
    async with Client(dbos_url, use_listen_notify=False) as client:
        [history] = await load_histories(client._reach, CheckSelection(workflow_ids=("waiting",)))
    garbled = attrs.evolve(
        history, row=attrs.evolve(history.row, inputs="{not json", serialization="portable_json")
    )
    renamed = attrs.evolve(
        history, row=attrs.evolve(history.row, workflow_id="gone", name="no-such-workflow")
    )
    homeless = attrs.evolve(
        history,
        row=attrs.evolve(history.row, workflow_id="homeless", class_name="Shop", config_name="x"),
    )
    report = await check_upgrade(dbos, histories=[garbled, renamed, homeless])
    verdicts = {r.workflow_id: r.verdict for r in report.results}
    assert verdicts == {
        "waiting": "undecodable",
        "gone": "not_registered",
        "homeless": "not_registered",
    }
    assert "no instance of Shop" in report.by_id()["homeless"].message
    assert "cannot be decoded" in report.by_id()["waiting"].message
    assert not report.ok  # both are in flight
    assert not ran


async def test_a_launched_application_is_refused(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos, _, _ = build(make_dbos, "v1")
    async with dbos.launched():
        with pytest.raises(Exception, match="not launched"):
            await check_upgrade(dbos, histories=[])


def build_fan(make_dbos: Callable[..., DBOS], generation: str) -> tuple[DBOS, Counter[str], Any]:
    dbos = make_dbos()
    ran: Counter[str] = Counter()

    @dbos.step(name="price")
    async def price(shop: str) -> int:
        ran["price"] += 1
        return len(shop)

    @dbos.workflow(name="child")
    async def child(x: int) -> int:
        ran["child"] += 1
        return x * 2

    @dbos.workflow(name="fan")
    async def fan(shops: list[str], nap: float) -> list[Any]:
        prices = await dbos.gather(*(price(shop) for shop in shops))
        doubled = await child(sum(prices))
        found: list[int] = []

        async def look(shop: str) -> None:
            found.append(await price(shop + "!"))

        async with dbos.open_nursery() as nursery:
            for shop in shops:
                nursery.start_soon(look, shop)
        if generation == "reordered":
            await dbos.sleep(nap)  # new-call: fan
            await dbos.set_event("napping", True)
        else:
            await dbos.set_event("napping", True)
            await dbos.sleep(nap)
        return [prices, doubled, sorted(found)]

    return dbos, ran, fan


async def test_fan_out_children_and_a_pending_sleep_replay_and_a_change_after_them_is_named(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    dbos, _, fan = build_fan(make_dbos, "v1")
    async with dbos.launched():
        with SetWorkflowID("fanned"):
            assert await fan(["ab", "cde"], 0.0) == [[2, 3], 10, [3, 4]]
        with SetWorkflowID("napping"):
            await dbos.start_workflow(fan, ["ab", "cde"], 86400.0)
        assert await dbos.get_event("napping", "napping", timeout_seconds=HANG_GUARD)
    same, ran, _ = build_fan(make_dbos, "v1")
    report = await check_upgrade(same, dbos_url, finished=10)
    results = report.by_id()
    assert results["fanned"].verdict == "compatible", report.summary()
    # Mid-sleep: the recorded day of sleep passes on virtual time, then the body returns.
    assert results["napping"].verdict == "compatible", report.summary()
    # Workflow bodies replay (the two children's own included); no step body runs.
    assert ran == Counter({"child": 2})
    assert set(results) == {"fanned", "napping", "fanned-3", "napping-3"}  # children too
    changed, ran, _ = build_fan(make_dbos, "reordered")
    report = await check_upgrade(changed, dbos_url, finished=10)
    napping = report.by_id()["napping"]
    assert napping.verdict == "diverged" and napping.fails
    assert napping.recorded is not None and napping.recorded.kind == "set_event"
    assert napping.new is not None and napping.new.kind == "sleep"
    assert napping.new.where == line_of("new-call: fan")
    assert ran["price"] == 0


async def test_a_cancelled_check_stops_after_the_replay_in_progress(
    make_dbos: Callable[..., DBOS], dbos_url: str
) -> None:
    started, proceed = threading.Event(), threading.Event()
    replays: list[str] = []

    def build_plain(blocking: bool) -> tuple[DBOS, Any]:
        dbos = make_dbos()

        @dbos.workflow(name="plain")
        async def plain(x: int) -> int:
            if blocking:  # the replay, in check's thread: hold it until the test cancels
                replays.append(str(x))
                started.set()
                proceed.wait(HANG_GUARD)
            return x

        return dbos, plain

    recorder, plain = build_plain(False)
    async with recorder.launched():
        for x in range(3):
            with SetWorkflowID(f"plain-{x}"):
                await plain(x)
    checker, _ = build_plain(True)
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(partial(check_upgrade, checker, dbos_url, finished=10))
            await trio.to_thread.run_sync(started.wait, HANG_GUARD)
            scope.cancel()
            proceed.set()
    assert scope.cancelled_caught
    assert len(replays) == 1  # the next replay never started
    assert not checker.is_launched
