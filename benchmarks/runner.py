"""The runner: every scenario for dbos_trio, the official package and the floor, interleaved.

For each scenario and each round it runs, one after the other, dbos_trio, the official ``dbos``
package and the pgbench floor (A B F A B F ...), each in a process of its own on a fresh
``bench_*`` database that is dropped afterwards. Every process prints one JSON line; the runner
appends it (with the round and the git commit) to ``results/<stamp>.jsonl`` as soon as it
arrives, and at the end prints one table of medians, min-max and ratios (also written to
``results/<stamp>.md``). See ``benchmarks/README.md``.

S5 needs two processes and a kill: the runner starts the *crash* phase, watches
``dbos.operation_outputs`` from its own connection until every workflow's step 1 checkpoint is
in, reads the process's peak RSS from ``/proc``, SIGKILLs it, and times a *recover* phase in a
fresh process.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from benchmarks import common, report
from benchmarks.scenarios import Scenario, select

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
# Outside the checkout, in the user's cache: a fresh clone (CI's, every run) reuses it
# instead of installing dbos again (about 100 s). DBOS_BENCH_OFFICIAL_VENV overrides it.
OFFICIAL_VENV = Path(
    os.environ.get("DBOS_BENCH_OFFICIAL_VENV")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "dbos_trio"
    / f"bench-official-dbos-3.4-py{sys.version_info[0]}.{sys.version_info[1]}"
)
OFFICIAL_SPEC = "dbos==3.4.*"
DEFAULT_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"

LIBRARIES = ("dbos_trio", "dbos", "pgbench")
ALIASES = {"official": "dbos", "floor": "pgbench", "trio": "dbos_trio"}
MODULES = {
    "dbos_trio": "benchmarks.driver_trio",
    "dbos": "benchmarks.driver_official",
    "pgbench": "benchmarks.floor",
}
FLOOR_PARAMS = {"full": {"seconds": 5, "select_seconds": 3}, "quick": {"transactions": 300}}


# ------------------------------------------------------------------ the official virtualenv


class OfficialVenvError(RuntimeError):
    """The official package's virtualenv could not be created (no network, no pip...)."""


def _official_version(python: Path) -> str | None:
    probe = "import importlib.metadata as m; print(m.version('dbos'))"
    out = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, check=False)
    return out.stdout.strip() if out.returncode == 0 else None


def ensure_official_python(venv: Path = OFFICIAL_VENV, spec: str = OFFICIAL_SPEC) -> str:
    """The interpreter of a virtualenv holding ``dbos`` 3.4, created (with pip) if missing.

    ``DBOS_BENCH_OFFICIAL_PYTHON`` names an existing interpreter instead. A lock file makes
    concurrent callers (the smoke test and a manual run) wait for one another.
    """
    override = os.environ.get("DBOS_BENCH_OFFICIAL_PYTHON")
    if override:
        if not (_official_version(Path(override)) or "").startswith("3.4."):
            raise OfficialVenvError(f"{override} has no dbos 3.4 (DBOS_BENCH_OFFICIAL_PYTHON)")
        return override
    python = venv / "bin" / "python"
    venv.parent.mkdir(parents=True, exist_ok=True)
    lock_path = venv.parent / f".{venv.name}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if python.exists() and (_official_version(python) or "").startswith("3.4."):
            return str(python)
        shutil.rmtree(venv, ignore_errors=True)
        steps = [
            [sys.executable, "-m", "venv", str(venv)],
            [str(python), "-m", "pip", "install", "--quiet", spec],
        ]
        for cmd in steps:
            out = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if out.returncode != 0:
                shutil.rmtree(venv, ignore_errors=True)
                raise OfficialVenvError(
                    f"{' '.join(cmd)} failed ({out.returncode}): {out.stderr.strip()[-1500:]}"
                )
        if not (_official_version(python) or "").startswith("3.4."):
            raise OfficialVenvError(f"{spec} installed, but dbos 3.4 does not import")
        return str(python)


# ------------------------------------------------------------------ databases


def admin_url(explicit: str | None = None) -> str:
    return (
        explicit
        or os.environ.get("DBOS_BENCH_ADMIN_URL")
        or os.environ.get("DBOS_TRIO_TEST_POSTGRES_URL")
        or os.environ.get("DBOS_TEST_DATABASE_URL")
        or DEFAULT_ADMIN_URL
    )


def database_url(admin: str, name: str) -> str:
    return admin.rsplit("/", 1)[0] + "/" + name


@contextlib.contextmanager
def fresh_database(admin: str, scenario: str, library: str, keep: bool) -> Iterator[str]:
    tag = f"{scenario}_{library}".lower().replace("-", "_")
    name = f"bench_{tag}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield database_url(admin, name)
    finally:
        if not keep:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
                )


# ------------------------------------------------------------------ running one process


