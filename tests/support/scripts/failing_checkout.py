"""A first-hour failure, then its fix: ``failing_checkout.py URL [--fixed ID]``.

A queued ``checkout`` whose ``charge`` step raises the application's own
``PaymentDeclined`` (defined here, in ``__main__``: no other process can import it) three
times and so ends in ERROR: prints ``failed: <error type>`` once it has failed.

With ``--fixed ID`` the same application runs with the bug fixed (the card is accepted;
the workflows and their source are unchanged, so the application version is too): it
serves until workflow ``ID`` (a retry of the failed one) has finished, prints
``result: <its result>``, and prints ``reserve ran`` whenever the ``reserve`` step's body
runs (a retry from the failed step must not run it again).
"""

import sys

import trio

from dbos_trio import DBOS, Config, SetWorkflowID

FIXED = "--fixed" in sys.argv


class PaymentDeclined(Exception):
    """The application's own error: not importable by any other process."""


dbos = DBOS(Config(app_name="shop", database_url=sys.argv[1], app_version="shop-1"))


@dbos.step(retries_allowed=True, max_attempts=3, interval_seconds=0.01)
async def charge(order: str) -> None:
    if not FIXED:
        raise PaymentDeclined(f"card declined for {order}")


@dbos.step()
async def reserve(order: str) -> str:
    print("reserve ran", flush=True)
    return f"reserved {order}"


@dbos.workflow()
async def checkout(order: str) -> str:
    await reserve(order)
    await charge(order)
    return "paid"


async def main() -> None:
    queue = dbos.register_queue("orders")
    async with dbos.launched():
        if FIXED:
            retried = sys.argv[sys.argv.index("--fixed") + 1]
            result = await (await dbos.retrieve_workflow(retried)).get_result()
            print("result:", result, flush=True)
            return
        with SetWorkflowID("order-1"):
            handle = await queue.enqueue(checkout, "order-1")
        try:
            await handle.get_result()
        except Exception as error:
            print("failed:", type(error).__name__, flush=True)


if __name__ == "__main__":
    trio.run(main)
