"""Checking an open :class:`~dbos_trio.Client`'s connection, as the official
``DBOSClient.check_connection`` does (see :mod:`dbos_trio._ops.connection`)."""

from __future__ import annotations

from dbos_trio._client.base import ClientBase
from dbos_trio._ops import connection as ops


class ClientConnection(ClientBase):
    async def check_connection(self) -> None:
        """Make one cheap round trip to the system database; raise
        :class:`~dbos_trio.SystemDatabaseUnreachable` if it cannot be reached
        within the client's ``connect_timeout`` (or its retries gave up first).

        Opening the client checked the connection already; this checks it again, later
        (a health probe). It reads nothing of any workflow and writes nothing;
        cancellation raises ``trio.Cancelled``. Outside the ``async with`` block it raises
        :class:`~dbos_trio.DBOSException`.
        """
        await ops.check_connection(self._reach, timeout=self._connect_timeout)
