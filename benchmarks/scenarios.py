"""The scenarios of BENCHMARKS.md as data: parameters, figures, floor models, targets.

Both drivers read their parameters from here (through the runner), so the two libraries always
run the same workload. A *floor model* turns the pgbench measurements of the same round into
the figure PostgreSQL alone would reach for that scenario (for instance 12 sequential commits for
a 10-step workflow); it is deliberately simple and written next to each figure so the
``dbos_trio/floor`` ratio can be read for what it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Floor = Mapping[str, float]
Params = Mapping[str, Any]

# Figures a floor run (benchmarks.floor) reports; the floor models below combine them.
FLOOR_METRICS = (
    "commit_ms_median",  # single-row INSERT + commit, 1 client, per-transaction median
    "commit_ms_p99",
    "commits_per_s_1",  # the same, throughput with 1 client
    "commits_per_s_8",  # the same, throughput with 8 clients
    "select1_ms",  # SELECT 1 round trip, 1 client (mean: 1 / tps)
)


@dataclass(frozen=True)
class Metric:
    """One figure of a scenario, as it appears in the table."""

    key: str
    unit: str
    better: Literal["lower", "higher"]
    # PostgreSQL-alone value for this figure, from the floor run's metrics and the params.
    floor: Callable[[Floor, Params], float] | None = None
    floor_note: str = ""
    # Target: dbos_trio must be this many times better than the official package ...
    vs_official: float | None = None
    # ... and at most this many times worse than the floor ...
    vs_floor: float | None = None
    # ... or within this absolute bound (lower-is-better figures: a maximum).
    absolute: float | None = None


@dataclass(frozen=True)
class Scenario:
    id: str
    group: str
    title: str
    full: Mapping[str, Any]
    quick: Mapping[str, Any]
    metrics: tuple[Metric, ...]
    cpu_unit: str
    # How long one driver process may take before the runner gives up on it.
    timeout_s: float = 600.0
    extra: Mapping[str, Any] = field(default_factory=dict)

    def params(self, quick: bool) -> dict[str, Any]:
        return dict(self.quick if quick else self.full)


def _s1_floor(floor: Floor, params: Params) -> float:
    # A K-step workflow needs K + 2 durable commits: start, one per step, outcome.
    return (int(params["k"]) + 2) * floor["commit_ms_median"]


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        id="S1-K0",
        group="S1",
        title="sequential workflows of 0 steps, each timed start to result",
        full={"k": 0, "n": 200, "warmup": 20},
        quick={"k": 0, "n": 20, "warmup": 3},
        metrics=(
            Metric(
                "latency_ms_median",
                "ms",
                "lower",
                _s1_floor,
                "(K+2) x commit latency",
                vs_official=5,
            ),
            Metric("latency_ms_p99", "ms", "lower"),
        ),
        cpu_unit="workflow",
    ),
    Scenario(
        id="S1-K10",
        group="S1",
        title="sequential workflows of 10 steps, each timed start to result",
        full={"k": 10, "n": 200, "warmup": 20},
        quick={"k": 10, "n": 20, "warmup": 3},
        metrics=(
            Metric(
                "latency_ms_median",
                "ms",
                "lower",
                _s1_floor,
                "(K+2) x commit latency",
                vs_official=5,
                vs_floor=2,
            ),
            Metric("latency_ms_p99", "ms", "lower"),
        ),
        cpu_unit="workflow",
    ),
    Scenario(
        id="S2",
        group="S2",
        title="one workflow of many sequential steps",
        full={"steps": 2000, "warmup_steps": 20},
        quick={"steps": 100, "warmup_steps": 5},
        metrics=(
            Metric(
                "steps_per_s",
                "steps/s",
                "higher",
                lambda f, p: f["commits_per_s_1"],
                "1-client commits/s",
                vs_official=5,
                vs_floor=2,
            ),
        ),
        cpu_unit="step",
    ),
    Scenario(
        id="S3",
        group="S3",
        title="3-step workflows started concurrently in one process",
        full={"n": 1000, "steps": 3, "warmup": 20},
        quick={"n": 50, "steps": 3, "warmup": 3},
        metrics=(
            Metric(
                "workflows_per_s",
                "wf/s",
                "higher",
                lambda f, p: f["commits_per_s_8"] / (int(p["steps"]) + 2),
                "8-client commits/s / (steps+2)",
                vs_official=5,
            ),
            Metric("start_phase_s", "s", "lower"),
        ),
        cpu_unit="workflow",
    ),
    Scenario(
        id="S4",
        group="S4",
        title="queue, worker concurrency 50: enqueue one-step workflows, wait for all",
        # Both pools at the official default (20): see benchmarks/README.md, "Same knobs".
        full={"n": 2000, "worker_concurrency": 50, "poll_s": 0.1, "warmup": 20, "pool_size": 20},
        quick={"n": 100, "worker_concurrency": 50, "poll_s": 0.1, "warmup": 3, "pool_size": 20},
        metrics=(
            Metric(
                "enqueue_per_s",
                "wf/s",
                "higher",
                lambda f, p: f["commits_per_s_1"],
                "1-client commits/s",
                vs_official=5,
            ),
            Metric(
                "completions_per_s",
                "wf/s",
                "higher",
                lambda f, p: f["commits_per_s_8"] / 3,
                "8-client commits/s / 3",
                vs_official=5,
            ),
            # Enqueueing is sequential, so completions/s cannot beat enqueue/s; how long the
            # queue still ran after the last enqueue says whether it kept up.
            Metric("completion_lag_s", "s", "lower"),
        ),
        cpu_unit="workflow",
    ),
    Scenario(
        id="S5",
        group="S5",
        title="SIGKILL with 3-step workflows blocked in step 2; recovery in a fresh process",
        full={"n": 1000},
        quick={"n": 50},
        metrics=(
            Metric(
                "recovery_s",
                "s",
                "lower",
                lambda f, p: int(p["n"]) * 3 / f["commits_per_s_8"],
                "n x 3 commits at 8-client commits/s",
                vs_official=10,
            ),
            Metric("recovery_from_spawn_s", "s", "lower"),
            Metric("step1_reexecuted", "runs", "lower", absolute=0),
        ),
        cpu_unit="workflow",
        timeout_s=900.0,
    ),
    Scenario(
        id="S6",
        group="S6",
        title="send/recv ping-pong between two workflows; send -> set_event -> get_event",
        full={"n": 200, "warmup": 5},
        quick={"n": 10, "warmup": 2},
        metrics=(
            Metric(
                "pingpong_rt_ms_median",
                "ms",
                "lower",
                lambda f, p: 4 * f["commit_ms_median"],
                "4 x commit latency",
                vs_official=5,
            ),
            Metric("pingpong_rt_ms_p99", "ms", "lower"),
            Metric(
                "event_rt_ms_median",
                "ms",
                "lower",
                lambda f, p: 3 * f["commit_ms_median"] + f["select1_ms"],
                "3 x commit + 1 SELECT",
                vs_official=5,
            ),
        ),
        cpu_unit="round trip",
    ),
    Scenario(
        id="S7",
        group="S7",
        title="S1 with K=10 through a counting wire proxy",
        full={"k": 10, "n": 200, "warmup": 20, "idle_s": 2.0},
        quick={"k": 10, "n": 10, "warmup": 3, "idle_s": 0.2},
        metrics=(
            Metric(
                "statements_per_wf",
                "stmts",
                "lower",
                lambda f, p: int(p["k"]) + 2,
                "K+2",
            ),
            Metric(
                "round_trips_per_wf",
                "trips",
                "lower",
                lambda f, p: int(p["k"]) + 2,
                "K+2",
                vs_official=None,
                absolute=30,
            ),
            Metric(
                "commits_per_wf",
                "commits",
                "lower",
                lambda f, p: int(p["k"]) + 2,
                "K+2",
            ),
            # The same without the library's background traffic (measured while idle): the
            # per-step commit target (1 per step, plus start and outcome) is judged on this.
            Metric(
                "commits_per_wf_net",
                "commits",
                "lower",
                lambda f, p: int(p["k"]) + 2,
                "K+2",
                absolute=12,
            ),
            Metric("write_commits_per_wf", "commits", "lower"),
        ),
        cpu_unit="workflow",
    ),
)


def _s8_floor(floor: Floor, params: Params) -> float:
    # K transactions: each one application commit and one step-row commit, plus the
    # workflow's start and outcome.
    return (2 * int(params["k"]) + 2) * floor["commit_ms_median"]


SCENARIOS += (
    Scenario(
        id="S8-TX10",
        group="S8",
        title="sequential workflows of 10 datasource transactions, each timed start to result",
        # official_api: "sync" (SQLAlchemyDatasource in a def workflow) or "async"
        # (AsyncSQLAlchemyDatasource in an async def workflow).
        full={"k": 10, "n": 200, "warmup": 20, "official_api": "sync"},
        quick={"k": 10, "n": 10, "warmup": 2, "official_api": "sync"},
        metrics=(
            Metric(
                "latency_ms_median",
                "ms",
                "lower",
                _s8_floor,
                "(2K+2) x commit latency",
                vs_official=5,
            ),
            Metric("latency_ms_p99", "ms", "lower"),
            Metric("per_transaction_ms_median", "ms", "lower"),
        ),
        cpu_unit="workflow",
    ),
    Scenario(
        id="S8-WIRE",
        group="S8",
        title="S8-TX10 through two counting wire proxies (system and application database)",
        full={"k": 10, "n": 100, "warmup": 10, "idle_s": 2.0, "official_api": "sync"},
        quick={"k": 10, "n": 5, "warmup": 2, "idle_s": 0.2, "official_api": "sync"},
        metrics=(
            Metric(
                "app_commits_per_tx",
                "commits",
                "lower",
                lambda f, p: 1.0,
                "1 per transaction",
            ),
            Metric("app_write_commits_per_tx", "commits", "lower"),
            Metric("app_round_trips_per_tx", "trips", "lower"),
            Metric("app_statements_per_tx", "stmts", "lower"),
            Metric(
                "sys_commits_per_wf_net",
                "commits",
                "lower",
                lambda f, p: int(p["k"]) + 2,
                "K+2",
            ),
            Metric(
                "sys_write_commits_per_wf",
                "commits",
                "lower",
                lambda f, p: int(p["k"]) + 2,
                "K+2",
            ),
            Metric("sys_round_trips_per_wf", "trips", "lower"),
            Metric(
                "commits_per_wf_net",
                "commits",
                "lower",
                lambda f, p: 2 * int(p["k"]) + 2,
                "2K+2",
            ),
            Metric("round_trips_per_wf", "trips", "lower"),
        ),
        cpu_unit="workflow",
    ),
)


def _s9_floor(floor: Floor, params: Params) -> float:
    # Every task's steps commit concurrently: start + steps_per_task rounds + outcome, each
    # round bounded below by one commit latency.
    return (int(params["steps_per_task"]) + 2) * floor["commit_ms_median"]


S9_METRICS = (
    Metric(
        "latency_ms_median",
        "ms",
        "lower",
        _s9_floor,
        "(steps per task + 2) x commit latency",
    ),
    Metric("latency_ms_p99", "ms", "lower"),
)

SCENARIOS += (
    Scenario(
        id="S9",
        group="S9",
        title="fan-out: one workflow of 50 tasks, 2 steps each (dbos_trio: dbos.open_nursery, "
        "turn order; official: asyncio.gather of the tasks)",
        full={"n": 50, "tasks": 50, "steps_per_task": 2, "warmup": 5, "mode": "nursery"},
        quick={"n": 5, "tasks": 50, "steps_per_task": 2, "warmup": 1, "mode": "nursery"},
        metrics=S9_METRICS,
        cpu_unit="workflow",
    ),
    Scenario(
        id="S9-PLAIN",
        group="S9",
        title="S9 without turn order (dbos_trio: trio.open_nursery with unordered_tasks='warn', "
        "ids in scheduling order as the official SDK's): the price of determinism",
        full={"n": 50, "tasks": 50, "steps_per_task": 2, "warmup": 5, "mode": "plain"},
        quick={"n": 5, "tasks": 50, "steps_per_task": 2, "warmup": 1, "mode": "plain"},
        metrics=S9_METRICS,
        cpu_unit="workflow",
    ),
)

BY_ID: dict[str, Scenario] = {s.id: s for s in SCENARIOS}
GROUPS: tuple[str, ...] = tuple(dict.fromkeys(s.group for s in SCENARIOS))


def select(names: list[str] | None) -> list[Scenario]:
    """Scenarios named by id (``S1-K10``) or group (``S1``), in table order; all if empty."""
    if not names:
        return list(SCENARIOS)
    wanted = {n.upper() for n in names}
    unknown = wanted - set(BY_ID) - set(GROUPS)
    if unknown:
        raise ValueError(f"unknown scenario(s) {sorted(unknown)}; choose from {[*GROUPS, *BY_ID]}")
    return [s for s in SCENARIOS if s.id in wanted or s.group in wanted]
