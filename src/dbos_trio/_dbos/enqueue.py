"""``dbos.enqueue(EnqueueOptions(...), *args)``: enqueue by name from inside the app.

The same :class:`~dbos_trio.EnqueueOptions` a client takes, so a workflow registered
only in another process (or another SDK) can be enqueued by its name; from a workflow
body the enqueue is a child start, checkpointed with its step id taken at the call.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from dbos_trio._client.options import EnqueueOptions, payload_format
from dbos_trio._core import attributes as attributes_rules
from dbos_trio._dbos.base import DBOSBase
from dbos_trio._engine.queues.by_name import NamedEnqueue, enqueue_named
from dbos_trio._engine.workflows import options as engine_options
from dbos_trio._engine.workflows.handle import WorkflowHandle
from dbos_trio.errors import DBOSArgumentTypeError


class Enqueue(DBOSBase):
    def enqueue(
        self, options: EnqueueOptions, *args: Any, **kwargs: Any
    ) -> Coroutine[Any, Any, WorkflowHandle[Any]]:
        """Write an ENQUEUED (DELAYED with a delay) row for ``options.workflow_name`` on
        ``options.queue_name``; whichever executor serves that queue runs it. Options left
        unset fall back to the ``Set*`` blocks in force (the application version stays
        unset: the latest version runs it). Raises as :meth:`Queue.enqueue` does
        (deduplication, reuse policy ``"reject"``); bad values raise at the call."""
        if not isinstance(options, EnqueueOptions):
            raise DBOSArgumentTypeError(
                f"enqueue needs EnqueueOptions, not {type(options).__name__}"
            )
        executor = self._require_executor("enqueue")
        request = NamedEnqueue(
            workflow_name=options.workflow_name,
            queue_name=options.queue_name,
            class_name=options.class_name,
            config_name=options.instance_name,
            workflow_id=options.workflow_id,
            workflow_timeout=options.workflow_timeout,
            placement=engine_options.EnqueueOptions(
                deduplication_id=options.deduplication_id,
                priority=options.priority,
                queue_partition_key=options.queue_partition_key,
                delay_seconds=options.delay_seconds,
                duplication_policy=options.duplication_policy,
            ),
            app_version=options.app_version,
            fmt=None
            if options.serialization is None
            else payload_format(executor.codec, options.serialization),
            attributes=attributes_rules.optional(options.attributes, "EnqueueOptions.attributes"),
            reuse_policy=options.workflow_id_reuse_policy,
            application_name=options.application_name,
            authenticated_user=options.authenticated_user,
            authenticated_roles=options.authenticated_roles,
        )
        return enqueue_named(
            executor,
            request,
            tuple(args),
            dict(kwargs),
            config=self._queues.get(options.queue_name),
        )
