"""The dashboard in a real headless browser: Debian's ``chromium`` driven by Selenium
through ``chromium-driver`` (installed by .ci/run; skipped, saying why, without them).

The list shows the workflows this test created, the workflow page shows their steps, and
cancel, resume, fork and delete — clicked, then confirmed — act on the database. A screenshot of
each page is taken; with ``DBOS_TRIO_SCREENSHOTS=docs/screenshots`` they replace the README's
(committed) ones, otherwise they go to the test's temporary directory, so a test run leaves
the checkout as it found it.

Selenium is blocking: its calls run in a worker thread (``trio.to_thread``) while the
executor and the dashboard keep serving on the Trio loop of the test.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import pytest
import trio

from dbos_trio import (
    DBOS,
    Client,
    Config,
    DBOSMaxStepRetriesExceeded,
    EnqueueOptions,
    SetWorkflowID,
)
from dbos_trio.testing import sqlite_url

from support.backends import execute, query
from support.dashboard_support import HOSTILE_ID, SCRIPT, demo_app

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver") or shutil.which("chromium-driver")

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="needs Debian's chromium and chromium-driver (apt-get install chromium "
    "chromium-driver; .ci/run installs them)",
)


def _driver() -> Any:
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM or ""
    for argument in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1360,1000",
        "--force-device-scale-factor=1",
    ):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    return await trio.to_thread.run_sync(fn, *args)


async def until(predicate: Callable[[], Any], what: str) -> Any:
    """Poll ``predicate`` (in the worker thread) until it is truthy; a hang guard only.

    The live refresh replaces the page's table under the reader, so an element found in one
    call may be gone by the next: a stale element means "look again", like a falsy value.
    So does a missing one: after a form is submitted the browser is between two documents
    for a moment, and the one it shows then has no ``main`` yet (a loaded CI run caught a
    lookup landing there).
    """
    from selenium.common.exceptions import (
        NoSuchElementException,
        StaleElementReferenceException,
    )

    with trio.fail_after(30):
        while True:
            try:
                value = await in_thread(predicate)
            except (StaleElementReferenceException, NoSuchElementException):
                value = None
            if value:
                return value
            await trio.sleep(0.05)


async def status_of(dbos: DBOS, workflow_id: str) -> str | None:
    status = await dbos.get_workflow_status(workflow_id)
    return None if status is None else status.status


@pytest.mark.slow
async def test_the_dashboard_in_a_real_browser(tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    dbos, fns = demo_app(sqlite_url(tmp_path / "browser.sqlite"), app_name="shop")
    async with dbos.launched():
        with SetWorkflowID(HOSTILE_ID):
            await (await dbos.start_workflow(fns["order"], 5, SCRIPT)).get_result()
        for n in range(3):
            with SetWorkflowID(f"order-{n}"):
                await (await dbos.start_workflow(fns["order"], 10 * n, f"memo {n}")).get_result()
        with SetWorkflowID("declined-7"):
            declined = await dbos.start_workflow(fns["declined"], "A-7")
        with contextlib.suppress(ValueError):
            await declined.get_result()
        with SetWorkflowID("waiting-for-approval"):
            waiting = await dbos.start_workflow(fns["waiter"])
        for n in range(2):
            with SetWorkflowID(f"payment-{n}"):
                await fns["payments"].enqueue(fns["waiter"])
        await dbos.create_schedule(
            schedule_name="nightly", workflow=fns["nightly"], schedule="0 3 * * *"
        )
        base = await dbos.serve_dashboard(port=0)
        driver = await in_thread(_driver)
        wanted = os.environ.get("DBOS_TRIO_SCREENSHOTS")
        screenshots = ROOT / wanted if wanted else tmp_path
        screenshots.mkdir(parents=True, exist_ok=True)
        try:

            async def open_page(path: str) -> None:
                await in_thread(driver.get, base + path)

            async def shot(name: str) -> None:
                saved = await in_thread(driver.save_screenshot, str(screenshots / f"{name}.png"))
                assert saved, f"the screenshot of {name} was not written"

            # The list shows this test's workflows; the hostile one as text.
            await open_page("/workflows")
            ids = await until(
                lambda: [e.text for e in driver.find_elements(By.CSS_SELECTOR, "a.wfid")],
                "the workflow list",
            )
            assert {HOSTILE_ID, "order-0", "order-2", "waiting-for-approval"} <= set(ids)
            # The failed one says why in the list (read from the pickle, not unpickled).
            rows_text = await in_thread(lambda: driver.find_element(By.ID, "workflow-rows").text)
            assert "ValueError: card declined for A-7" in rows_text
            assert await in_thread(lambda: driver.execute_script("return window.__xss || 0")) == 0
            assert not await in_thread(lambda: driver.find_elements(By.XPATH, "//main//script"))
            await shot("workflows")

            # Live refresh: a workflow started now appears without reloading the page.
            await in_thread(lambda: driver.find_element(By.ID, "live").click())
            with SetWorkflowID("arrived-while-watching"):
                await (await dbos.start_workflow(fns["child"], 1)).get_result()
            await until(
                lambda: (
                    "arrived-while-watching" in driver.find_element(By.ID, "workflow-rows").text
                ),
                "the live refresh",
            )

            # The workflow page shows the steps.
            await open_page("/workflow?id=order-1")
            steps = await until(
                lambda: [
                    row.find_elements(By.TAG_NAME, "td")[1].text
                    for row in driver.find_elements(By.CSS_SELECTOR, "tr.step")
                ],
                "the steps",
            )
            assert steps[:2] == ["charge", "fails-then-not"] and "DBOS.setEvent" in steps
            await in_thread(driver.set_window_size, 1360, 2000)
            await shot("workflow")
            await in_thread(driver.set_window_size, 1360, 1000)

            # Cancel, confirmed: the row becomes CANCELLED.
            wid = waiting.workflow_id
            await open_page("/workflow?id=" + quote(wid, safe=""))
            await in_thread(lambda: driver.find_element(By.ID, "action-cancel").click())
            await shot("confirm")
            await in_thread(lambda: driver.find_element(By.ID, "confirm").click())
            await until(lambda: "Cancelled." in driver.find_element(By.TAG_NAME, "main").text, "")
            assert await status_of(dbos, wid) == "CANCELLED"

            # Resume, confirmed: enqueued again, and it finishes once sent its message.
            await in_thread(lambda: driver.find_element(By.ID, "action-resume").click())
            await in_thread(lambda: driver.find_element(By.ID, "confirm").click())
            await until(lambda: "Resumed" in driver.find_element(By.TAG_NAME, "main").text, "")
            assert await status_of(dbos, wid) in ("ENQUEUED", "PENDING")
            await dbos.send(wid, "approved", "go")
            with trio.fail_after(30):
                assert await (await dbos.retrieve_workflow(wid)).get_result() == "approved"

            # Fork from step 3: a new workflow that replays steps 1-2 and re-runs the rest.
            await open_page("/workflow?id=order-2")
            await in_thread(lambda: driver.find_element(By.ID, "action-fork").click())
            await in_thread(
                lambda: driver.find_element(By.CSS_SELECTOR, "#fork-step option[value='3']").click()
            )
            await in_thread(lambda: driver.find_element(By.ID, "confirm").click())
            await until(
                lambda: "Forked: this is the new workflow" in driver.page_source, "the fork"
            )
            forked_id = await in_thread(
                lambda: driver.find_element(By.TAG_NAME, "h1").text.removeprefix("Workflow ")
            )
            forked = await dbos.get_workflow_status(forked_id)
            assert forked is not None and forked.forked_from == "order-2"
            with trio.fail_after(30):
                assert await (await dbos.retrieve_workflow(forked_id)).get_result() == "done memo 2"

            # Delete, confirmed with its children: the rows are gone.
            await open_page("/workflow?id=order-0")
            await in_thread(lambda: driver.find_element(By.ID, "action-delete").click())
            await in_thread(lambda: driver.find_element(By.NAME, "delete_children").click())
            await in_thread(lambda: driver.find_element(By.ID, "confirm").click())
            await until(lambda: "Deleted." in driver.find_element(By.TAG_NAME, "main").text, "")
            assert await status_of(dbos, "order-0") is None
            assert await status_of(dbos, "order-0-6") is None

            for name in ("queues", "schedules", "executors"):
                await open_page(f"/{name}")
                await until(lambda: driver.find_elements(By.TAG_NAME, "table"), name)
                await shot(name)
            queues = await in_thread(lambda: driver.find_element(By.TAG_NAME, "main").text)
            assert "nightly" not in queues
        finally:
            await in_thread(driver.quit)
        for n in range(2):
            await dbos.cancel_workflow(f"payment-{n}")


class PaymentDeclined(Exception):
    """The application's own exception class (importable from no other process)."""


