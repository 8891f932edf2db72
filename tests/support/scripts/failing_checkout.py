"""A first-hour failure: ``failing_checkout.py URL``.

A queued ``checkout`` whose ``charge`` step raises the application's own
``PaymentDeclined`` (defined here, in ``__main__``: no other process can import it) three
times and so ends in ERROR. Prints ``failed: <error type>`` once the workflow has failed.
"""

import sys

import trio

from dbos_trio import DBOS, Config, SetWorkflowID


class PaymentDeclined(Exception):
    """The application's own error: not importable by any other process."""

dbos = DBOS(Config(app_name="shop", database_url=sys.argv[1]))

@dbos.step(retries_allowed=True, max_attempts=3, interval_seconds=0.01)
async def charge(order: str) -> None:
    raise PaymentDeclined(f"card declined for {order}")

@dbos.step()
async def reserve(order: str) -> str:
    return f"reserved {order}"

@dbos.workflow()
async def checkout(order: str) -> str:
    await reserve(order)
    await charge(order)
    return "paid"

async def main() -> None:
    q = dbos.register_queue("orders")
    async with dbos.launched():
        with SetWorkflowID("order-1"):
            h = await q.enqueue(checkout, "order-1")
        try:
            await h.get_result()
        except Exception as e:
            print("failed:", type(e).__name__)

if __name__ == "__main__":
    trio.run(main)
