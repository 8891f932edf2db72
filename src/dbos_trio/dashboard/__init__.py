"""A local web dashboard of a system database's workflows, queues, schedules and executors.

Served by ``dbos-trio dashboard`` (:mod:`dbos_trio.cli._dashboard`) or by
:meth:`DBOS.serve_dashboard <dbos_trio.DBOS.serve_dashboard>` in a launched executor;
both run :func:`serve` over a runtime. Needs the ``dashboard`` extra (hypercorn). See
docs/dashboard.md.
"""

from __future__ import annotations

from dbos_trio.dashboard._server import (
    DEFAULT_HOST,
    DEFAULT_PORT,
    DashboardSettings,
    check_settings,
    serve,
)

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "DashboardSettings", "check_settings", "serve"]
