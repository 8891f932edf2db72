"""Debouncing from a :class:`~dbos_trio.Client`: the official SDK's ``DebouncerClient``.

The same algorithm and rows as ``DBOS.debouncer``
(:mod:`dbos_trio._engine.schedules.debounce_loop`), so a client's bounces coalesce with an
executor's, of either SDK, on the same key. The workflow is named by
:class:`~dbos_trio.EnqueueOptions`; options a debounce owns are refused when the debouncer
is made."""

from __future__ import annotations

import json
from typing import Any

import attrs

from dbos_trio._client.base import ClientBase, ClientWorkflowHandle
from dbos_trio._client.options import EnqueueOptions, payload_format
from dbos_trio._core import validate
from dbos_trio._core.ids import random_uuid
from dbos_trio._core.statuses import DELAYED
from dbos_trio._core.units import timeout_ms
from dbos_trio._engine.queues.enqueue import insert_queued
from dbos_trio._engine.schedules.debounce_loop import (
    check_period,
    check_timeout,
    coalesce,
    deadline_and_delay,
    deduplication_id,
    reject_options,
)
from dbos_trio._engine.state import Runtime
from dbos_trio._engine.workflows.rows import Placement, Writer, new_row
from dbos_trio._engine.workflows.start import check_same_workflow
from dbos_trio._sysdb.records import Bounce, BounceResult
from dbos_trio.errors import DBOSArgumentTypeError, DBOSValueTooLargeError


class ClientDebouncer:
    """``await debouncer.debounce(key, period_sec, *args, **kwargs)`` from a client."""

    def __init__(
        self,
        client: ClientBase,
        options: EnqueueOptions,
        timeout_sec: float | None,
        queue_name: str | None,
    ) -> None:
        self._client = client
        self._options = options
        self._timeout = timeout_sec
        self._queue = queue_name or options.queue_name

    async def debounce(
        self, debounce_key: str, debounce_period_sec: float, *args: Any, **kwargs: Any
    ) -> ClientWorkflowHandle[Any]:
        """Debounce one call (see :class:`~dbos_trio.Debouncer`); the handle of the
        workflow it coalesced onto or made."""
        validate.text(debounce_key, "debounce_key")
        options = self._options
        key_id = deduplication_id(options.workflow_name, debounce_key)
        period_ms = check_period(debounce_period_sec)
        runtime = self._client._require("debounce")
        application = options.application_name or runtime.app_name
        fmt = payload_format(runtime.codec, options.serialization)
        try:
            inputs = runtime.codec.encode_inputs(
                tuple(args), dict(kwargs), fmt, f"the inputs of workflow {options.workflow_name}"
            )
        except DBOSValueTooLargeError:
            raise  # names the value, its size and the limit already
        except Exception as error:
            raise DBOSArgumentTypeError(
                f"cannot serialize the arguments of workflow {options.workflow_name} as "
                f"{fmt}: {error}"
            ) from error

        async def bounce() -> BounceResult:
            now = runtime.clock.now_ms()
            return await runtime.sysdb.bounce(
                Bounce(
                    workflow_name=options.workflow_name,
                    queue_name=self._queue,
                    deduplication_id=key_id,
                    delay_until_epoch_ms=now + period_ms,
                    inputs=inputs,
                    serialization=fmt,
                    application_name=application,
                    now_ms=now,
                ),
                None,
            )

        async def enqueue() -> ClientWorkflowHandle[Any]:
            return await self._enqueue(runtime, key_id, period_ms, inputs, fmt, application)

        return await coalesce(
            workflow_name=options.workflow_name,
            queue_name=self._queue,
            key_id=key_id,
            application=application,
            bounce=bounce,
            enqueue=enqueue,
            handle=self._client._handle,
        )

    async def _enqueue(
        self,
        runtime: Runtime,
        key_id: str,
        period_ms: int,
        inputs: str,
        fmt: str,
        application: str | None,
    ) -> ClientWorkflowHandle[Any]:
        options = self._options
        workflow_id = options.workflow_id or random_uuid()
        now = runtime.clock.now_ms()
        deadline, delay_until = deadline_and_delay(now, period_ms, self._timeout)
        new = new_row(
            workflow_id=workflow_id,
            name=options.workflow_name,
            class_name=options.class_name,
            config_name=options.instance_name,
            inputs=inputs,
            serialization=fmt,
            now_ms=now,
            writer=Writer(
                executor_id=None,
                application_version=options.app_version,
                application_id=None,
                application_name=application,
            ),
            placement=Placement(queue_name=self._queue, deduplication_id=key_id),
            timeout_ms=None
            if options.workflow_timeout is None
            else timeout_ms(options.workflow_timeout),
            authenticated_user=options.authenticated_user,
            authenticated_roles=json.dumps(list(options.authenticated_roles))
            if options.authenticated_roles
            else None,
        )
        new = attrs.evolve(
            new,
            status=DELAYED,
            delay_until_epoch_ms=delay_until,
            is_debounced=True,
            debounce_deadline_epoch_ms=deadline,
        )
        init = await insert_queued(runtime, new, None, None)
        assert not isinstance(init, str)
        check_same_workflow(
            workflow_id, init, options.workflow_name, options.class_name, options.instance_name
        )
        return self._client._handle(workflow_id)


class ClientDebouncing(ClientBase):
    def debouncer(
        self,
        options: EnqueueOptions,
        *,
        debounce_timeout_sec: float | None = None,
        queue: str | None = None,
    ) -> ClientDebouncer:
        """A debouncer of the workflow ``options`` names, on ``queue`` (default: the
        options' queue). Options a debounce owns (deduplication id, delay, priority,
        partition key, ``duplication_policy="return-existing"``) raise here."""
        if not isinstance(options, EnqueueOptions):
            raise TypeError(f"debouncer needs EnqueueOptions, not {type(options).__name__}")
        reject_options(
            deduplication_id=options.deduplication_id,
            delay_seconds=options.delay_seconds,
            priority=options.priority,
            queue_partition_key=options.queue_partition_key,
            duplication_policy=options.duplication_policy,
        )
        validate.optional_text(queue, "queue")
        return ClientDebouncer(self, options, check_timeout(debounce_timeout_sec), queue)
