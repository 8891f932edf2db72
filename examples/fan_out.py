"""Fan-out/fan-in inside one workflow, with the durable concurrency API.

    python examples/fan_out.py

``dbos.gather`` runs step calls concurrently and returns their results in order;
``dbos.open_nursery()`` is a Trio nursery for tasks that make durable calls. Both give
every task's steps the same ids on every execution (a turn order among the tasks, not
Trio's scheduling), so a recovered, forked or resumed workflow replays each task's own
checkpoints. A plain ``trio.open_nursery()`` around steps would not: which task reaches
the database first decides the ids, and a replay could hand one task another's result.
"""

from __future__ import annotations

import trio

from dbos_trio import DBOS, Config, SetWorkflowID

dbos = DBOS(Config(app_name="fan-out"))


@dbos.step()
async def fetch_price(shop: str, item: str) -> float:
    await trio.sleep(0.01 * len(shop))  # shops answer at different speeds
    return 10.0 + len(shop) + len(item) / 10


@dbos.step()
async def fetch_stock(shop: str, item: str) -> int:
    return len(shop) * 3


@dbos.workflow()
async def best_offer(item: str, shops: list[str]) -> dict[str, object]:
    # Fan out with gather: one step per shop, results in the shops' order.
    prices = await dbos.gather(*(fetch_price(shop, item) for shop in shops))
    # Fan out with a durable nursery: tasks that each make several durable calls.
    stock: dict[str, int] = {}

    async def check(shop: str) -> None:
        stock[shop] = await fetch_stock(shop, item)

    async with dbos.open_nursery() as nursery:
        for shop in shops:
            nursery.start_soon(check, shop)
    # Fan in.
    in_stock = [(p, s) for p, s in zip(prices, shops, strict=True) if stock[s] > 0]
    price, shop = min(in_stock)
    return {"item": item, "shop": shop, "price": price, "stock": stock[shop]}


async def main() -> None:
    async with dbos.launched():
        with SetWorkflowID("best-offer-kettle"):
            offer = await best_offer("kettle", ["north", "south-east", "west"])
        steps = await dbos.list_workflow_steps("best-offer-kettle")
    print(f"best offer: {offer}")
    print(f"{len(steps)} checkpointed steps: {[s.function_name for s in steps]}")


if __name__ == "__main__":
    trio.run(main)
