"""``DBOS``: the registration container and the face of one executor.

Thin by design: it validates, resolves which registered function a call means, and hands
over to the engine. Nothing connects until :meth:`DBOS.launched`; everything that needs
the database raises :class:`~dbos_trio.DBOSNotLaunchedError` (naming the operation) before
then. The face is split by concern — registration, lifecycle, durable primitives,
concurrency, management — each a module of this package; :class:`DBOS` is all of them.
"""

from __future__ import annotations

from .concurrency import Concurrency
from .dashboard import Dashboard
from .datasources import Datasource, Datasources
from .debouncing import Debouncer, Debouncing
from .durable import Durable
from .lifecycle import Lifecycle
from .management import Management
from .observability import Observability
from .operations import Operations
from .registration import Registration, StepDecorator
from .schedules import Schedules
from .versions import Versions


class DBOS(
    Registration, Lifecycle, Durable, Concurrency, Management, Schedules, Debouncing, Datasources,
    Dashboard, Versions, Observability, Operations,
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
