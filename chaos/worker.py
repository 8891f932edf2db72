"""One executor process of the soak: ``python -m chaos.worker URL EXECUTOR_ID``.

Serves the soak's queue until killed. A launch that fails because the database is down
(the soak restarts it at random) is tried again after a second, and logged as one line:
an executor process must never end with a traceback.
"""

from __future__ import annotations

import argparse
import logging
import sys

import trio

from dbos_trio import DBOSInitializationError

from .app import build

logger = logging.getLogger("chaos.worker")


async def serve(
    url: str,
    executor_id: str,
    concurrency: int,
    step_seconds: float,
    heartbeat_interval: float | None,
    adopt_after: float | None,
) -> None:
    dbos, side = build(
        url,
        executor_id,
        concurrency=concurrency,
        step_seconds=step_seconds,
        heartbeat_interval=heartbeat_interval,
        adopt_after=adopt_after,
    )
    try:
        while True:
            try:
                async with dbos.launched():
                    logger.info("executor %s launched", executor_id)
                    await trio.sleep_forever()
            except DBOSInitializationError as error:
                logger.info("launch failed, trying again in 1 s: %s", error)
                await trio.sleep(1.0)
    finally:
        with trio.CancelScope(shield=True):
            await side.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos.worker")
    parser.add_argument("url")
    parser.add_argument("executor_id")
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--step-seconds", type=float, default=0.1)
    parser.add_argument("--heartbeat", type=float, default=None)
    parser.add_argument("--adopt-after", type=float, default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s"
    )
    try:
        trio.run(
            serve,
            args.url,
            args.executor_id,
            args.concurrency,
            args.step_seconds,
            args.heartbeat,
            args.adopt_after,
        )
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
