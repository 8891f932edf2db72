"""Transaction control inside a datasource transaction, found before the SQL is sent.

A ``@ds.transaction`` function's statements run inside the one transaction dbos_trio begins,
and that transaction commits together with the step's checkpoint: that is what makes it
exactly once. A statement that ends it (``COMMIT``, ``ROLLBACK``, ``END``, ``ABORT``,
``PREPARE TRANSACTION``) or begins another (``BEGIN``, ``START TRANSACTION``) would commit
the function's writes apart from the checkpoint (``INSERT ...; COMMIT; BEGIN`` reports
success, and a crash before the checkpoint writes it again on recovery) or discard them
after the fact. So such text is refused before anything is sent, on both backends.
Savepoints (``SAVEPOINT``, ``ROLLBACK TO``, ``RELEASE``) stay inside the transaction and are
allowed.

The scan is a small lexer over the text, not a parser: it skips string literals, quoted
identifiers, comments and PostgreSQL dollar-quoted bodies (a ``COMMIT`` in a
``DO $$ ... $$`` body or a string is not a statement of ours), splits the rest at ``;`` and
looks at the first words of each statement. Pure: no driver, no I/O.
"""

from __future__ import annotations

import re

_DOLLAR_TAG = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$")
_WORD = re.compile(r"[A-Za-z_]+")


def _statements(sql: str) -> list[str]:
    """The text of each statement, with literals, identifiers and comments blanked."""
    out: list[str] = []
    current: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c == "-" and sql.startswith("--", i):
            end = sql.find("\n", i)
            i = n if end == -1 else end
            current.append(" ")
        elif c == "/" and sql.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if sql.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif sql.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            current.append(" ")
        elif c in "'\"`[":
            close = "]" if c == "[" else c
            i += 1
            while i < n:
                if sql[i] == close:
                    if close != "]" and sql.startswith(close * 2, i):
                        i += 2  # a doubled quote is part of the literal
                        continue
                    break
                i += 1
            i += 1
            current.append(" x ")
        elif c == "$" and (tag := _DOLLAR_TAG.match(sql, i)) is not None:
            end = sql.find(tag.group(0), tag.end())
            i = n if end == -1 else end + len(tag.group(0))
            current.append(" x ")
        elif c == ";":
            out.append("".join(current))
            current = []
            i += 1
        else:
            current.append(c)
            i += 1
    out.append("".join(current))
    return out


def transaction_control(sql: str) -> str | None:
    """The first statement of ``sql`` that would begin or end a transaction (its leading
    words, upper case, e.g. ``"COMMIT"``), or None if there is none."""
    for statement in _statements(sql):
        words: list[str] = [word.upper() for word in _WORD.findall(statement)[:4]]
        if not words:
            continue
        first = words[0]
        if first in ("BEGIN", "COMMIT", "END", "ABORT"):
            return first
        if first == "START" and words[1:2] == ["TRANSACTION"]:
            return "START TRANSACTION"
        if first == "PREPARE" and words[1:2] == ["TRANSACTION"]:
            return "PREPARE TRANSACTION"
        if first == "ROLLBACK":
            rest = [w for w in words[1:] if w not in ("WORK", "TRANSACTION")]
            if rest[:1] == ["TO"]:
                continue  # ROLLBACK TO SAVEPOINT: stays inside the transaction
            if rest[:1] == ["PREPARED"]:
                return "ROLLBACK PREPARED"
            return "ROLLBACK"
    return None


def refusal(sql: str) -> str | None:
    """Why ``sql`` may not run inside a datasource transaction, or None if it may."""
    found = transaction_control(sql)
    if found is None:
        return None
    return (
        f"{found} inside a @transaction function: dbos_trio begins and ends the "
        "transaction, and commits it together with the step's checkpoint (that is what "
        "makes it run exactly once); nothing was sent. Remove it; to undo part of the "
        "work, use SAVEPOINT and ROLLBACK TO SAVEPOINT, or raise to roll everything back"
    )
