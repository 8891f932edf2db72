"""The row a :class:`~dbos_trio.Client` enqueues: built in one place, for ``enqueue`` and
``enqueue_in_transaction`` alike, so the two cannot drift.

It carries no executor and no version unless the options ask for one (any executor of the
application may claim it), the options' or the client's application, and the caller's
trace carrier when the application uses OpenTelemetry.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from dbos_trio._client.options import EnqueueOptions, payload_format
from dbos_trio._core import attributes as attributes_rules
from dbos_trio._core.ids import random_uuid
from dbos_trio._core.units import timeout_ms
from dbos_trio._engine.observability.hooks import ambient_carrier_attributes
from dbos_trio._engine.state import Runtime
from dbos_trio._engine.workflows.rows import Writer, new_row, placement_for
from dbos_trio._sysdb.records import NewWorkflow
from dbos_trio.errors import DBOSArgumentTypeError, DBOSValueTooLargeError


def enqueued_row(
    runtime: Runtime, options: EnqueueOptions, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> NewWorkflow:
    """The ENQUEUED (or DELAYED) row for ``options``; arguments that cannot be serialized
    raise :class:`~dbos_trio.DBOSException` naming the workflow and the format. Inputs over
    the payload store's threshold are put in the store now, on this thread (see
    :func:`stored_row` for the write paths that can wait)."""
    return _row(runtime, options, args, kwargs, defer=False)


async def stored_row(
    runtime: Runtime, options: EnqueueOptions, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> NewWorkflow:
    """:func:`enqueued_row`, inputs over the payload store's threshold put in the store from
    a worker thread before the row is returned (cancellation waits for the put, so the
    entry is whole or absent; a failed put raises :class:`~dbos_trio.DBOSPayloadError`)."""
    new = _row(runtime, options, args, kwargs, defer=True)
    inputs = await runtime.codec.settle(new.inputs)
    assert inputs is not None
    return attrs.evolve(new, inputs=inputs)


def _row(
    runtime: Runtime,
    options: EnqueueOptions,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    defer: bool,
) -> NewWorkflow:
    codec = runtime.codec
    fmt = payload_format(codec, options.serialization)
    try:
        inputs = codec.encode_inputs(
            tuple(args),
            dict(kwargs),
            fmt,
            f"the inputs of workflow {options.workflow_name}",
            defer=defer,
        )
    except DBOSValueTooLargeError:
        raise  # names the value, its size and the limit already
    except Exception as error:
        raise DBOSArgumentTypeError(
            f"cannot serialize the arguments of workflow {options.workflow_name} as {fmt}: {error}"
        ) from error
    roles, timeout = options.authenticated_roles, options.workflow_timeout
    return new_row(
        workflow_id=options.workflow_id or random_uuid(),
        name=options.workflow_name,
        class_name=options.class_name,
        config_name=options.instance_name,
        inputs=inputs,
        serialization=fmt,
        now_ms=runtime.clock.now_ms(),
        writer=Writer(
            executor_id=None,
            application_version=options.app_version,
            application_id=None,
            application_name=options.application_name or runtime.app_name,
        ),
        placement=placement_for(options.queue_name, options),
        timeout_ms=None if timeout is None else timeout_ms(timeout),
        authenticated_user=options.authenticated_user,
        authenticated_roles=json.dumps(list(roles)) if roles else None,
        attributes=attributes_rules.combined(
            attributes_rules.optional(options.attributes, "EnqueueOptions.attributes"),
            ambient_carrier_attributes(),
        ),
    )
