"""``DBOS.serve_dashboard``: the dashboard as an opt-in task of the executor's nursery.

It lives exactly as long as the launch: shutting the executor down cancels it with every
other task. It reads through the executor's own system-database connection, but decodes
payloads by its own ``allow_pickle`` (default False), not the executor's.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from dbos_trio._dbos.base import DBOSBase
from dbos_trio.dashboard import DEFAULT_HOST, DEFAULT_PORT, DashboardSettings, check_settings, serve


class Dashboard(DBOSBase):
    async def serve_dashboard(
        self,
        *,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        token: str | None = None,
        read_only: bool = False,
        allow_pickle: bool = False,
        metrics: Callable[[], str] | None = None,
    ) -> str:
        """Start the dashboard in the executor's nursery; return the URL it listens on
        (``port=0`` picks a free port). Launched only (``DBOSNotLaunchedError`` before).

        Raises :class:`~dbos_trio.DBOSConfigError` for bad settings (a host that is not
        loopback needs a ``token`` of 16+ characters) and ``OSError`` if it cannot bind,
        before anything is served. It stops when the executor shuts down; cancelling the
        call itself before it returns leaves nothing running. ``metrics``, if given,
        serves ``/metrics`` with the text it returns.
        """
        settings = DashboardSettings(
            host=host,
            port=port,
            token=token,
            read_only=read_only,
            allow_pickle=allow_pickle,
            metrics=metrics,
        )
        check_settings(settings)
        executor = self._require_executor("serve_dashboard")
        url: str = await executor.nursery.start(partial(serve, executor, settings))
        return url
