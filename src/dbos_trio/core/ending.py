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
  … anything else (shutdown, Ctrl-C)         ``PROPAGATE`` it, nothing recorded
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

from .._errors import DBOSWorkflowCancelledError, DBOSWorkflowConflictIDError


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
    scope_caught_cancel: bool,
    scope_cancel_called: bool,
    cancel_requested: bool,
    control_failure: BaseException | None,
    raised: Exception | None,
    raised_is_control: bool = False,
) -> Decision:
    """The ending of one execution (see the module's table)."""
    deadline_fired = scope_cancel_called and not cancel_requested
    if escaped is not None:
        if (
            find_in(escaped, DBOSWorkflowCancelledError) is not None
            or find_in(escaped, DBOSWorkflowConflictIDError) is not None
        ):
            return Decision(Ending.ADOPT, cancel_first=deadline_fired)
        return Decision(Ending.PROPAGATE, cancel_first=deadline_fired, control=escaped)
    if scope_caught_cancel:
        return Decision(Ending.ADOPT, cancel_first=not cancel_requested)
    if control_failure is not None:
        return Decision(Ending.PROPAGATE, control=control_failure)
    if raised is not None and raised_is_control:
        return Decision(Ending.PROPAGATE, control=raised)
    if raised is not None:
        return Decision(Ending.RECORD_ERROR)
    return Decision(Ending.RECORD_SUCCESS)
