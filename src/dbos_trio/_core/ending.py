"""How a workflow execution ended, decided from what happened, without any I/O.

The engine runs a workflow body inside its own Trio cancel scope and then reports the
facts to :func:`decide`: what escaped the scope, whether the scope caught its own
cancellation, whether this process asked for that cancellation, whether a system-database
failure was seen inside, and what the body returned or raised. The table below is the
whole policy; the engine only carries it out (write CANCELLED, adopt another's outcome,
record this one, or propagate).

=========================================  ==============================================
what happened                               ending
=========================================  ==============================================
a ``BaseException`` escaped the scope       ``CANCEL`` first if the scope's own deadline
                                            fired too (an enclosing scope with the same
                                            deadline took the ``Cancelled``);
  … it holds ``DBOSWorkflowCancelledError``  ``ADOPT`` (cancelled elsewhere)
  … it holds ``DBOSWorkflowConflictIDError`` ``ADOPT`` (another execution owns it)
  … ``KeyboardInterrupt``/``SystemExit``,    ``PROPAGATE`` it, nothing recorded: the
    or a ``Cancelled`` while cancelled        process is stopping (the row stays PENDING)
  … a ``Cancelled`` while not cancelled       ``RECORD_ERROR`` (a stray: the body raised a
    (it came from a scope that is not ours)   ``Cancelled`` of a scope it does not own)
  … any other ``BaseException``              ``RECORD_ERROR`` (``GeneratorExit``, a class of
                                            the user's own): never silent, never a hang
the scope caught its own cancellation       ``CANCEL`` unless this process cancelled it
                                            (its deadline fired), then ``ADOPT``
a system-database failure was seen inside   ``PROPAGATE`` it (even if the body caught it)
the body raised a control database error    ``PROPAGATE`` it (transient, or closed)
the body raised any other ``Exception``     ``RECORD_ERROR``
the body returned                           ``RECORD_SUCCESS``
=========================================  ==============================================

Control (``PROPAGATE``) never becomes an outcome: the row stays PENDING, or as whoever
cancelled or re-owned it left it.
"""

from __future__ import annotations

import enum

import attrs

from dbos_trio.errors import (
    DBOSWorkflowAbortedError,
    DBOSWorkflowCancelledError,
    DBOSWorkflowConflictIDError,
)


class Ending(enum.Enum):
    RECORD_SUCCESS = "record the returned value as SUCCESS"
    RECORD_ERROR = "record the raised exception as ERROR"
    ADOPT = "wait for the outcome someone else writes, and return it"
    PROPAGATE = "raise the control exception; record nothing"


@attrs.frozen
class Decision:
    ending: Ending
    # Write CANCELLED first: the workflow's own deadline fired in this process.
    cancel_first: bool = False
    # With PROPAGATE: what to raise.
    control: BaseException | None = None
    # With RECORD_ERROR for an escaped BaseException: the error to record and raise
    # instead (a waiter must never be handed a GeneratorExit or a stray Cancelled).
    error: Exception | None = None


def is_process_stop(error: BaseException) -> bool:
    """Ctrl-C or ``sys.exit()``: the process is to stop, whoever raised it."""
    return find_in(error, KeyboardInterrupt) is not None or find_in(error, SystemExit) is not None


def _is_cancellation(error: BaseException) -> bool:
    """Whether ``error`` is (a group of nothing but) Trio ``Cancelled`` — recognized by name,
    since this module imports no Trio."""
    if isinstance(error, BaseExceptionGroup):
        return all(_is_cancellation(inner) for inner in error.exceptions)
    return type(error).__name__ == "Cancelled" and type(error).__module__.startswith("trio")


def collapse(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The single exception inside nested one-element groups, or the group itself (a
    boundary that runs one body reports its exception as itself)."""
    inner: BaseException = group
    while isinstance(inner, BaseExceptionGroup) and len(inner.exceptions) == 1:
        inner = inner.exceptions[0]
    return inner


def find_in(error: BaseException, kind: type[BaseException]) -> BaseException | None:
    """``error`` itself if it is a ``kind``, else the first ``kind`` inside it, searching
    nested exception groups depth first; None if there is none."""
    if isinstance(error, kind):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = find_in(inner, kind)
            if found is not None:
                return found
    return None


def decide(
    *,
    escaped: BaseException | None,
    effectively_cancelled: bool = False,
    scope_caught_cancel: bool,
    scope_cancel_called: bool,
    cancel_requested: bool,
    control_failure: BaseException | None,
    raised: Exception | None,
    raised_is_control: bool = False,
) -> Decision:
    """The ending of one execution (see the module's table).

    ``effectively_cancelled``: whether the task was, when the exception escaped, inside a
    cancelled scope (an enclosing one: its own scope has exited)."""
    deadline_fired = scope_cancel_called and not cancel_requested
    if escaped is not None:
        if (
            find_in(escaped, DBOSWorkflowCancelledError) is not None
            or find_in(escaped, DBOSWorkflowConflictIDError) is not None
        ):
            return Decision(Ending.ADOPT, cancel_first=deadline_fired)
        if is_process_stop(escaped) or (effectively_cancelled and _is_cancellation(escaped)):
            return Decision(Ending.PROPAGATE, cancel_first=deadline_fired, control=escaped)
        return Decision(Ending.RECORD_ERROR, error=DBOSWorkflowAbortedError(escaped))
    if scope_caught_cancel:
        return Decision(Ending.ADOPT, cancel_first=not cancel_requested)
    if control_failure is not None:
        return Decision(Ending.PROPAGATE, control=control_failure)
    if raised is not None and raised_is_control:
        return Decision(Ending.PROPAGATE, control=raised)
    if raised is not None:
        return Decision(Ending.RECORD_ERROR)
    return Decision(Ending.RECORD_SUCCESS)
