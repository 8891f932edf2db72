"""The status predicates written in SQL mean the sets of :mod:`dbos_trio._core.statuses`.

Every statement file of both backends is read; each ``status = '...'`` names a known
status, and each ``status [NOT] IN (...)`` list is exactly one of the named sets, so a
status added in Python cannot be forgotten in a predicate (or a predicate drift from the
set the engine decides by). Pure text, no database.
"""

from __future__ import annotations

import re
from pathlib import Path

from dbos_trio._core import statuses

SYSDB = Path(statuses.__file__).parents[1] / "_sysdb"
STATEMENT_FILES = sorted(SYSDB.glob("**/queries/*.sql"))
NAMED_SETS = {
    "ACTIVE_STATUSES": statuses.ACTIVE_STATUSES,
    "RUNNABLE_STATUSES": statuses.RUNNABLE_STATUSES,
    "QUEUED_STATUSES": statuses.QUEUED_STATUSES,
    "IN_FLIGHT_STATUSES": statuses.IN_FLIGHT_STATUSES,
    "OUTCOME_STATUSES": statuses.OUTCOME_STATUSES,
    "TERMINAL_STATUSES": statuses.TERMINAL_STATUSES,
    "CANCELLABLE_STATUSES": statuses.CANCELLABLE_STATUSES,
}
STATUS_LIST = re.compile(r"\bstatus\s+(?:NOT\s+)?IN\s*\(([^)]*)\)", re.IGNORECASE)
STATUS_EQUALS = re.compile(r"\bstatus\s*(?:=|<>|!=)\s*'([^']*)'", re.IGNORECASE)
LITERAL = re.compile(r"'([^']*)'")


def predicates() -> tuple[list[tuple[str, frozenset[str]]], list[tuple[str, str]]]:
    lists, singles = [], []
    for path in STATEMENT_FILES:
        text = path.read_text()
        where = str(path.relative_to(SYSDB))
        lists += [(where, frozenset(LITERAL.findall(m))) for m in STATUS_LIST.findall(text)]
        singles += [(where, status) for status in STATUS_EQUALS.findall(text)]
    return lists, singles


def test_the_statement_files_are_found_and_hold_status_predicates() -> None:
    lists, singles = predicates()
    assert len(STATEMENT_FILES) >= 6
    assert len(lists) >= 5 and len(singles) >= 20


def test_every_status_list_in_sql_is_one_of_the_named_sets() -> None:
    lists, _ = predicates()
    named = set(NAMED_SETS.values())
    unnamed = [(where, sorted(found)) for where, found in lists if found not in named]
    assert unnamed == []


def test_every_single_status_in_sql_is_a_known_status() -> None:
    _, singles = predicates()
    unknown = [(where, status) for where, status in singles if status not in statuses.ALL_STATUSES]
    assert unknown == []


def test_the_named_sets_partition_the_statuses_as_documented() -> None:
    assert statuses.ACTIVE_STATUSES | statuses.TERMINAL_STATUSES == statuses.ALL_STATUSES
    assert not statuses.ACTIVE_STATUSES & statuses.TERMINAL_STATUSES
    assert statuses.QUEUED_STATUSES < statuses.ACTIVE_STATUSES
    assert statuses.OUTCOME_STATUSES < statuses.TERMINAL_STATUSES
