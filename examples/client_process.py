"""A Client in a separate process: enqueue work that a DBOS application runs, and await it.

    export DBOS_SYSTEM_DATABASE_URL=sqlite:///client-demo.sqlite   # or postgresql://...
    python examples/client_process.py worker &            # the application: serves "emails"
    python examples/client_process.py enqueue ada grace   # another process: enqueues, waits

The client needs none of the application's code: it names the workflow and the queue as
registered (``EnqueueOptions``), writes ENQUEUED rows through the system database, and
awaits their results there. It never migrates: the application's launch does. The worker
stops on SIGTERM or Ctrl-C; whatever it had not finished runs at its next start.
"""

from __future__ import annotations

import argparse
import os
import signal

import trio

from dbos_trio import DBOS, Client, Config, EnqueueOptions

DEFAULT_URL = "sqlite:///client-demo.sqlite"
QUEUE = "emails"
WORKFLOW = "send_welcome"


def database_url() -> str:
    return os.environ.get("DBOS_SYSTEM_DATABASE_URL", DEFAULT_URL)


def application() -> DBOS:
    dbos = DBOS(Config(app_name="client-demo", database_url=database_url()))
    dbos.register_queue(QUEUE, worker_concurrency=4)

    @dbos.step()
    async def render(user: str) -> str:
        return f"Welcome aboard, {user}!"

    @dbos.workflow(name=WORKFLOW)
    async def send_welcome(user: str) -> str:
        body = await render(user)
        return f"sent to {user}: {body}"

    return dbos


async def worker() -> None:
    dbos = application()
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with dbos.launched():
            print(f"worker serving queue {QUEUE!r}", flush=True)
            async for _ in signals:
                break
    print("worker stopped", flush=True)


async def enqueue(users: list[str]) -> None:
    async with Client(database_url()) as client:
        handles = [
            await client.enqueue(EnqueueOptions(workflow_name=WORKFLOW, queue_name=QUEUE), user)
            for user in users
        ]
        for handle in handles:
            print(f"{handle.workflow_id}: {await handle.get_result()}", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    modes = parser.add_subparsers(dest="mode", required=True)
    modes.add_parser("worker", help="run the application (serves the queue)")
    client_mode = modes.add_parser("enqueue", help="enqueue one workflow per user and wait")
    client_mode.add_argument("users", nargs="+", help="whom to welcome")
    args = parser.parse_args()
    if args.mode == "worker":
        trio.run(worker)
    else:
        trio.run(enqueue, args.users)
