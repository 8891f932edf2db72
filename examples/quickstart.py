"""Quickstart: a durable workflow of a few steps and a durable sleep.

It needs no database server: with no URL configured, dbos_trio keeps its system database
in ``quickstart.sqlite`` in the working directory (set ``DBOS_SYSTEM_DATABASE_URL`` to a
``postgresql://`` URL to use PostgreSQL instead).

Run it, press Ctrl-C while it sleeps, and run it again: the second run finds the
workflow you interrupted, says so, and resumes it after its last completed step,
sleeping only what is left. A run that finds the previous workflow finished starts a
fresh one, so the demo can be repeated as often as you like; ``--fresh`` discards an
interrupted one instead of resuming it.
"""

from __future__ import annotations

import argparse
import sys
import time

import trio

from dbos_trio import (
    DBOS,
    Client,
    Config,
    DBOSException,
    SetWorkflowID,
    SystemDatabaseUnreachable,
    configure_logging,
)

WORKFLOW_ID = "quickstart-onboarding-alice"
# Long enough to press Ctrl-C and run it again before it is over: the second run then
# visibly sleeps only what is left.
DEFAULT_NAP = 30.0

dbos = DBOS(Config(app_name="quickstart"))


@dbos.step()
async def greet(step: int) -> str:
    print(f"  step {step} runs", flush=True)
    return f"step {step} done"


@dbos.step()
async def wake_time(seconds: float) -> float:
    # A step, so the deadline is recorded once: a resumed run reads the same one back.
    return time.time() + seconds


@dbos.workflow()
async def onboarding(user: str, nap: float) -> str:
    for step in range(1, 4):
        await greet(step)
    wake = await wake_time(nap)
    left = max(0.0, wake - time.time())
    if nap - left >= 0.1:  # resumed: the wake-up time is the first run's
        print(f"  {nap - left:.1f} s of its {nap:g} s sleep already passed", flush=True)
    print(f"  sleeping {left:.1f} s (durably): press Ctrl-C now, then run me again", flush=True)
    # Always the same call: a resumed sleep keeps the wake-up time its checkpoint recorded
    # (the argument counts only the first time), so it sleeps just what is left.
    await dbos.sleep(nap)
    await greet(4)
    return f"welcome, {user}"


async def previous_run(fresh: bool) -> None:
    """Say what an earlier run left behind; clear it unless it is to be resumed."""
    url = dbos.config.resolved_database_url()
    if url.startswith("sqlite:") and not await trio.Path(url.split("///", 1)[1]).exists():
        # Said only if the launch can create the file there; else it says what is wrong.
        if await trio.Path(url.split("///", 1)[1]).parent.is_dir():
            print("first run: starting a fresh workflow", flush=True)
        return
    try:
        async with Client(url) as client:
            status = await client.get_workflow_status(WORKFLOW_ID)
            if status is None:
                print("starting a fresh workflow", flush=True)
                return
            if status.status == "PENDING" and not fresh:
                steps = await client.list_workflow_steps(WORKFLOW_ID)
                greeted = sum(1 for step in steps if step.function_name.endswith("greet"))
                print(
                    f"found the workflow you interrupted (steps 1-{greeted} done): resuming it "
                    "after its last completed step (--fresh would start over)",
                    flush=True,
                )
                return
            why = "discarding the interrupted one" if fresh else f"the last one is {status.status}"
            print(f"starting a fresh workflow ({why})", flush=True)
            await client.delete_workflow(WORKFLOW_ID)
    except SystemDatabaseUnreachable:
        raise  # no database there (or no server): the launch would fail the same way
    except DBOSException:
        # A database this version cannot read yet: launch migrates it and runs anew.
        print("starting a fresh workflow", flush=True)


async def main(fresh: bool, nap: float) -> None:
    configure_logging()  # dbos_trio's INFO lines on stderr: where it launched, and as what
    await previous_run(fresh)
    async with dbos.launched():
        # A fixed id makes every run the same workflow: an interrupted one is recovered
        # by the launch, and this call waits for it instead of starting another.
        with SetWorkflowID(WORKFLOW_ID):
            print(await onboarding("alice", nap), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--fresh", action="store_true", help="discard an interrupted workflow, start anew"
    )
    parser.add_argument(
        "--sleep",
        type=float,
        default=DEFAULT_NAP,
        help=f"seconds of durable sleep (default: {DEFAULT_NAP:g})",
    )
    args = parser.parse_args()
    try:
        trio.run(main, args.fresh, args.sleep)
    except KeyboardInterrupt:
        print("\ninterrupted: run me again to see the workflow resume")
    except SystemDatabaseUnreachable as error:
        sys.exit(f"quickstart: {error}")  # what is wrong and what to do, without a traceback