def driver_command(
    python: str,
    library: str,
    scenario: str,
    params: dict[str, Any],
    url: str,
    phase: str = "run",
    extra: dict[str, Any] | None = None,
    spawn_time: float | None = None,
) -> list[str]:
    cmd = [python, "-m", MODULES[library], "--scenario", scenario, "--params"]
    cmd += [json.dumps(params), "--database-url", url, "--phase", phase]
    if extra:
        cmd += ["--extra", json.dumps(extra)]
    if spawn_time is not None:
        cmd += ["--spawn-time", repr(spawn_time)]
    return cmd


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(REPO_DIR) + (os.pathsep + path if path else "")
    env.pop("DBOS_SYSTEM_DATABASE_URL", None)
    env.pop("DBOS_DATABASE_URL", None)
    return env


def failure(
    library: str, scenario: str, params: dict[str, Any], phase: str, error: str
) -> dict[str, Any]:
    return common.make_record(
        ok=False,
        library=library,
        version="unknown",
        scenario=scenario,
        phase=phase,
        params=params,
        metrics={},
        cpu={},
        environment={},
        error=error,
        wall_s=0.0,
    )


def parse_output(
    stdout: str, stderr: str, library: str, scenario: str, params: dict[str, Any], phase: str
) -> dict[str, Any]:
    lines = [line for line in stdout.splitlines() if line.strip()]
    if len(lines) == 1:
        try:
            record: dict[str, Any] = json.loads(lines[0])
            return record
        except json.JSONDecodeError:
            pass
    return failure(
        library,
        scenario,
        params,
        phase,
        f"expected one JSON line on stdout, got {len(lines)} line(s); stderr: {stderr[-2000:]}",
    )


def run_process(cmd: Sequence[str], timeout: float) -> tuple[str, str, str | None]:
    """Run a driver; (stdout, stderr, error-if-it-timed-out)."""
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=err, text=True, cwd=REPO_DIR, env=child_env()
        )
        try:
            stdout, _ = proc.communicate(timeout=timeout)
            problem = None
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, _ = proc.communicate()
            problem = f"timed out after {timeout} s"
        err.seek(0)
        return stdout, err.read(), problem


def run_simple(
    python: str, library: str, scenario: Scenario, params: dict[str, Any], url: str, timeout: float
) -> dict[str, Any]:
    cmd = driver_command(python, library, scenario.id, params, url)
    stdout, stderr, problem = run_process(cmd, timeout)
    if problem:
        return failure(library, scenario.id, params, "run", f"{problem}; stderr: {stderr[-2000:]}")
    return parse_output(stdout, stderr, library, scenario.id, params, "run")


def _count_step1(conn: psycopg.Connection[Any]) -> int:
    try:
        row = conn.execute(
            "SELECT count(*) FROM dbos.operation_outputs WHERE function_name = 's5_step1'"
        ).fetchone()
        return int(row[0]) if row else 0
    except psycopg.errors.UndefinedTable:
        return 0  # not migrated yet


def _peak_rss_mb(pid: int) -> float | None:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024.0, 1)
    return None


def run_s5(
    python: str, library: str, scenario: Scenario, params: dict[str, Any], url: str, timeout: float
) -> dict[str, Any]:
    """Crash phase, SIGKILL once all step-1 checkpoints are in, then a timed recover phase."""
    n = int(params["n"])
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(common.SIDE_TABLE_DDL)
    cmd = driver_command(python, library, scenario.id, params, url, phase="crash")
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=err, text=True, cwd=REPO_DIR, env=child_env()
        )
        problem = None
        checkpoints = 0
        with psycopg.connect(url, autocommit=True) as conn:
            while True:
                checkpoints = _count_step1(conn)
                if checkpoints >= n:
                    break
                if proc.poll() is not None:
                    problem = f"crash phase exited ({proc.returncode}) before the kill"
                    break
                if time.perf_counter() - started > timeout:
                    problem = f"only {checkpoints}/{n} step-1 checkpoints after {timeout} s"
                    break
                time.sleep(common.POLL_INTERVAL_S)
        crash_phase_s = time.perf_counter() - started
        crash_rss = _peak_rss_mb(proc.pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        stdout, _ = proc.communicate()
        err.seek(0)
        stderr = err.read()
    if problem:
        lines = [line for line in stdout.splitlines() if line.strip()]
        detail = lines[-1] if lines else stderr[-2000:]
        return failure(library, scenario.id, params, "recover", f"{problem}: {detail}")
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM dbos.workflow_status"
            " WHERE name = 's5_workflow' AND status = 'PENDING'"
        ).fetchone()
    extra = {
        "crash_phase_s": round(crash_phase_s, 3),
        "crash_peak_rss_mb": crash_rss,
        "pending_after_kill": int(row[0]) if row else 0,
    }
    cmd = driver_command(
        python, library, scenario.id, params, url, "recover", extra, spawn_time=time.time()
    )
    stdout, stderr, problem = run_process(cmd, timeout)
    if problem:
        error = f"recover phase {problem}; stderr: {stderr[-2000:]}"
        return failure(library, scenario.id, params, "recover", error)
    return parse_output(stdout, stderr, library, scenario.id, params, "recover")


# ------------------------------------------------------------------ the whole run


