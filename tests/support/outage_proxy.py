"""A TCP proxy between executors and PostgreSQL that can cut them all off at once.

Every connection through it is pumped both ways by tasks of the test's nursery. ``cut()``
drops every connection (the server sees its clients vanish, the clients see their
connections lost) and refuses new ones until ``restore()``: the shared outage a fleet meets
when the network to its database fails, while the database itself runs on and its other
clients (the test's own direct connections) see nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

import trio


@asynccontextmanager
async def outage_proxy(upstream_port: int) -> AsyncIterator[OutageProxy]:
    """A running :class:`OutageProxy` to ``127.0.0.1:upstream_port`` for the block."""
    proxy = OutageProxy(upstream_port)
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, proxy.serve, 0, host="127.0.0.1"))
        proxy.port = listeners[0].socket.getsockname()[1]
        yield proxy
        nursery.cancel_scope.cancel()


class OutageProxy:
    """Forwards each connection to the upstream port; see :func:`outage_proxy`."""

    def __init__(self, upstream_port: int, upstream_host: str = "127.0.0.1") -> None:
        self._upstream = (upstream_host, upstream_port)
        self._cut = False
        self._links: set[trio.CancelScope] = set()
        self.port = 0
        self.refused = 0

    def cut(self) -> None:
        """Drop every connection now and refuse new ones until :meth:`restore`."""
        self._cut = True
        for link in list(self._links):
            link.cancel()

    def restore(self) -> None:
        self._cut = False

    async def serve(self, client: trio.SocketStream) -> None:
        if self._cut:
            self.refused += 1
            await client.aclose()
            return
        with trio.CancelScope() as link:
            self._links.add(link)
            try:
                server = await trio.open_tcp_stream(*self._upstream)
                async with client, server, trio.open_nursery() as pumps:
                    pumps.start_soon(self._pump, client, server, pumps.cancel_scope)
                    pumps.start_soon(self._pump, server, client, pumps.cancel_scope)
            finally:
                self._links.discard(link)

    @staticmethod
    async def _pump(
        source: trio.SocketStream, sink: trio.SocketStream, both: trio.CancelScope
    ) -> None:
        try:
            while data := await source.receive_some(65536):
                await sink.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        both.cancel()  # one side closed: close the other
