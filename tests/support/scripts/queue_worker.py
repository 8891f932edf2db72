"""A second executor process: launch the shared test app and serve queues until killed.

Usage: ``queue_worker.py SPEC_JSON`` where the spec has ``url``, ``executor_id``, ``tag``,
and optionally ``queues`` (name -> ``register_queue`` options, limiters as
``[limit, period]``), ``listen_queues`` and ``app_version``. Prints ``READY`` once launched.
"""

from __future__ import annotations

import json
import sys

import trio

from support.queue_apps import build_app


async def main(spec_json: str) -> None:
    spec = json.loads(spec_json)
    app = build_app(
        spec["url"],
        executor_id=spec["executor_id"],
        tag=spec["tag"],
        queues=spec.get("queues"),
        listen_queues=spec.get("listen_queues"),
        app_version=spec.get("app_version", "v1"),
    )
    async with app.dbos.launched():
        print("READY", flush=True)
        await trio.sleep_forever()


if __name__ == "__main__":
    trio.run(main, sys.argv[1])
