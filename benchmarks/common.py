"""What every benchmark process shares: its command line, its one JSON line, timing, watching.

This module is imported by the runner, by both library drivers and by the floor driver. The
official driver runs in another virtualenv, so it uses only the standard library and psycopg
(which both libraries depend on anyway).

Conventions of a benchmark process:

* it is started with ``--scenario``, ``--params`` (JSON), ``--database-url`` (a fresh
  ``bench_*`` database made by the runner) and sometimes ``--phase``;
* it prints **exactly one JSON line** on stdout (see :func:`make_record`) and nothing else:
  :func:`claim_stdout` keeps the real stdout for that line and points file descriptor 1 at
  stderr, so whatever a library logs or prints cannot corrupt it;
* completion of many workflows is observed from outside the library by a :class:`Watcher`, a
  thread with its own connection counting rows every 20 ms, so no polling interval or
  notification path of either library decides when the clock stops.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import queue
import resource
import sys
import threading
import time
import traceback
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

RECORD_SCHEMA = "dbos-bench/1"
APP_NAME = "dbos-bench"
APP_VERSION = "bench-1"
POLL_INTERVAL_S = 0.02
TERMINAL_FAILURES = ("ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")


# --------------------------------------------------------------------------- command line


@dataclass
class DriverArgs:
    scenario: str
    params: dict[str, Any]
    database_url: str
    phase: str = "run"
    extra: dict[str, Any] = field(default_factory=dict)
    spawn_time: float | None = None


def parse_driver_args(argv: Sequence[str] | None = None) -> DriverArgs:
    parser = argparse.ArgumentParser(description="Run one benchmark scenario; print one JSON line")
    parser.add_argument("--scenario", required=True, help="scenario id, e.g. S1-K10")
    parser.add_argument("--params", default="{}", help="scenario parameters as JSON")
    parser.add_argument("--database-url", required=True, help="postgresql://... of a fresh db")
    parser.add_argument("--phase", default="run", choices=("run", "crash", "recover"))
    parser.add_argument("--extra", default="{}", help="JSON merged into the record's metrics")
    parser.add_argument("--spawn-time", type=float, default=None, help="time.time() at spawn")
    ns = parser.parse_args(argv)
    return DriverArgs(
        scenario=ns.scenario,
        params=json.loads(ns.params),
        database_url=ns.database_url,
        phase=ns.phase,
        extra=json.loads(ns.extra),
        spawn_time=ns.spawn_time,
    )


# --------------------------------------------------------------------------- the JSON line


def claim_stdout() -> IO[str]:
    """Keep the real stdout for the record; send everything else written to fd 1 to stderr."""
    sys.stdout.flush()
    real = os.dup(1)
    os.dup2(2, 1)
    return os.fdopen(real, "w", buffering=1)


def emit(out: IO[str], record: Mapping[str, Any]) -> None:
    out.write(json.dumps(record, separators=(",", ":"), default=str) + "\n")
    out.flush()


def peak_rss_mb() -> float:
    # ru_maxrss is in KiB on Linux.
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


def describe_error(exc: BaseException) -> str:
    text = "".join(traceback.format_exception(exc))
    return text[-3000:]


def make_record(
    *,
    ok: bool,
    library: str,
    version: str,
    scenario: str,
    phase: str,
    params: Mapping[str, Any],
    metrics: Mapping[str, Any],
    cpu: Mapping[str, Any],
    environment: Mapping[str, Any],
    error: str | None,
    wall_s: float,
) -> dict[str, Any]:
    """The one line a benchmark process prints. The smoke test asserts this shape."""
    return {
        "schema": RECORD_SCHEMA,
        "ok": ok,
        "library": library,
        "version": version,
        "scenario": scenario,
        "phase": phase,
        "params": dict(params),
        "metrics": dict(metrics),
        "peak_rss_mb": peak_rss_mb(),
        "cpu": dict(cpu),
        "environment": dict(environment),
        "error": error,
        "wall_s": round(wall_s, 3),
        "pid": os.getpid(),
    }


# --------------------------------------------------------------------------- timing


@dataclass
class Window:
    """Wall and process CPU time (all threads) between :meth:`start` and :meth:`stop`."""

    wall_start: float = 0.0
    cpu_start: float = 0.0
    wall_s: float = 0.0
    cpu_s: float = 0.0

    def start(self) -> Window:
        self.wall_start = time.perf_counter()
        self.cpu_start = time.process_time()
        return self

    def stop(self, at: float | None = None) -> Window:
        """Close the window; ``at`` is a perf_counter() reading taken elsewhere (a Watcher)."""
        end = time.perf_counter() if at is None else at
        self.wall_s = end - self.wall_start
        self.cpu_s = time.process_time() - self.cpu_start
        return self


def cpu_record(window: Window, units: int, unit: str) -> dict[str, Any]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "timed_cpu_s": round(window.cpu_s, 4),
        "timed_wall_s": round(window.wall_s, 4),
        "per_unit_ms": round(1000.0 * window.cpu_s / units, 4) if units else None,
        "unit": unit,
        "units": units,
        "process_user_s": round(usage.ru_utime, 3),
        "process_system_s": round(usage.ru_stime, 3),
    }


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..1) of a non-empty sequence."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        raise ValueError("median of no values")
    mid = n // 2
    return ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0


def ms(seconds: float) -> float:
    return round(seconds * 1000.0, 4)


def latency_metrics(prefix: str, samples: Sequence[float]) -> dict[str, float]:
    """``{prefix}_ms_median`` and ``{prefix}_ms_p99`` of latencies in seconds (both drivers
    report every latency this way, so the runner compares like with like)."""
    return {
        f"{prefix}_ms_median": ms(median(samples)),
        f"{prefix}_ms_p99": ms(percentile(samples, 0.99)),
    }


# --------------------------------------------------------------------------- the database


def with_port(url: str, host: str, port: int) -> str:
    """The same postgresql:// URL pointed at another host and port (the S7 wire proxy)."""
    parts = urlsplit(url)
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = f"{userinfo}@{host}:{port}" if userinfo else f"{host}:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def host_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or 5432


