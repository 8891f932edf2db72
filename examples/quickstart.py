"""Quickstart: a durable workflow of a few steps and a durable sleep.

Run it, press Ctrl-C while it sleeps, and run it again: the second run resumes the same
workflow after its last completed step instead of starting over.
"""

from __future__ import annotations

import os

import trio

from dbos_trio import DBOS, Config, SetWorkflowID

dbos = DBOS(
    Config(
        app_name="quickstart",
        database_url=os.environ.get(
            "DBOS_SYSTEM_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
    )
)


@dbos.step()
async def greet(step: int) -> str:
    print(f"  step {step} runs")
    return f"step {step} done"


@dbos.workflow()
async def onboarding(user: str) -> str:
    for step in range(1, 4):
        await greet(step)
    print("  sleeping 5 s (durably): press Ctrl-C now to see recovery on the next run")
    await trio.sleep(5)
    await greet(4)
    return f"welcome, {user}"


async def main() -> None:
    async with dbos.launched():
        with SetWorkflowID("quickstart-onboarding-alice"):
            print(await onboarding("alice"))


if __name__ == "__main__":
    trio.run(main)