def shop_app(url: str) -> tuple[DBOS, dict[str, Any]]:
    dbos = DBOS(Config(app_name="shop", database_url=url, app_version="v1"))

    @dbos.step(name="charge_card", retries_allowed=True, max_attempts=3, interval_seconds=0.01)
    async def charge_card(order: str) -> None:
        raise PaymentDeclined(f"card ending 4242 declined for {order}")

    @dbos.workflow(name="checkout")
    async def checkout(order: str, fail: bool) -> str:
        if fail:
            await charge_card(order)
        return f"shipped {order}"

    @dbos.workflow(name="refund")
    async def refund(order: str) -> str:
        return f"refunded {order}"

    return dbos, {"checkout": checkout, "refund": refund}


async def spread_over_the_last_hour(url: str, now_ms: int, keep: str) -> None:
    """The rows just run (but ``keep``), given finishing times over the last hour and
    latencies of tens to hundreds of milliseconds, as an hour of traffic would have left
    them."""
    rows = await query(url, "SELECT workflow_uuid FROM {t}workflow_status ORDER BY workflow_uuid")
    for n, (workflow_id,) in enumerate(rows):
        if workflow_id == keep:
            continue
        completed = now_ms - (n * 389_017) % 3_300_000 - 60_000
        latency = 40 + (n * 37) % 400 + (2000 if n % 17 == 0 else 0)
        await execute(
            url,
            "UPDATE {t}workflow_status SET created_at = %s, completed_at = %s "
            "WHERE workflow_uuid = %s AND completed_at IS NOT NULL",
            completed - latency,
            completed,
            workflow_id,
        )


