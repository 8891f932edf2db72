"""The engine: what a workflow means, carried out over the system-database protocol.

Layer: above the system-database interfaces (:mod:`dbos_trio._sysdb.protocol`, its records,
errors and wakeups, and the one factory :mod:`dbos_trio._sysdb.open`), below the faces.
Invariant: the engine never imports a backend or a driver, so both backends run the same
engine, and a test double of the protocol (``dbos_trio.testing``) can stand in for either.

Cut by concern, one sub-package each:

* :mod:`~dbos_trio._engine.workflows` — a workflow body run once: its context, ids and
  options, starting it, its steps and checkpoints, concurrency inside it, handles, outcomes;
* :mod:`~dbos_trio._engine.durable` — the durable primitives a body calls: sleep, messages,
  events, streams, patches, transactions;
* :mod:`~dbos_trio._engine.queues` — enqueueing, stored queues and the dequeue workers;
* :mod:`~dbos_trio._engine.schedules` — cron schedules, their firing, and debouncing;
* :mod:`~dbos_trio._engine.recovery` — recovery at launch, adoption of a dead executor's
  work, application versions and stranded work;
* :mod:`~dbos_trio._engine.admin` — operator actions on stored workflows (cancel, resume,
  fork, delete, rewind, retention, renaming);
* :mod:`~dbos_trio._engine.observability` — logs, traces and metrics hooks;
* :mod:`~dbos_trio._engine.runtime` — the launched executor: launch and shutdown, its
  background tasks (dispatch, drain, sweeps) in one nursery.
"""
