"""Turn the records of a run into the one table (markdown) the runner prints and stores."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import Any

from benchmarks.common import median
from benchmarks.scenarios import Metric, Scenario

LABELS = {"dbos_trio": "dbos_trio", "dbos": "official", "pgbench": "floor"}


def fmt(x: float | None) -> str:
    if x is None:
        return "–"
    if float(x).is_integer():
        return f"{int(x):,}"
    a = abs(x)
    if a >= 100:
        return f"{x:,.0f}"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def _ok(records: Iterable[dict[str, Any]], scenario: str, library: str) -> list[dict[str, Any]]:
    return [r for r in records if r["scenario"] == scenario and r["library"] == library and r["ok"]]


def _failed(records: Iterable[dict[str, Any]], scenario: str, library: str) -> bool:
    return any(
        r["scenario"] == scenario and r["library"] == library and not r["ok"] for r in records
    )


def _values(rs: Sequence[dict[str, Any]], key: str) -> list[float]:
    out = []
    for r in rs:
        value = r["metrics"].get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out.append(float(value))
    return out


def _cell(values: Sequence[float], failed: bool) -> str:
    if not values:
        return "FAILED" if failed else "–"
    mid = median(values)
    if len(values) == 1:
        return fmt(mid)
    return f"{fmt(mid)} ({fmt(min(values))}–{fmt(max(values))})"


def _advantage(metric_better: str, trio: float, other: float) -> float | None:
    """How many times better dbos_trio is than ``other`` (>1: better)."""
    if trio <= 0 or other <= 0:
        return None
    return other / trio if metric_better == "lower" else trio / other


def _target(metric: Metric, trio: float | None, off: float | None, floor: float | None) -> str:
    if trio is None:
        return "–"
    verdicts = []
    if metric.vs_official is not None and off is not None:
        adv = _advantage(metric.better, trio, off)
        met = adv is not None and adv >= metric.vs_official
        verdicts.append(f"≥{fmt(metric.vs_official)}× official: {'met' if met else 'MISSED'}")
    if metric.vs_floor is not None and floor is not None:
        adv = _advantage(metric.better, trio, floor)
        met = adv is not None and adv >= 1.0 / metric.vs_floor
        bound = f"≤{fmt(metric.vs_floor)}× floor"
        verdicts.append(f"{bound}: {'met' if met else 'MISSED'}")
    if metric.absolute is not None:
        met = trio <= metric.absolute
        verdicts.append(f"≤{fmt(metric.absolute)}: {'met' if met else 'MISSED'}")
    return "; ".join(verdicts) or "–"


def _ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "–"
    return f"{a / b:.2f}"


def _floor_values(records: Sequence[dict[str, Any]], scenario: Scenario) -> list[dict[str, float]]:
    return [r["metrics"] for r in _ok(records, scenario.id, "pgbench")]


def scenario_rows(records: Sequence[dict[str, Any]], scenario: Scenario) -> list[list[str]]:
    trio_rs = _ok(records, scenario.id, "dbos_trio")
    off_rs = _ok(records, scenario.id, "dbos")
    trio_failed = _failed(records, scenario.id, "dbos_trio")
    off_failed = _failed(records, scenario.id, "dbos")
    params = (trio_rs or off_rs or [{"params": scenario.full}])[0]["params"]
    floors = _floor_values(records, scenario)
    rows = []
    for metric in scenario.metrics:
        tv, ov = _values(trio_rs, metric.key), _values(off_rs, metric.key)
        tm = median(tv) if tv else None
        om = median(ov) if ov else None
        fm = None
        if metric.floor is not None and floors:
            fm = median([metric.floor(f, params) for f in floors])
        floor_cell = fmt(fm) if fm is not None else "–"
        if metric.floor_note and fm is not None:
            floor_cell += f" ({metric.floor_note})"
        rows.append(
            [
                scenario.id,
                f"{metric.key} [{metric.unit}, {metric.better} is better]",
                _cell(tv, trio_failed),
                _cell(ov, off_failed),
                floor_cell,
                _ratio(tm, om),
                _ratio(tm, fm),
                _target(metric, tm, om, fm),
            ]
        )
    # CPU per unit of work and peak memory, next to every scenario.
    unit = scenario.cpu_unit
    tc = [float(r["cpu"]["per_unit_ms"]) for r in trio_rs if r["cpu"].get("per_unit_ms")]
    oc = [float(r["cpu"]["per_unit_ms"]) for r in off_rs if r["cpu"].get("per_unit_ms")]
    rows.append(
        [
            scenario.id,
            f"client CPU ms per {unit} [lower is better]",
            _cell(tc, trio_failed),
            _cell(oc, off_failed),
            "–",
            _ratio(median(tc) if tc else None, median(oc) if oc else None),
            "–",
            "–",
        ]
    )
    tr = [float(r["peak_rss_mb"]) for r in trio_rs]
    orss = [float(r["peak_rss_mb"]) for r in off_rs]
    rss_target = "–"
    if tr and orss:
        rss_target = "≤ official: " + ("met" if median(tr) <= median(orss) else "MISSED")
    rows.append(
        [
            scenario.id,
            "peak RSS MB [lower is better]",
            _cell(tr, trio_failed),
            _cell(orss, off_failed),
            "–",
            _ratio(median(tr) if tr else None, median(orss) if orss else None),
            "–",
            rss_target,
        ]
    )
    return rows


def _markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _environment(records: Sequence[dict[str, Any]]) -> list[str]:
    first: dict[str, dict[str, Any]] = {}
    for r in records:
        if r["ok"] and r["library"] not in first:
            first[r["library"]] = r
    env = next(iter(first.values()))["environment"] if first else {}
    out = [
        f"- PostgreSQL {env.get('pg_server_version', '?')}, synchronous_commit="
        f"{env.get('pg_synchronous_commit', '?')}, fsync={env.get('pg_fsync', '?')}, "
        f"wal_sync_method={env.get('pg_wal_sync_method', '?')}, "
        f"shared_buffers={env.get('pg_shared_buffers', '?')}",
        f"- client: {env.get('cpu_count', '?')} CPUs shared with the server, "
        f"Python {env.get('python', '?')}, psycopg {env.get('psycopg', '?')}",
    ]
    loads = [
        float(r["environment"]["loadavg_1m"])
        for r in records
        if isinstance(r["environment"].get("loadavg_1m"), int | float)
    ]
    if loads:
        out.append(
            f"- 1-minute load average when each process started: median {fmt(median(loads))}, "
            f"range {fmt(min(loads))}–{fmt(max(loads))} (noise indicator)"
        )
    for library in ("dbos_trio", "dbos", "pgbench"):
        if library in first:
            r = first[library]
            extra = _pool_sizes(records, library)
            out.append(f"- {LABELS[library]}: {library} {r['version']}{extra}")
    return out


def _pool_sizes(records: Sequence[dict[str, Any]], library: str) -> str:
    """The pool-size note of a library: `, pool size 10`, or `, pool size 10 (S4: 20)`."""
    by_scenario: dict[str, Any] = {}
    for r in records:
        if r["ok"] and r["library"] == library:
            by_scenario.setdefault(r["scenario"], r["environment"].get("pool_size"))
    sizes = [size for size in by_scenario.values() if size is not None]
    if not sizes:
        return ""
    usual = max(set(sizes), key=sizes.count)
    others = [f"{s}: {size}" for s, size in by_scenario.items() if size not in (None, usual)]
    return f", pool size {usual}" + (f" ({', '.join(others)})" if others else "")


def _last_line(text: str | None) -> str:
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return (lines[-1] if lines else "?")[:300].replace("|", "\\|")


def render(
    records: Sequence[dict[str, Any]],
    scenarios: Sequence[Scenario],
    *,
    rounds: int,
    quick: bool,
    commit: str | None,
) -> str:
    header = [
        "scenario",
        "figure",
        "dbos_trio median (min–max)",
        "official median (min–max)",
        "floor (model)",
        "trio/official",
        "trio/floor",
        "target",
    ]
    rows: list[list[str]] = []
    for scenario in scenarios:
        rows.extend(scenario_rows(records, scenario))
    when = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    parts = [
        f"# Benchmarks {when} ({'quick' if quick else 'full'} sizes, {rounds} interleaved "
        f"round(s), git {commit or '?'})",
        "",
        *_environment(records),
        "",
        _markdown(header, rows),
        "",
        "Parameters:",
    ]
    for scenario in scenarios:
        rs = [r for r in records if r["scenario"] == scenario.id and r["library"] != "pgbench"]
        params = rs[0]["params"] if rs else scenario.params(quick)
        parts.append(f"- {scenario.id}: {scenario.title}; {params}")
    failures = [r for r in records if not r["ok"]]
    if failures:
        parts += ["", "Failed runs:"]
        for r in failures:
            parts.append(
                f"- {r['scenario']} {LABELS.get(r['library'], r['library'])} round "
                f"{r.get('round', '?')}: {_last_line(r.get('error'))}"
            )
    return "\n".join(parts) + "\n"


def progress_line(scenario: Scenario, record: dict[str, Any], round_no: int, rounds: int) -> str:
    who = LABELS.get(record["library"], record["library"])
    where = f"[{scenario.id} round {round_no}/{rounds}] {who:<9}"
    if not record["ok"]:
        return f"{where} FAILED: {_last_line(record.get('error'))}"
    if record["library"] == "pgbench":
        m = record["metrics"]
        figures = (
            f"commit {m['commit_ms_median']} ms, {m['commits_per_s_1']}/s (1), "
            f"{m['commits_per_s_8']}/s (8), SELECT 1 {m['select1_ms']} ms"
        )
    else:
        figures = ", ".join(
            f"{metric.key}={fmt(record['metrics'].get(metric.key))}"
            for metric in scenario.metrics
            if isinstance(record["metrics"].get(metric.key), int | float)
        )
    return f"{where} {figures}  ({record.get('runner_wall_s', '?')} s)"
