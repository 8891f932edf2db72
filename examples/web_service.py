"""A Trio web service: each request enqueues a durable workflow; another serves its status.

    pip install 'dbos-trio' hypercorn
    python examples/web_service.py --port 8000
    curl -X POST 'localhost:8000/orders?item=book&seconds=5'   # {"workflow_id": "..."}
    curl localhost:8000/orders/<workflow_id>                  # {"status": "PENDING", ...}

hypercorn serves a plain ASGI application on Trio (its ``hypercorn.trio`` worker), in the
same Trio run as ``dbos.launched()``; no framework is needed for two routes, and any
Trio ASGI framework (quart-trio, ...) mounts the same way.

Graceful SIGTERM (and Ctrl-C): the server stops accepting connections and finishes the
requests in flight, then the launch shuts down. A workflow still running then stays
PENDING in the system database and is recovered by the next start of the service, which
resumes it after its last completed step — a deploy never loses an order.
"""

from __future__ import annotations

import argparse
import json
import signal
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any
from urllib.parse import parse_qs

import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve

from dbos_trio import DBOS, Config

dbos = DBOS(Config(app_name="web-service"))
orders = dbos.register_queue("orders", worker_concurrency=10)


@dbos.step()
async def reserve(item: str) -> str:
    return f"reserved {item}"


@dbos.step()
async def ship(item: str) -> str:
    return f"shipped {item}"


@dbos.workflow()
async def process_order(item: str, seconds: float) -> str:
    await reserve(item)
    await dbos.sleep(seconds)  # waiting for the warehouse, durably
    return await ship(item)


Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


async def respond(send: Send, status: int, body: Any) -> None:
    payload = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    """The ASGI application: POST /orders enqueues, GET /orders/<id> reports."""
    if scope["type"] == "lifespan":  # nothing to set up: the launch is around the server
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    method, path = scope["method"], scope["path"]
    query = {k: v[0] for k, v in parse_qs(scope["query_string"].decode()).items()}
    if method == "POST" and path == "/orders":
        if "item" not in query:
            await respond(send, 400, {"error": "pass ?item=..."})
            return
        handle = await orders.enqueue(process_order, query["item"], float(query.get("seconds", 0)))
        await respond(send, 202, {"workflow_id": handle.workflow_id})
    elif method == "GET" and path.startswith("/orders/"):
        status = await dbos.get_workflow_status(path.removeprefix("/orders/"))
        if status is None:
            await respond(send, 404, {"error": "no such order"})
            return
        await respond(
            send,
            200,
            {"workflow_id": status.workflow_id, "status": status.status, "output": status.output},
        )
    else:
        await respond(send, 404, {"error": f"no route for {method} {path}"})


async def main(port: int) -> None:
    config = HypercornConfig()
    config.bind = [f"127.0.0.1:{port}"]
    stop = trio.Event()

    async def on_signals() -> None:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                print(f"{signal.Signals(signum).name}: finishing requests, then stopping")
                stop.set()
                return

    async with dbos.launched(), trio.open_nursery() as nursery:
        nursery.start_soon(on_signals)
        # Started once it listens; it returns after stop is set and the requests finished.
        serving = partial(serve, app, config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]
        bound = await nursery.start(serving)
        print(f"serving on {', '.join(bound)}", flush=True)
    print("stopped; unfinished workflows resume at the next start", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1")
    trio.run(main, parser.parse_args().port)
