"""``DBOS``: the registration container and the face of one executor.

Thin by design: it validates, resolves which registered function a call means, and hands
over to the engine. Nothing connects until :meth:`DBOS.launched`; everything that needs
the database raises :class:`~dbos_trio.DBOSNotLaunchedError` (naming the operation) before
then. The face is split by concern — registration, lifecycle, durable primitives,
concurrency, management — each a module of this package; :class:`DBOS` is all of them.
"""

from __future__ import annotations

from dbos_trio._dbos.admin import Admin
from dbos_trio._dbos.concurrency import Concurrency
from dbos_trio._dbos.dashboard import Dashboard
from dbos_trio._dbos.datasources import Datasource, Datasources
from dbos_trio._dbos.debouncing import Debouncer, Debouncing
from dbos_trio._dbos.determinism import Determinism
from dbos_trio._dbos.durable import Durable
from dbos_trio._dbos.enqueue import Enqueue
from dbos_trio._dbos.lifecycle import Lifecycle
from dbos_trio._dbos.listing import Listing
from dbos_trio._dbos.observability import Observability
from dbos_trio._dbos.operations import Operations
from dbos_trio._dbos.registration import Registration, StepDecorator
from dbos_trio._dbos.results import Results
from dbos_trio._dbos.schedules import Schedules
from dbos_trio._dbos.steps import Steps
from dbos_trio._dbos.versions import Versions


class DBOS(
    Registration, Lifecycle, Durable, Concurrency, Admin, Listing, Schedules, Debouncing,
    Datasources, Dashboard, Versions, Observability, Operations, Results, Steps, Enqueue,
    Determinism,
):  # fmt: skip
    """Registers workflows and steps, and runs them once launched.

    ``DBOS(Config(app_name="orders", ...))`` connects nothing; ``async with
    dbos.launched():`` runs the executor for the block. There is no global instance:
    several may live in one process, each with its own database or schema.

    Cancellation and errors, for every method: a call that touches the database commits
    each of its transactions whole or not at all, so cancelling it (``trio.Cancelled``)
    never leaves half a write; called from a workflow body, a cancelled durable call
    records nothing and a replay makes it again. A transient database failure is retried
    until the database is back (or for ``Config.database_retry_limit`` seconds, then
    :class:`~dbos_trio.SystemDatabaseError`), and is never recorded as a workflow's
    outcome. A bad argument raises :class:`~dbos_trio.DBOSInvalidArgumentError` or
    :class:`~dbos_trio.DBOSArgumentTypeError` before anything is written; a call that
    needs the database outside ``launched()`` raises
    :class:`~dbos_trio.DBOSNotLaunchedError`.
    """


__all__ = ["DBOS", "Datasource", "Debouncer", "StepDecorator"]
