"""The health panel: what needs an operator now, each finding with what to do.

The findings are :func:`dbos_trio._ops.activity.health`'s (a queue with work and no live
worker, work pinned to a version no live executor runs, PENDING work of a silent executor,
a schedule whose last run failed or that stopped firing). Every one is shown, with its
fix as text to copy; with none, the panel says that nothing was found and what was
looked for, so an empty panel is never mistaken for a panel that failed to load.
"""

from __future__ import annotations

from collections.abc import Sequence

from dbos_trio._engine.recovery.doctor import Finding
from dbos_trio.dashboard._markup import Html, html, join
from dbos_trio.dashboard._render import url

TITLES = {
    "unserved-queue": "Queue with no live worker",
    "paused-queue": "Queue paused with work waiting",
    "unrun-version": "Work pinned to a version no live executor runs",
    "silent-executor": "Executor silent with PENDING work",
    "schedule-failed": "Schedule's last run failed",
    "schedule-stopped": "Schedule stopped firing",
}
LOOKED_FOR = (
    "queues whose work waits with no live worker or paused, work pinned to a version no live "
    "executor runs, silent executors holding PENDING work, schedules whose last run failed "
    "or that stopped firing"
)


def _subject(finding: Finding) -> Html:
    if finding.kind in ("unserved-queue", "paused-queue"):
        return html(
            '<a href="{0}">{1}</a>', url("/workflows", queue=finding.subject), finding.subject
        )
    if finding.kind.startswith("schedule-"):
        return html('<a href="{0}">{1}</a>', url("/schedules"), finding.subject)
    if finding.kind == "silent-executor":
        return html('<a href="{0}">{1}</a>', url("/executors"), finding.subject)
    return html("{0}", finding.subject)


def panel(findings: Sequence[Finding]) -> Html:
    """The findings as a list of warnings (``role="alert"`` when there are any)."""
    if not findings:
        return html(
            '<section class="health ok" id="health"><h2>Health</h2>'
            "<p>Nothing needs attention. Looked for: {0}.</p></section>",
            LOOKED_FOR,
        )
    items = join(
        html(
            '<li class="finding" data-kind="{0}"><strong>{1}</strong>: {2} — {3}'
            '<div class="fix">What to do: <code>{4}</code></div></li>',
            finding.kind,
            TITLES.get(finding.kind, finding.kind),
            _subject(finding),
            finding.detail,
            finding.fix,
        )
        for finding in findings
    )
    return html(
        '<section class="health warn" id="health" role="alert"><h2>Health: {0} '
        "warning{1}</h2><ul>{2}</ul></section>",
        len(findings),
        "" if len(findings) == 1 else "s",
        items,
    )
