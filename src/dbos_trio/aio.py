"""asyncio-only libraries inside steps, through trio-asyncio (``pip install 'dbos-trio[asyncio]'``).

``@dbos.step(asyncio=True)`` on an ``async def`` written for asyncio (aiohttp, an asyncio
database driver, a vendor SDK) runs the step's body as an asyncio task on a trio-asyncio
loop; :func:`run_asyncio` does the same for one call from any Trio code. Everything
around the body — the checkpoint, retries, the step timeout, the system database — stays
on Trio: only the step's own coroutine runs on the asyncio loop, so none of our database
I/O ever goes through it.

Invariant — cancellation is mapped both ways, and never confused:

* Trio cancels the step (its timeout, a cancelled workflow, shutdown): the asyncio task
  is cancelled, the library sees ``asyncio.CancelledError`` (its ``finally`` blocks and
  ``async with`` exits run as under asyncio), and Trio sees its own ``trio.Cancelled``.
* The asyncio side cancels the task itself, without Trio asking (a library cancelling
  its own task, ``asyncio.current_task().cancel()``): that is the step's failure, raised
  as :class:`AsyncioCancelledError` (an ``Exception``, so it is checkpointed and retried
  by the step's policy like any error) — an ``asyncio.CancelledError`` escaping into Trio
  code would look to it like an unexplained ``BaseException``.

The loop: if the caller runs inside ``async with trio_asyncio.open_loop():`` (for
example around ``dbos.launched()``, so asyncio objects such as an aiohttp session can
outlive one step), that loop is used; otherwise each call opens a loop for its own
duration and closes it after.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar, cast

P = ParamSpec("P")
R = TypeVar("R")

INSTALL_HINT = "asyncio steps need trio-asyncio: pip install 'dbos-trio[asyncio]'"


class AsyncioCancelledError(Exception):
    """The asyncio side cancelled a step's coroutine without Trio asking for it.

    Raised by :func:`run_asyncio` (and so by ``@dbos.step(asyncio=True)`` steps) in place of
    the ``asyncio.CancelledError``; the original is its ``__cause__``.
    """


def require_trio_asyncio() -> None:
    """Raise ``ImportError`` with the install command if trio-asyncio is missing."""
    try:
        import trio_asyncio  # noqa: F401
    except ImportError as missing:
        raise ImportError(INSTALL_HINT) from missing


async def run_asyncio(func: Callable[P, Awaitable[R]], /, *args: P.args, **kwargs: P.kwargs) -> R:
    """Await ``func(*args, **kwargs)``, an asyncio-flavoured coroutine function, from Trio.

    Runs it as an asyncio task on the caller's trio-asyncio loop, or on a loop opened for
    this call. Returns its value; an exception it raises propagates as itself.

    On cancellation (of the calling Trio scope) the asyncio task is cancelled and awaited,
    then ``trio.Cancelled`` propagates. If the asyncio side cancels the task on its own,
    :class:`AsyncioCancelledError` is raised. ``SystemExit`` and ``KeyboardInterrupt``
    raised by ``func`` are raised here, in Trio, as from a Trio function (asyncio itself
    would let them escape its loop and leave the task unfinished). Without trio-asyncio installed,
    ``ImportError`` names the extra to install.
    """
    try:
        import trio_asyncio
    except ImportError as missing:
        raise ImportError(INSTALL_HINT) from missing

    async def carried() -> tuple[R | None, BaseException | None]:
        # On asyncio, a task raising SystemExit or KeyboardInterrupt re-raises it out of
        # the loop instead of finishing: the task is never done, and its awaiter on Trio
        # would wait for ever. It is carried out as a value and raised on the Trio side,
        # where it stops launched() as from a Trio step.
        try:
            return await func(*args, **kwargs), None
        except (SystemExit, KeyboardInterrupt) as stop:
            return None, stop

    async def on_loop(loop: Any) -> R:
        try:
            outcome: tuple[R | None, BaseException | None] = await loop.run_aio_coroutine(
                carried()
            )
        except asyncio.CancelledError as cancelled:
            # trio-asyncio passes the asyncio CancelledError along unchanged exactly when
            # the Trio scope was not cancelled: the asyncio side asked for this.
            raise AsyncioCancelledError(
                f"{getattr(func, '__qualname__', func)!s} was cancelled on the asyncio side "
                "(not by Trio)"
            ) from cancelled
        result, stop = outcome
        if stop is not None:
            raise stop
        return cast(R, result)  # R itself whenever nothing stopped

    loop = trio_asyncio.current_loop.get()
    if loop is not None:
        return await on_loop(loop)
    # The loop's nursery would wrap an error of the body in an ExceptionGroup; the step's
    # caller must see the error itself (to catch it, retry it, record it), so it is taken
    # out of the block and raised after the loop closed. Cancellation passes through.
    failure: Exception | None = None
    async with trio_asyncio.open_loop() as loop:
        try:
            result = await on_loop(loop)
        except Exception as error:
            failure = error
    if failure is not None:
        raise failure
    return result


def as_trio(func: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, Coroutine[Any, Any, R]]:
    """Wrap an asyncio-flavoured ``async def`` into a Trio one that calls it through
    :func:`run_asyncio` (same cancellation and errors). ``TypeError`` if ``func`` is not
    an ``async def``; ``ImportError`` naming the extra if trio-asyncio is missing."""
    if not callable(func) or not inspect.iscoroutinefunction(func):
        raise TypeError(f"an asyncio step must be an async def, not {func!r}")
    require_trio_asyncio()

    @functools.wraps(func)
    async def on_trio(*args: P.args, **kwargs: P.kwargs) -> R:
        return await run_asyncio(func, *args, **kwargs)

    return on_trio


__all__ = ["AsyncioCancelledError", "as_trio", "run_asyncio"]