def git_commit() -> str | None:
    out = subprocess.run(
        ["git", "-C", str(REPO_DIR), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        return None
    dirty = subprocess.run(
        ["git", "-C", str(REPO_DIR), "status", "--porcelain", "--", "src"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return out.stdout.strip() + ("+dirty-src" if dirty else "")


def parse_overrides(items: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``S4.poll_s=1.0`` -> {"S4": {"poll_s": 1.0}} (values are JSON where they parse)."""
    overrides: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        target, dot, name = key.partition(".")
        if not sep or not dot:
            raise SystemExit(f"--param wants SCENARIO.NAME=VALUE, got {item!r}")
        try:
            value: Any = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        overrides.setdefault(target.upper(), {})[name] = value
    return overrides


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="dbos_trio vs the official dbos package vs the PostgreSQL floor (S1-S8)",
    )
    p.add_argument(
        "-s",
        "--scenario",
        action="append",
        help="S1..S7 or a variant (S1-K10); repeatable; default: all",
    )
    p.add_argument("--quick", action="store_true", help="tiny sizes, 1 round unless --rounds")
    p.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 3)")
    p.add_argument(
        "--libraries",
        default=",".join(LIBRARIES),
        help="comma list of dbos_trio, dbos (official), pgbench (floor)",
    )
    p.add_argument("--param", action="append", default=[], help="override, e.g. S4.poll_s=1.0")
    p.add_argument("--admin-url", help="a database URL allowed to CREATE DATABASE")
    p.add_argument("--official-python", help="interpreter with dbos 3.4 (skips the venv)")
    p.add_argument("--trio-python", default=sys.executable, help="interpreter with dbos_trio")
    p.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    p.add_argument("--keep-databases", action="store_true", help="do not drop bench_* dbs")
    p.add_argument("--timeout", type=float, default=None, help="per process, seconds")
    p.add_argument("--report", type=Path, help="only print the table of an earlier .jsonl")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    scenarios = select(args.scenario)
    if args.report is not None:
        return print_report(args.report, scenarios)
    libraries = [ALIASES.get(x.strip(), x.strip()) for x in args.libraries.split(",") if x]
    unknown = set(libraries) - set(LIBRARIES)
    if unknown:
        raise SystemExit(f"unknown libraries {sorted(unknown)}; choose from {LIBRARIES}")
    rounds = args.rounds or (1 if args.quick else 3)
    overrides = parse_overrides(args.param)
    admin = admin_url(args.admin_url)
    pythons = {"dbos_trio": args.trio_python, "pgbench": sys.executable}
    if "dbos" in libraries:
        pythons["dbos"] = args.official_python or ensure_official_python()

    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S") + ("-quick" if args.quick else "")
    args.results_dir.mkdir(parents=True, exist_ok=True)
    jsonl = args.results_dir / f"{stamp}.jsonl"
    commit = git_commit()
    records: list[dict[str, Any]] = []
    began = time.perf_counter()
    log(f"results -> {jsonl}  ({rounds} round(s), {'quick' if args.quick else 'full'} sizes)")

    for scenario in scenarios:
        params = scenario.params(args.quick)
        params.update(overrides.get(scenario.group, {}))
        params.update(overrides.get(scenario.id, {}))
        floor_params = dict(FLOOR_PARAMS["quick" if args.quick else "full"])
        floor_params.update(overrides.get("FLOOR", {}))
        timeout = args.timeout or (scenario.timeout_s if not args.quick else 180.0)
        for round_no in range(1, rounds + 1):
            for library in libraries:
                t0 = time.perf_counter()
                run_params = floor_params if library == "pgbench" else params
                with fresh_database(admin, scenario.id, library, args.keep_databases) as url:
                    if library == "pgbench":
                        record = run_simple(
                            pythons[library], library, scenario, run_params, url, timeout
                        )
                    elif scenario.group == "S5":
                        record = run_s5(pythons[library], library, scenario, params, url, timeout)
                    else:
                        record = run_simple(
                            pythons[library], library, scenario, params, url, timeout
                        )
                record["round"] = round_no
                record["git_commit"] = commit
                record["runner_wall_s"] = round(time.perf_counter() - t0, 2)
                records.append(record)
                with open(jsonl, "a") as out:
                    out.write(json.dumps(record, separators=(",", ":"), default=str) + "\n")
                log(report.progress_line(scenario, record, round_no, rounds))

    total = time.perf_counter() - began
    table = report.render(records, scenarios, rounds=rounds, quick=args.quick, commit=commit)
    table += f"\nTotal wall time of this run: {total / 60:.1f} min.\n"
    (args.results_dir / f"{stamp}.md").write_text(table)
    print(table)
    log(f"wrote {jsonl} and {jsonl.with_suffix('.md')}")
    return 0 if all(r.get("ok") for r in records) else 1


def print_report(path: Path, scenarios: Sequence[Scenario]) -> int:
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    seen = {r["scenario"] for r in records}
    rounds = max((int(r.get("round", 1)) for r in records), default=0)
    commits = ", ".join(sorted({str(r.get("git_commit")) for r in records}))
    chosen = [s for s in scenarios if s.id in seen]
    quick = "-quick" in path.name
    print(report.render(records, chosen, rounds=rounds, quick=quick, commit=commits))
    return 0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
