"""What a replay of a recorded workflow against new code concluded (``dbos-trio check``).

Invariant: a verdict is decided from the record and the calls the new code made, by the
rules here alone, so the library call, the pytest helper and the CLI say the same thing.
A workflow *fails* the check only when it is still to run (PENDING, ENQUEUED, DELAYED:
the work a deploy resumes) and the new code would not replay its record; a finished
workflow that diverges is reported, since it shows the change, but never runs again.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from dbos_trio._core.statuses import DELAYED, ENQUEUED, PENDING

COMPATIBLE = "compatible"
DIVERGED = "diverged"
NEW_CODE = "new_code"  # replayed the whole record, then went on past it
UNDECODABLE = "undecodable"  # the recorded inputs could not be decoded
NOT_REGISTERED = "not_registered"  # the new code has no workflow of the recorded name

IN_FLIGHT = frozenset({PENDING, ENQUEUED, DELAYED})

PATCH_PREFIX = "DBOS.patch-"
# The determinism helpers' step names (``dbos.now()``, ``dbos.random()``, ``dbos.uuid4()``).
HELPER_STEPS = {"DBOS.now": "now()", "DBOS.random": "random()", "DBOS.uuid4": "uuid4()"}
_OPERATION_KINDS = {
    "DBOS.sleep": "sleep",
    "DBOS.recv": "recv",
    "DBOS.send": "send",
    "DBOS.setEvent": "set_event",
    "DBOS.getEvent": "get_event",
    "DBOS.writeStream": "stream",
    "DBOS.closeStream": "stream",
    "DBOS.readStream": "read_stream",
    "DBOS.readStreamOffset": "read_stream",
    "DBOS.getResult": "child_result",
    "DBOS.waitFirst": "wait_first",
}


def kind_of(name: str, *, child: bool = False) -> str:
    """The kind of a durable call named ``name`` (``child``: it recorded a child's id)."""
    if name.startswith(PATCH_PREFIX):
        return "patch"
    if name in HELPER_STEPS:
        return "determinism"
    kind = _OPERATION_KINDS.get(name)
    if kind is not None:
        return kind
    if child:
        return "child"
    if name.startswith("DBOS."):
        return "operation"
    return "step"


@attrs.frozen(kw_only=True)
class DurableCall:
    """One durable call: where it sits in the workflow, what it is, and (for a call the
    new code made) the source line that made it."""

    function_id: int
    kind: str
    name: str
    where: str | None = None  # "file:line" of the new code's call

    def describe(self) -> str:
        """The call as a message shows it: its name (a kind prefixed unless a step or
        child), then where the new code makes it."""
        shown = self.name if self.kind in ("step", "child") else f"{self.kind} {self.name}"
        return f"{shown} ({self.where})" if self.where else shown


@attrs.frozen(kw_only=True)
class ReplayResult:
    """One recorded workflow replayed against the new code."""

    workflow_id: str
    name: str | None
    status: str
    application_version: str | None
    verdict: str
    message: str
    recorded_calls: int  # checkpoints in the record
    replayed_calls: int  # of them, replayed by the new code before the verdict
    recorded: DurableCall | None = None  # at a divergence: what the record has
    new: DurableCall | None = None  # at a divergence or past the record: what the new code calls

    @property
    def in_flight(self) -> bool:
        """Whether the workflow is still to run (PENDING, ENQUEUED or DELAYED)."""
        return self.status in IN_FLIGHT

    @property
    def fails(self) -> bool:
        """Whether this result fails the check: in-flight work the new code cannot replay."""
        return self.in_flight and self.verdict in (DIVERGED, UNDECODABLE, NOT_REGISTERED)

    def to_json(self) -> dict[str, object]:
        """The result as a JSON object (``dbos-trio check --json``)."""
        return {
            "workflow_id": self.workflow_id,
            "name": self.name,
            "status": self.status,
            "application_version": self.application_version,
            "verdict": self.verdict,
            "fails": self.fails,
            "message": self.message,
            "recorded_calls": self.recorded_calls,
            "replayed_calls": self.replayed_calls,
            "recorded": None if self.recorded is None else attrs.asdict(self.recorded),
            "new": None if self.new is None else attrs.asdict(self.new),
        }


def diverged_message(recorded: DurableCall, new: DurableCall) -> str:
    """The plain words for a divergence at ``recorded.function_id``."""
    text = (
        f"diverged at function id {recorded.function_id}: recorded {recorded.describe()}, "
        f"new code calls {new.describe()}"
    )
    return text + _hint(recorded, new)


def ended_early_message(recorded: DurableCall) -> str:
    return (
        f"diverged at function id {recorded.function_id}: recorded {recorded.describe()}, "
        "the new code returned without calling it"
    )


def past_record_message(new: DurableCall) -> str:
    return f"reached new code past the record at function id {new.function_id}: {new.describe()}"


def _hint(recorded: DurableCall, new: DurableCall) -> str:
    """Why the two calls may differ, in plain words, when a determinism helper is one."""
    was, now = HELPER_STEPS.get(recorded.name), HELPER_STEPS.get(new.name)
    if was is not None and was != now:
        return (
            f" — the recorded run read {was} durably here (dbos.{was}) and the new code no "
            f"longer does: read it with dbos.{was}() again (a value read directly differs at "
            "every replay), or put the change behind dbos.patch()"
        )
    if now is not None and was is None:
        return (
            f" — the new code reads {now} durably here (dbos.{now}) where the recorded run "
            "did not, so every step id after it shifts: put the new call behind dbos.patch()"
        )
    if recorded.kind == "step" and new.kind == "step":
        return (
            " — an intended change goes behind dbos.patch(); if a time, random number or id "
            "read in the body picks the branch, read it with dbos.now()/random()/uuid4()"
        )
    return ""


def failing(results: Iterable[ReplayResult]) -> list[ReplayResult]:
    """The results that fail the check (see :attr:`ReplayResult.fails`)."""
    return [result for result in results if result.fails]


@attrs.frozen(kw_only=True)
class CheckReport:
    """Every replay of one check, and how long the check took (real seconds)."""

    results: tuple[ReplayResult, ...]
    seconds: float = 0.0

    @property
    def failing(self) -> list[ReplayResult]:
        """The results that fail the check (in-flight work that would not replay)."""
        return failing(self.results)

    @property
    def ok(self) -> bool:
        """True when no in-flight workflow fails to replay (the check's exit status)."""
        return not self.failing

    def counts(self) -> dict[str, int]:
        """How many results of each verdict."""
        counted: dict[str, int] = {}
        for result in self.results:
            counted[result.verdict] = counted.get(result.verdict, 0) + 1
        return counted

    def by_id(self) -> dict[str, ReplayResult]:
        """The results by workflow id."""
        return {result.workflow_id: result for result in self.results}

    def to_json(self) -> dict[str, object]:
        """The report as a JSON object (``dbos-trio check --json``)."""
        return {
            "ok": self.ok,
            "checked": len(self.results),
            "failing": len(self.failing),
            "counts": self.counts(),
            "seconds": round(self.seconds, 3),
            "results": [result.to_json() for result in self.results],
        }

    def summary(self) -> str:
        """One line per workflow (status, verdict, message) and a closing count."""
        lines = [
            f"{'WORKFLOW':<38} {'NAME':<24} {'STATUS':<9} {'VERDICT':<15} DETAIL",
        ]
        for result in self.results:
            mark = "FAIL " if result.fails else ""
            lines.append(
                f"{result.workflow_id:<38} {(result.name or '-')[:24]:<24} "
                f"{result.status:<9} {mark + result.verdict:<15} {result.message}"
            )
        counts = ", ".join(f"{n} {verdict}" for verdict, n in sorted(self.counts().items()))
        failing_count = len(self.failing)
        verdict = (
            "ok: every in-flight workflow replays"
            if failing_count == 0
            else f"FAILED: {failing_count} in-flight workflow(s) would not replay"
        )
        lines.append(
            f"{len(self.results)} checked ({counts or 'none'}) in {self.seconds:.2f} s; {verdict}"
        )
        return "\n".join(lines)