@pytest.mark.slow
async def test_the_overview_charts_and_a_failure_in_a_real_browser(tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    url = sqlite_url(tmp_path / "overview.sqlite")
    dbos, fns = shop_app(url)
    async with dbos.launched():
        for n in range(60):
            with SetWorkflowID(f"order-{1000 + n}"):
                handle = await dbos.start_workflow(fns["checkout"], f"A{n}", n % 9 == 4)
            with contextlib.suppress(DBOSMaxStepRetriesExceeded):
                await handle.get_result()
        for n in range(25):
            await (await dbos.start_workflow(fns["refund"], f"R{n}")).get_result()
        now = dbos._require_executor("test").clock.now_ms()
        await spread_over_the_last_hour(url, now, keep="order-1004")
        # Work on a queue no executor serves, waiting for five minutes.
        async with Client(url, use_listen_notify=False) as other:
            for n in range(4):
                await other.enqueue(EnqueueOptions(workflow_name="export", queue_name="exports"), n)
        await execute(
            url,
            "UPDATE {t}workflow_status SET created_at = created_at - 300000 WHERE queue_name = %s",
            "exports",
        )
        base = await dbos.serve_dashboard(port=0)
        driver = await in_thread(_driver)
        wanted = os.environ.get("DBOS_TRIO_SCREENSHOTS")
        screenshots = ROOT / wanted if wanted else tmp_path
        screenshots.mkdir(parents=True, exist_ok=True)
        try:
            await in_thread(driver.get, base + "/")
            chart = await until(
                lambda: driver.find_element(By.ID, "throughput-chart"), "the throughput chart"
            )
            # Drawn by the browser (no script builds it): it has a size, bars and labels.
            size = await in_thread(lambda: chart.size)
            assert size["width"] > 300 and size["height"] > 80
            bars = await in_thread(
                lambda: driver.find_elements(By.CSS_SELECTOR, "#throughput-chart rect.bar-failed")
            )
            assert bars and await in_thread(lambda: bars[0].size["height"]) > 0
            text = await in_thread(lambda: chart.text)
            assert "succeeded" in text and "failed" in text and "time (UTC)" in text
            assert await in_thread(lambda: driver.find_element(By.ID, "latency-chart").size)
            main = await in_thread(lambda: driver.find_element(By.TAG_NAME, "main").text)
            assert "Queue with no live worker" in main and "exports" in main
            assert re.search(r"4 ENQUEUED, the oldest waiting [56] min", main)
            await in_thread(driver.set_window_size, 1360, 1900)
            saved = await in_thread(driver.save_screenshot, str(screenshots / "overview.png"))
            assert saved

            # The failed workflow: the application's own error, its attempts, the traceback.
            await in_thread(driver.get, base + "/workflow?id=order-1004")
            main = await until(
                lambda: driver.find_element(By.TAG_NAME, "main").text, "the workflow page"
            )
            assert "PaymentDeclined: card ending 4242 declined for A4" in main
            assert "attempts:" in main and "3." in main and "traceback:" in main
            saved = await in_thread(driver.save_screenshot, str(screenshots / "failure.png"))
            assert saved
        finally:
            await in_thread(driver.quit)
