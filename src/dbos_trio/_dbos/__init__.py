"""``DBOS``: the registration container and the face of one executor.

Thin by design: it validates, resolves which registered function a call means, and hands
over to the engine. Nothing connects until :meth:`DBOS.launched`; everything that needs
the database raises :class:`~dbos_trio.DBOSNotLaunchedError` (naming the operation) before
then. The face is split by concern — registration, lifecycle, durable primitives,
concurrency, management — each a module of this package; :class:`DBOS` is all of them.
"""

from __future__ import annotations

from .concurrency import Concurrency
from .datasources import Datasource, Datasources
from .debouncing import Debouncer, Debouncing
from .durable import Durable
from .lifecycle import Lifecycle
from .management import Management
from .operations import Operations
from .registration import Registration, StepDecorator
from .schedules import Schedules


class DBOS(
    Registration, Lifecycle, Durable, Concurrency, Management, Schedules, Debouncing, Datasources,
    Operations,
):  # fmt: skip
    """Registers workflows and steps, and runs them once launched.

    ``DBOS(Config(app_name="orders", ...))`` connects nothing; ``async with
    dbos.launched():`` runs the executor for the block. There is no global instance:
    several may live in one process, each with its own database or schema.
    """


__all__ = ["DBOS", "Datasource", "Debouncer", "StepDecorator"]
