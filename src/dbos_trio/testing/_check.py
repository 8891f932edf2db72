"""Check an upgrade in a test: replay recorded workflows against the application's code.

The helper reads the selected histories from a system database (read-only) or takes them
from exported bundles, and replays each in the sandbox of ``dbos-trio check``: every
durable call answered from the record, no step body run, nothing written, virtual time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from dbos_trio._client import Client
from dbos_trio._core.replay import CheckReport
from dbos_trio._ops import bundles as bundle_ops
from dbos_trio._ops import check as ops
from dbos_trio._ops.check import CheckSelection, RecordedHistory, ReplayApp

if TYPE_CHECKING:
    from dbos_trio._dbos import DBOS


def replay_app(dbos: DBOS) -> ReplayApp:
    """The parts of ``dbos`` (config, registered workflows, slot) a replay runs."""
    return ReplayApp(config=dbos._config, registry=dbos._registry, slot=dbos._slot)


async def check_upgrade(
    dbos: DBOS,
    database_url: str | None = None,
    *,
    schema: str = "dbos",
    histories: Sequence[RecordedHistory] = (),
    workflow_ids: Sequence[str] | None = None,
    names: Sequence[str] | None = None,
    queues: Sequence[str] | None = None,
    versions: Sequence[str] | None = None,
    finished: int = 0,
) -> CheckReport:
    """Replay recorded workflows against ``dbos``'s registered code (``dbos`` not
    launched) and return the :class:`CheckReport`.

    With ``database_url``, the selected workflows are read from that system database
    (read-only): by default every PENDING, ENQUEUED and DELAYED one, plus the
    ``finished`` most recent finished ones; ``workflow_ids`` picks exactly those instead,
    and ``names``/``queues``/``versions`` narrow. ``histories`` (from bundles: see
    :func:`dbos_trio.testing.read_bundle`) are replayed too. ``report.ok`` is False when
    an in-flight workflow would not replay; ``assert report.ok, report.summary()`` in a
    test. A launched ``dbos`` raises :class:`~dbos_trio.DBOSException`; an unreachable
    database :class:`~dbos_trio.SystemDatabaseError`. Cancellation abandons the check.
    """
    selected = list(histories)
    if database_url is not None:
        selection = CheckSelection(
            workflow_ids=None if workflow_ids is None else tuple(workflow_ids),
            names=None if names is None else tuple(names),
            queues=None if queues is None else tuple(queues),
            versions=None if versions is None else tuple(versions),
            finished=finished,
        )
        async with Client(database_url, schema=schema, use_listen_notify=False) as client:
            selected += await ops.load_histories(client._reach, selection)
    return await ops.check(replay_app(dbos), selected)


def read_bundle(path: str) -> list[RecordedHistory]:
    """The workflows of a bundle written by ``dbos-trio workflow export``, as
    :func:`check_upgrade` replays them (``histories=``). A file that is not a bundle
    raises :class:`~dbos_trio.DBOSException` naming what is wrong."""
    return bundle_ops.bundle_histories(bundle_ops.read_bundle_file(path))
