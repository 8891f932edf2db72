"""Quickstart: a durable workflow of a few steps and a durable sleep.

It needs no database server: with no URL configured, dbos_trio keeps its system database
in ``quickstart.sqlite`` in the working directory (set ``DBOS_SYSTEM_DATABASE_URL`` to a
``postgresql://`` URL to use PostgreSQL instead).

Run it, press Ctrl-C while it sleeps, and run it again: the second run recovers the same
workflow and resumes it after its last completed step, sleeping only what is left.
"""

from __future__ import annotations

import trio

from dbos_trio import DBOS, Config, SetWorkflowID

dbos = DBOS(Config(app_name="quickstart"))


@dbos.step()
async def greet(step: int) -> str:
    print(f"  step {step} runs")
    return f"step {step} done"


@dbos.workflow()
async def onboarding(user: str) -> str:
    for step in range(1, 4):
        await greet(step)
    print("  sleeping 5 s (durably): press Ctrl-C now, then run me again")
    await dbos.sleep(5)
    await greet(4)
    return f"welcome, {user}"


async def main() -> None:
    async with dbos.launched():
        # A fixed id makes every run the same workflow: a finished one just returns its
        # stored result, an interrupted one is recovered by the launch and finished.
        with SetWorkflowID("quickstart-onboarding-alice"):
            print(await onboarding("alice"))


if __name__ == "__main__":
    try:
        trio.run(main)
    except KeyboardInterrupt:
        print("\ninterrupted: run me again to see the workflow resume")
