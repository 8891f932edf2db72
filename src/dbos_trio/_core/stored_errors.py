"""The errors of stored values: a payload or a row that cannot be read back, an error read
from a portable payload, and a payload store entry that is missing, corrupt or unwritable.

Defined here, below :mod:`dbos_trio.errors` (their public home, which re-exports each one),
so the error classes are split by concern without an import cycle: this module imports only
the roots (:mod:`.error_roots`). Invariant: none of these is control flow — each names what
was stored (the payload, the workflow and column, the hash and the file) so that an operator
can find it, and a reader meets it at the read, never as a hang.
"""

from __future__ import annotations

from typing import Any

from dbos_trio._core.error_roots import DBOSStoredDataError


class DBOSPayloadError(DBOSStoredDataError, TypeError, ValueError):
    """A stored payload cannot be read: not in its format, in a format this process does
    not have, or a pickle this process refuses (``allow_pickle=False``).

    Also a ``TypeError`` and a ``ValueError``, the errors of the deserializers it stands
    in for (code that caught those keeps working), with the original as its cause."""

    def __init__(self, what: str, fmt: str | None, problem: BaseException | str) -> None:
        self.what = what
        self.format = fmt
        self.problem = str(problem) if isinstance(problem, str) else repr(problem)
        super().__init__(
            f"cannot read {what} (stored as {fmt or 'the default format'}): {self.problem}"
        )


class DBOSCorruptRowError(DBOSStoredDataError):
    """A stored row holds what no DBOS SDK writes (an unknown status, say): it is reported,
    naming the workflow, the column and the problem, rather than waited on forever."""

    def __init__(self, workflow_id: str, column: str, problem: str) -> None:
        self.workflow_id = workflow_id
        self.column = column
        self.problem = problem
        super().__init__(f"workflow {workflow_id}: {column} {problem}")


class PortableWorkflowError(Exception):
    """An error stored in ``portable_json``: what any SDK can read back of an exception."""

    def __init__(
        self, message: str, name: str = "Error", code: int | str | None = None, data: Any = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.name = name
        self.code = code
        self.data = data

    def __reduce__(self) -> tuple[Any, ...]:
        return (PortableWorkflowError, (self.message, self.name, self.code, self.data))

    def __str__(self) -> str:
        return self.message


class PayloadStoreError(Exception):
    """An entry of a payload store (:class:`~dbos_trio.DirectoryPayloadStore`) is missing,
    corrupt or cannot be written; the message names the hash and the file.

    Raised by the store's own methods (``put``, ``get``, ``delete``), so code that calls a
    store directly meets it; the workflow and read paths meet it as the cause of a
    :class:`~dbos_trio.DBOSPayloadError` naming the value (any exception a store raises is
    wrapped so). A plain ``Exception``: a store is below the DBOS error tree, and its
    message is the bare problem, which the wrapping error then places."""