def server_environment(url: str) -> dict[str, Any]:
    """PostgreSQL version and the settings that decide commit cost, plus the client machine."""
    settings = (
        "server_version",
        "synchronous_commit",
        "fsync",
        "wal_sync_method",
        "commit_delay",
        "shared_buffers",
        "max_connections",
    )
    env: dict[str, Any] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        for name in settings:
            row = conn.execute("SELECT current_setting(%s)", (name,)).fetchone()
            env[f"pg_{name}"] = row[0] if row else None
    env["python"] = platform.python_version()
    env["psycopg"] = psycopg.__version__
    env["cpu_count"] = os.cpu_count()
    env["loadavg_1m"] = round(os.getloadavg()[0], 2)
    env["database"] = urlsplit(url).path.lstrip("/")
    return env


class WatchTimeout(RuntimeError):
    pass


class Watcher:
    """Counts a library's finished workflows from outside it.

    A thread with its own autocommit connection runs ``count(*)`` over ``dbos.workflow_status``
    for one workflow name every ``interval`` seconds once :meth:`expect` was called, and
    remembers the ``perf_counter()`` reading of the poll that first saw the target. Connect
    (the constructor) before the timed region; :meth:`wait` blocks, so async code calls it
    through its framework's ``to_thread``.
    """

    QUERY = (
        "SELECT count(*) FILTER (WHERE status = 'SUCCESS'),"
        " count(*) FILTER (WHERE status = ANY(%s))"
        " FROM dbos.workflow_status WHERE name = %s"
    )

    def __init__(self, url: str, workflow_name: str, interval: float = POLL_INTERVAL_S) -> None:
        self._conn = psycopg.connect(url, autocommit=True)
        self._name = workflow_name
        self._interval = interval
        self._target = 0
        self._done = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.seen_at: float | None = None
        self.error: str | None = None
        self.polls = 0
        self.last_success = 0

    def count(self) -> tuple[int, int]:
        row = self._conn.execute(self.QUERY, (list(TERMINAL_FAILURES), self._name)).fetchone()
        assert row is not None
        return int(row[0]), int(row[1])

    def expect(self, target: int) -> None:
        """Start polling until ``target`` workflows of that name are SUCCESS."""
        self._target = target
        self._thread = threading.Thread(target=self._run, name="bench-watcher", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                success, failed = self.count()
                self.polls += 1
                self.last_success = success
                if failed:
                    self.error = f"{failed} workflow(s) named {self._name} ended not SUCCESS"
                    break
                if success >= self._target:
                    self.seen_at = time.perf_counter()
                    break
                time.sleep(self._interval)
        except Exception as exc:  # reported by wait()
            self.error = f"watcher failed: {exc!r}"
        finally:
            self._done.set()

    def wait(self, timeout: float) -> float:
        """Block until the target was seen; return the perf_counter() reading of that poll."""
        if not self._done.wait(timeout):
            self._stop.set()
            raise WatchTimeout(
                f"{self.last_success}/{self._target} {self._name} SUCCESS after {timeout} s"
            )
        if self.error is not None:
            raise RuntimeError(self.error)
        assert self.seen_at is not None
        return self.seen_at

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self._conn.close()


@contextlib.contextmanager
def watching(url: str, workflow_name: str) -> Iterator[Watcher]:
    watcher = Watcher(url, workflow_name)
    try:
        yield watcher
    finally:
        watcher.close()


# --------------------------------------------------------------------------- S5 side table


SIDE_TABLE_DDL = (
    "CREATE TABLE IF NOT EXISTS public.bench_step_runs ("
    " workflow_index integer NOT NULL, step integer NOT NULL, phase text NOT NULL,"
    " pid integer NOT NULL, at timestamptz NOT NULL DEFAULT now())"
)


class SideWriter:
    """Step bodies log their own executions here (S5), independently of the library.

    Thread-safe: the S5 step that writes calls :meth:`record` in a worker thread (its
    framework's ``to_thread``); a few connections are shared through a queue.
    """

    def __init__(self, url: str, phase: str, connections: int = 4) -> None:
        self._url = url
        self._phase = phase
        self._free: queue.SimpleQueue[psycopg.Connection[Any]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._made = 0
        self._limit = connections
        self._all: list[psycopg.Connection[Any]] = []

    def _take(self) -> psycopg.Connection[Any]:
        with self._lock:
            if self._free.empty() and self._made < self._limit:
                conn = psycopg.connect(self._url, autocommit=True)
                self._made += 1
                self._all.append(conn)
                return conn
        return self._free.get()

    def record(self, workflow_index: int, step: int) -> None:
        conn = self._take()
        try:
            conn.execute(
                "INSERT INTO public.bench_step_runs (workflow_index, step, phase, pid)"
                " VALUES (%s, %s, %s, %s)",
                (workflow_index, step, self._phase, os.getpid()),
            )
        finally:
            self._free.put(conn)

    def close(self) -> None:
        for conn in self._all:
            conn.close()

    @staticmethod
    def counts(url: str, step: int) -> dict[str, int]:
        """Executions of ``step`` per phase, and how many distinct workflows ran it."""
        with psycopg.connect(url, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT phase, count(*), count(DISTINCT workflow_index)"
                " FROM public.bench_step_runs WHERE step = %s GROUP BY phase",
                (step,),
            ).fetchall()
        result: dict[str, int] = {}
        for phase, total, distinct in rows:
            result[str(phase)] = int(total)
            result[f"{phase}_distinct"] = int(distinct)
        return result


# --------------------------------------------------------------------------- driver main


def run_driver(
    library: str,
    version: str,
    body: Any,
    argv: Sequence[str] | None = None,
) -> int:
    """Common ``main`` of a driver.

    ``body(args)`` runs the scenario and returns ``(metrics, cpu, environment)``; any exception
    becomes an ``ok: false`` record carrying the traceback. Exit status 0 only if ok.
    """
    args = parse_driver_args(argv)
    out = claim_stdout()
    started = time.perf_counter()
    ok, error = True, None
    metrics: dict[str, Any] = {}
    cpu: dict[str, Any] = {}
    environment: dict[str, Any] = {}
    try:
        metrics, cpu, environment = body(args)
    except BaseException as exc:
        ok, error = False, describe_error(exc)
        traceback.print_exc()
        with contextlib.suppress(Exception):
            environment = server_environment(args.database_url)
    metrics = {**metrics, **args.extra}
    if ok and metrics.get("correct") is False:
        ok, error = False, str(metrics.get("correctness_error", "incorrect result"))
    record = make_record(
        ok=ok,
        library=library,
        version=version,
        scenario=args.scenario,
        phase=args.phase,
        params=args.params,
        metrics=metrics,
        cpu=cpu,
        environment=environment,
        error=error,
        wall_s=time.perf_counter() - started,
    )
    emit(out, record)
    return 0 if ok else 1


def s5_metrics(args: DriverArgs, url: str, window: Window, n: int, done: float) -> dict[str, Any]:
    """Figures and correctness of an S5 recovery, from the window and the side table.

    ``done`` is the perf_counter() reading at which the watcher saw all n SUCCESS; the time
    since the process was spawned (``--spawn-time``, wall clock) adds interpreter start-up,
    imports and configuration to the recovery itself.
    """
    runs = SideWriter.counts(url, step=1)
    reexecuted = runs.get("recover", 0)
    before_kill = runs.get("crash_distinct", 0)
    metrics: dict[str, Any] = {
        "recovery_s": round(window.wall_s, 4),
        "step1_reexecuted": reexecuted,
        "step1_runs_before_kill": runs.get("crash", 0),
        "recovered_workflows_per_s": round(n / window.wall_s, 2),
    }
    if args.spawn_time is not None:
        done_epoch = time.time() - (time.perf_counter() - done)
        metrics["recovery_from_spawn_s"] = round(done_epoch - args.spawn_time, 4)
    metrics["correct"] = reexecuted == 0 and before_kill == n
    if not metrics["correct"]:
        metrics["correctness_error"] = (
            f"step 1 re-executed {reexecuted} times after recovery"
            f" (it had run for {before_kill}/{n} workflows before the kill)"
        )
    return metrics


# --------------------------------------------------------------------------- S8


S8_ACCOUNTS = 10
# The one statement of each S8 transaction (each library in its own placeholder style).
S8_UPDATE_TRIO = (
    "UPDATE bench_accounts SET balance = balance + 1 WHERE id = %(id)s RETURNING balance"
)
S8_UPDATE_SQLALCHEMY = (
    "UPDATE bench_accounts SET balance = balance + 1 WHERE id = :id RETURNING balance"
)


def s8_setup(url: str) -> None:
    """The application table of S8, in the bench database (before launch, untimed)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE bench_accounts (id INTEGER PRIMARY KEY, balance BIGINT)")
        conn.execute(
            "INSERT INTO bench_accounts SELECT i, 0 FROM generate_series(0, %s) AS i",
            (S8_ACCOUNTS - 1,),
        )


def s8_check(url: str, transactions: int) -> None:
    """Every transaction applied exactly once (after the run, untimed)."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT sum(balance) FROM bench_accounts").fetchone()
    total = int(row[0]) if row is not None and row[0] is not None else 0
    if total != transactions:
        raise RuntimeError(f"S8: {total} increments applied, {transactions} transactions ran")


def s9_expected(tasks: int, steps: int) -> int:
    """What S9's workflow returns: task ``i``'s step ``j`` returns ``i + j + 1``."""
    return sum(i + j + 1 for i in range(tasks) for j in range(steps))
