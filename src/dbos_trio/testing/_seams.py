"""Where the kit reaches into a launch: the only coupling to the engine's internals.

A launch made through the kit (:func:`dbos_trio.testing.launched`,
:func:`dbos_trio.testing.run_until_crash`) sets :data:`LAUNCH_SETTINGS` for the launching
task; these seams read it, and behave exactly as the engine's own functions when it is
unset. They are installed once per process, on first use, and checked: if the engine's
shape moves under them, the kit fails loudly at install rather than silently testing
something else.

* ``_executor._open_system_database`` — open the system database the launch asks for,
  then hand it to the launch's interceptor (crash injection wraps it here, before any
  workflow can write through it). A SQLite database is opened with the launch's
  re-check interval.
* ``engine.dequeue.supervise`` / ``engine.timeouts.sweep`` / ``engine.dequeue._read_config``
  — under virtual time, run the background sweeps (dequeue supervisor, timeout sweep)
  every ``background_interval`` seconds instead of every second, and poll no queue more
  often than that (a rate-limited one: at least twice per limiter period). Under
  ``MockClock(autojump_threshold=0)`` real time is spent per *wakeup*, not per virtual
  second: a week of one-second polling is 600,000 wakeups per poller, a week at five
  minutes is 2,000.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from .._config import Config
    from ..core.admission import QueueConfig
    from ..sysdb.protocol import SystemDatabase
    from ..sysdb.wakeups import WakeupRegistry


@attrs.frozen
class LaunchSettings:
    """How the kit wants the current launch opened and paced."""

    background_interval: float | None = None  # None: the engine's own intervals
    recheck_interval: float | None = None  # SQLite waiters' re-check; None: the default
    intercept: Callable[[SystemDatabase], SystemDatabase] | None = None


LAUNCH_SETTINGS: contextvars.ContextVar[LaunchSettings | None] = contextvars.ContextVar(
    "dbos_trio_testing_launch", default=None
)

_installed = False


class EngineSeamError(RuntimeError):
    """The engine no longer has the shape dbos_trio.testing hooks into."""


def _require(module: Any, name: str, parameters: tuple[str, ...]) -> Any:
    target = getattr(module, name, None)
    if target is None or not callable(target):
        raise EngineSeamError(f"dbos_trio.testing: {module.__name__}.{name} is gone")
    found = tuple(inspect.signature(target).parameters)
    if found[: len(parameters)] != parameters:
        raise EngineSeamError(
            f"dbos_trio.testing: {module.__name__}.{name} takes {found}, expected {parameters}"
        )
    return target


def paced_polling(config: QueueConfig, background_interval: float) -> float:
    """A queue's polling interval under virtual time: at least ``background_interval``, but
    at most half its shortest rate-limit period (so a reopened window is noticed in time),
    and never below what the queue asks for."""
    interval = max(config.polling_interval_sec, background_interval)
    periods = [limiter.period for limiter in (config.limiter, config.partition_limiter) if limiter]
    if periods:
        interval = min(interval, max(config.polling_interval_sec, min(periods) / 2))
    return interval


def install() -> None:
    """Install the seams (idempotent)."""
    global _installed
    if _installed:
        return
    from .. import _executor
    from ..engine import dequeue, timeouts

    original_open = _require(_executor, "_open_system_database", ("config", "wakeups"))
    original_supervise = _require(dequeue, "supervise", ("executor",))
    original_sweep = _require(timeouts, "sweep", ("executor",))
    original_read_config = _require(dequeue, "_read_config", ("executor", "queue_name"))
    if "sweep_interval" not in inspect.signature(original_supervise).parameters:
        raise EngineSeamError("dbos_trio.testing: dequeue.supervise lost sweep_interval")
    if "interval" not in inspect.signature(original_sweep).parameters:
        raise EngineSeamError("dbos_trio.testing: timeouts.sweep lost interval")

    async def open_system_database(config: Config, wakeups: WakeupRegistry) -> SystemDatabase:
        settings = LAUNCH_SETTINGS.get()
        if settings is None:
            sysdb: SystemDatabase = await original_open(config, wakeups)
            return sysdb
        url = config.resolved_database_url()
        if url.startswith("sqlite:") and settings.recheck_interval is not None:
            from ..sysdb.sqlite.backend import SQLiteSystemDatabase

            sysdb = await SQLiteSystemDatabase.open(
                url,
                run_migrations=config.run_migrations,
                wakeups=wakeups,
                recheck_interval=settings.recheck_interval,
            )
        else:
            sysdb = await original_open(config, wakeups)
        if settings.intercept is not None:
            sysdb = settings.intercept(sysdb)
        return sysdb

    def paced(original: Callable[..., Awaitable[None]], keyword: str) -> Callable[..., Any]:
        @functools.wraps(original)
        async def run(*args: Any, **kwargs: Any) -> None:
            settings = LAUNCH_SETTINGS.get()
            if settings is not None and settings.background_interval is not None:
                kwargs.setdefault(keyword, settings.background_interval)
            await original(*args, **kwargs)

        return run

    async def read_config(executor: Any, queue_name: str, *args: Any, **kwargs: Any) -> Any:
        config = await original_read_config(executor, queue_name, *args, **kwargs)
        settings = LAUNCH_SETTINGS.get()
        interval = None if settings is None else settings.background_interval
        if config is not None and interval is not None:
            config = attrs.evolve(config, polling_interval_sec=paced_polling(config, interval))
        return config

    setattr(_executor, "_open_system_database", open_system_database)  # noqa: B010
    setattr(dequeue, "supervise", paced(original_supervise, "sweep_interval"))  # noqa: B010
    setattr(timeouts, "sweep", paced(original_sweep, "interval"))  # noqa: B010
    setattr(dequeue, "_read_config", read_config)  # noqa: B010
    _installed = True
