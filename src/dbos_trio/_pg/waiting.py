"""Trio's side of psycopg's waiting layer: drive a query generator on a socket.

psycopg expresses every conversation with the server as a generator that yields "wait
for the socket to be readable/writable" and is resumed with what became ready; these
functions are the loop that waits with ``trio.lowlevel.wait_readable``/``wait_writable``.
Cancellation reaches them as ``trio.Cancelled`` from the wait; what to do about a query
left running on the server is the connection's business (:mod:`.driver`).
"""

from __future__ import annotations

import select
from typing import TypeVar

import trio
from psycopg.abc import PQGen, PQGenConn
from psycopg.waiting import Ready, Wait

RV = TypeVar("RV")


def _ready_now(fileno: int, wait: Wait) -> Ready:
    """Which of the awaited directions are ready right now, without blocking."""
    events = 0
    if wait & Wait.R:
        events |= select.POLLIN
    if wait & Wait.W:
        events |= select.POLLOUT
    poller = select.poll()
    poller.register(fileno, events)
    ready = 0
    for _fd, revents in poller.poll(0):
        if revents & (select.POLLIN | select.POLLERR | select.POLLHUP):
            ready |= Ready.R
        if revents & (select.POLLOUT | select.POLLERR | select.POLLHUP):
            ready |= Ready.W
    return Ready(ready)


async def wait_socket(fileno: int, wait: Wait) -> Ready:
    if wait == Wait.R:
        await trio.lowlevel.wait_readable(fileno)
        return Ready.R
    if wait == Wait.W:
        await trio.lowlevel.wait_writable(fileno)
        return Ready.W
    # Wait.RW only happens while flushing a large send: rare enough to afford two tasks.
    became_ready = 0
    try:
        async with trio.open_nursery() as nursery:

            async def watch(direction: Ready) -> None:
                nonlocal became_ready
                if direction == Ready.R:
                    await trio.lowlevel.wait_readable(fileno)
                else:
                    await trio.lowlevel.wait_writable(fileno)
                became_ready |= direction
                nursery.cancel_scope.cancel()

            nursery.start_soon(watch, Ready.R)
            nursery.start_soon(watch, Ready.W)
    except BaseExceptionGroup as group:
        # The two watchers are an implementation detail: callers (and code that catches
        # ``trio.Cancelled``) must see the same exception a single wait would raise.
        raise _one_of(group) from None
    return Ready(became_ready)


def _one_of(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The exception of ``group`` a single task would have raised: an error or interrupt
    if there is one, else one of its ``Cancelled``."""
    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        error = pending.pop(0)
        if isinstance(error, BaseExceptionGroup):
            pending.extend(error.exceptions)
        else:
            leaves.append(error)
    for error in leaves:
        if not isinstance(error, trio.Cancelled):
            return error
    return leaves[0]


async def drive(gen: PQGen[RV], fileno: int, *, resume: bool = False) -> RV:
    """Run a psycopg query generator to completion on ``fileno``.

    ``resume`` continues a generator whose wait was interrupted: it is sent "nothing is
    ready" (``Ready.NONE``, never ``None``: the compiled generators of psycopg-binary only
    accept an integer), which makes it yield what it waits for again.
    """
    try:
        wait = gen.send(Ready.NONE) if resume else next(gen)
        while True:
            # A socket asked for writing is nearly always writable: a zero-timeout poll is
            # much cheaper than a trip through the scheduler.
            ready = _ready_now(fileno, wait) if wait & Wait.W else Ready.NONE
            if not ready:
                ready = await wait_socket(fileno, wait)
            wait = gen.send(ready)
    except StopIteration as done:
        result: RV = done.value
        return result


async def drive_conn(gen: PQGenConn[RV]) -> RV:
    """Run a psycopg connection-level generator (which may change socket) to completion."""
    try:
        fileno, wait = next(gen)
        while True:
            ready = await wait_socket(fileno, wait)
            fileno, wait = gen.send(ready)
    except StopIteration as done:
        result: RV = done.value
        return result
