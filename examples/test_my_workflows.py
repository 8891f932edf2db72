"""Testing your own workflows with dbos_trio.testing: virtual time and crash injection.

Enable the fixtures once, in your top-level ``conftest.py``::

    pytest_plugins = ["dbos_trio.testing.pytest_plugin"]

(with pytest-trio's ``trio_mode = true``), or run ``pytest -p
dbos_trio.testing.pytest_plugin``. Every test gets a fresh SQLite system database.
Override ``dbos_app`` to build your application on the ``dbos_config`` it is given;
``launched_dbos`` is that application, launched. Ask for pytest-trio's ``autojump_clock``
too and the test runs on virtual time: days of durable sleep pass in milliseconds.
"""

from __future__ import annotations

from collections import Counter

import pytest
import trio

from dbos_trio import DBOS, Config, SetWorkflowID
from dbos_trio.testing import CrashRecovery, crash_at_every_checkpoint

DAY = 86_400.0

# --- the application under test (in your project: imported from your package) ----------

charges: Counter[str] = Counter()  # a side effect in the outside world, counted


class Shop:
    """The application: a DBOS for ``config`` with its workflows registered."""

    def __init__(self, config: Config) -> None:
        dbos = self.dbos = DBOS(config)

        @dbos.step()
        async def charge(order: str) -> str:
            charges[order] += 1
            return f"charged {order}"

        @dbos.workflow()
        async def checkout(order: str) -> str:
            receipt = await charge(order)
            await dbos.set_event("receipt", receipt)
            return receipt

        @dbos.workflow()
        async def remind(user: str) -> str:
            await dbos.sleep(3 * DAY)
            return f"reminded {user}"

        @dbos.workflow()
        async def approval() -> str:
            decision = await dbos.recv("decision", timeout_seconds=DAY)
            return "expired" if decision is None else str(decision)

        self.checkout, self.remind, self.approval = checkout, remind, approval


@pytest.fixture
def shop(dbos_config: Config) -> Shop:
    return Shop(dbos_config)


@pytest.fixture
def dbos_app(shop: Shop) -> DBOS:
    """The plugin launches this one as ``launched_dbos``."""
    return shop.dbos


# --- the tests --------------------------------------------------------------------------


async def test_a_reminder_three_days_later_in_virtual_time(
    shop: Shop, launched_dbos: DBOS, autojump_clock: trio.testing.MockClock
) -> None:
    began = trio.current_time()
    handle = await launched_dbos.start_workflow(shop.remind, "ada")
    assert await handle.get_result() == "reminded ada"
    assert trio.current_time() - began >= 3 * DAY  # virtual seconds


async def test_an_approval_expires_after_a_day_unless_someone_decides(
    shop: Shop, launched_dbos: DBOS, autojump_clock: trio.testing.MockClock
) -> None:
    waiting = await launched_dbos.start_workflow(shop.approval)
    assert await waiting.get_result() == "expired"
    decided = await launched_dbos.start_workflow(shop.approval)
    await trio.sleep(3600)  # an hour later someone approves
    await launched_dbos.send(decided.workflow_id, "approved", "decision")
    assert await decided.get_result() == "approved"


async def test_a_crash_at_any_checkpoint_charges_the_order_once() -> None:
    shops: list[Shop] = []

    def build(config: Config) -> DBOS:
        charges.clear()  # one fresh world per scenario
        shops.append(Shop(config))
        return shops[-1].dbos

    async def start(dbos: DBOS) -> None:
        await dbos.start_workflow(shops[-1].checkout, "order-7")

    def check(report: CrashRecovery) -> None:
        assert report.status == "SUCCESS", report.crashed_at
        assert report.result == "charged order-7"
        # The step's checkpoint committed before the crash: recovery must not charge again.
        if any(c.kind == "step" for c in report.committed):
            assert charges["order-7"] == 1, report.crashed_at

    reports = await crash_at_every_checkpoint(build, start, check)
    assert len(reports) >= 3  # the start, the step, set_event, the outcome


async def test_a_workflow_id_makes_a_second_call_return_the_first_result(
    shop: Shop, launched_dbos: DBOS
) -> None:
    charges.clear()
    for _ in range(2):
        with SetWorkflowID("order-8"):
            assert await shop.checkout("order-8") == "charged order-8"
    assert charges["order-8"] == 1
