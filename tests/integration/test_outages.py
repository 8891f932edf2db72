"""A live executor finishes its work through a real database outage and a failover.

Each test runs its own throwaway PostgreSQL (``chaos.cluster``: initdb on a free port,
127.0.0.1 only — never the shared server), stops it for seconds while workflows are in
the middle of their steps, and starts it again (or promotes a standby): the workflows
finish in the same process, each step body having run once, and the outage is reported
once, not once per retry. Real servers and real time: these are slow by nature.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import trio

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from chaos.cluster import Cluster, available  # noqa: E402
from dbos_trio import DBOS, Config, SetWorkflowID  # noqa: E402

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(available() is not None, reason=f"no throwaway clusters: {available()}"),
]

LOST_AND_BACK = ("unreachable, retrying until it is back", "is back after")


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with Cluster.create() as made:
        yield made


def in_thread(action: Any, *args: Any) -> Any:
    """Run a blocking server command without blocking the executor's event loop."""
    return trio.to_thread.run_sync(action, *args)


def outage_lines(caplog: pytest.LogCaptureFixture) -> tuple[int, int]:
    warnings = sum(LOST_AND_BACK[0] in r.getMessage() for r in caplog.records)
    infos = sum(LOST_AND_BACK[1] in r.getMessage() for r in caplog.records)
    return warnings, infos


@pytest.mark.parametrize("mode", ["fast", "immediate"])
async def test_a_workflow_mid_step_finishes_after_a_five_second_outage_in_the_same_process(
    cluster: Cluster, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="dbos_trio")
    dbos = DBOS(Config(app_name="outage", database_url=cluster.url(), app_version="v1"))
    runs: list[str] = []
    step_started = trio.Event()

    @dbos.step()
    async def slow(name: str) -> str:
        runs.append(name)
        step_started.set()
        await trio.sleep(3.0)  # the server goes down meanwhile
        return name.upper()

    @dbos.step()
    async def after(name: str) -> str:
        runs.append(name)
        return name

    @dbos.workflow()
    async def flow() -> str:
        first = await slow("one")
        return first + await after("two")

    async with dbos.launched():
        with SetWorkflowID("through-outage"):
            handle = await dbos.start_workflow(flow)
        await step_started.wait()
        await in_thread(lambda: cluster.restart(mode, down_for=5.0))  # type: ignore[arg-type]
        with trio.fail_after(60):
            assert await handle.get_result() == "ONEtwo"
        assert (await handle.get_status()).status == "SUCCESS"
    assert runs == ["one", "two"]  # neither step body ran twice
    warnings, infos = outage_lines(caplog)
    assert warnings >= 1 and infos >= 1
    assert warnings <= 2, "the outage is reported once (a second report: a stale connection)"


async def test_a_receiver_gets_the_message_of_a_sender_that_lived_through_an_outage(
    cluster: Cluster,
) -> None:
    dbos = DBOS(Config(app_name="outage", database_url=cluster.url(), app_version="v1"))
    sender_started = trio.Event()

    @dbos.workflow()
    async def receiver() -> Any:
        return await dbos.recv("t", timeout_seconds=60)

    @dbos.step()
    async def prepare() -> str:
        sender_started.set()
        await trio.sleep(2.0)
        return "the message"

    @dbos.workflow()
    async def sender(destination: str) -> None:
        await dbos.send(destination, await prepare(), "t")

    async with dbos.launched():
        with SetWorkflowID("receiver-1"):
            received = await dbos.start_workflow(receiver)
        with SetWorkflowID("sender-1"):
            sent = await dbos.start_workflow(sender, "receiver-1")
        await sender_started.wait()
        await in_thread(lambda: cluster.restart("immediate", down_for=4.0))
        with trio.fail_after(60):
            await sent.get_result()
            assert await received.get_result() == "the message"


async def test_executors_follow_a_failover_to_the_promoted_standby(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="dbos_trio")
    # Synchronous replication: a checkpoint committed on the primary is on the standby too,
    # so failing over loses none and no step body runs again.
    sync = {"synchronous_standby_names": "'*'"}
    with Cluster.create(settings=sync) as primary, primary.standby() as standby:
        url = (
            f"postgresql://postgres@127.0.0.1:{primary.port},127.0.0.1:{standby.port}"
            "/postgres?target_session_attrs=read-write&connect_timeout=3"
        )
        dbos = DBOS(Config(app_name="failover", database_url=url, app_version="v1"))
        runs: list[int] = []
        first_done = trio.Event()

        @dbos.step()
        async def step(i: int) -> int:
            runs.append(i)
            if i == 1:
                first_done.set()
                await trio.sleep(2.0)
            return i

        @dbos.workflow()
        async def flow() -> int:
            return sum([await step(i) for i in range(1, 5)])

        async with dbos.launched():
            with SetWorkflowID("failover-1"):
                handle = await dbos.start_workflow(flow)
            await first_done.wait()
            await in_thread(lambda: primary.stop("immediate"))
            await in_thread(standby.promote)
            with trio.fail_after(60):
                assert await handle.get_result() == 10
        assert runs == [1, 2, 3, 4]
        with psycopg.connect(standby.url(), autocommit=True) as conn:
            status = conn.execute(
                "SELECT status FROM dbos.workflow_status WHERE workflow_uuid = 'failover-1'"
            ).fetchone()
        assert status == ("SUCCESS",)
