"""Serving the dashboard: hypercorn's Trio worker running :class:`~.app.DashboardApp`.

Why this stack: hypercorn is the maintained ASGI server with a native Trio worker (uvicorn
is asyncio-only), so the dashboard runs as one more task of a Trio nursery — the
executor's, or the CLI's — with no second event loop or thread. The application on top
is this package's own small ASGI callable rather than a framework: it needs six GET
pages, one POST and a static file, and a framework would add a dependency tree (anyio
for Starlette, Quart + Werkzeug + Jinja for quart-trio) for routing we do not need.

Invariant: :func:`check_settings` runs before anything binds — a non-loopback host
without a token is refused, as is a bad port — and the server binds exactly the host
given (127.0.0.1 by default).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import attrs
import trio

from dbos_trio._core.ending import collapse
from dbos_trio._engine.state import Runtime
from dbos_trio.dashboard._app import DashboardApp
from dbos_trio.dashboard._security import Guard, is_loopback
from dbos_trio.dashboard._source import Source
from dbos_trio.errors import DBOSConfigError

logger = logging.getLogger("dbos_trio.dashboard")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8383


@attrs.frozen(kw_only=True)
class DashboardSettings:
    """How to serve the dashboard (see :func:`check_settings` for the rules)."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    token: str | None = None
    read_only: bool = False
    allow_pickle: bool = False
    metrics: Callable[[], str] | None = None


def check_settings(settings: DashboardSettings) -> None:
    """Raise :class:`DBOSConfigError` naming the problem, before anything binds."""
    if not isinstance(settings.host, str) or not settings.host.strip():
        raise DBOSConfigError(f"dashboard host: {settings.host!r} must be a host name or address")
    port = settings.port
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise DBOSConfigError(f"dashboard port: {port!r} must be a whole number 0..65535")
    if settings.token is not None and (
        not isinstance(settings.token, str) or len(settings.token) < 16
    ):
        raise DBOSConfigError("dashboard token: must be a string of at least 16 characters")
    if not is_loopback(settings.host) and settings.token is None:
        raise DBOSConfigError(
            f"dashboard host {settings.host!r} is not a loopback address: anyone who can reach "
            "it could cancel or delete workflows, so a token is required (--token)"
        )
    if settings.metrics is not None and not callable(settings.metrics):
        raise DBOSConfigError("dashboard metrics: must be a callable returning text")


def _hypercorn() -> Any:
    try:
        import hypercorn.config
        import hypercorn.trio
    except ImportError:
        raise DBOSConfigError(
            "the dashboard needs hypercorn: pip install 'dbos-trio[dashboard]'"
        ) from None
    return hypercorn


def make_app(runtime: Runtime, settings: DashboardSettings) -> DashboardApp:
    return DashboardApp(
        Source(runtime, allow_pickle=settings.allow_pickle),
        Guard(token=settings.token, read_only=settings.read_only),
        metrics=settings.metrics,
    )


async def serve(
    runtime: Runtime,
    settings: DashboardSettings,
    *,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until cancelled; reports started with the URL it listens on.

    Raises :class:`DBOSConfigError` for bad settings and ``OSError`` if it cannot bind,
    before reporting started. Cancellation closes the listener and ends every request
    in flight (a page half-sent is cut off; an action already sent to the database has
    happened or not, as the engine's call left it).
    """
    check_settings(settings)
    hypercorn = _hypercorn()
    config = hypercorn.config.Config()
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    config.bind = [f"{host}:{settings.port}"]
    config.accesslog = None
    config.errorlog = logger
    config.graceful_timeout = 1.0
    app = make_app(runtime, settings)

    try:
        async with trio.open_nursery() as nursery:
            binds: list[str] = await nursery.start(hypercorn.trio.serve, app, config)
            logger.info("dashboard listening on %s", binds[0])
            task_status.started(binds[0])
    except BaseExceptionGroup as group:
        # A bind failure surfaces through hypercorn's nurseries: raise the OSError itself.
        collapsed = collapse(group)
        if collapsed is group:
            raise
        raise collapsed from None
