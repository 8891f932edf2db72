"""Start options found different from dbos 3.4 by porting its test suite (issue 32).

dbos 3.4 checks ``SetWorkflowID`` and ``SetWorkflowAttributes`` when they are built, not
when a workflow starts inside them; so does dbos_trio. Pure: nothing is started.
"""

from __future__ import annotations

from typing import Any

import pytest

from dbos_trio import (
    DBOSArgumentTypeError,
    DBOSException,
    DBOSInvalidArgumentError,
    SetEnqueueOptions,
    SetWorkflowAttributes,
    SetWorkflowID,
    SetWorkflowTimeout,
)


@pytest.mark.parametrize("workflow_id", ["", "   ", "\t\n"])
def test_an_empty_or_blank_workflow_id_is_refused_when_the_block_is_built(
    workflow_id: str,
) -> None:
    with pytest.raises(DBOSInvalidArgumentError) as refused:
        SetWorkflowID(workflow_id)  # never entered
    assert refused.value.message.startswith(f"Invalid workflow ID {workflow_id!r}")
    assert "must be non-empty and cannot be only whitespace" in refused.value.message
    assert isinstance(refused.value, DBOSException | ValueError)


@pytest.mark.parametrize(
    ("attributes", "must_be"),
    [
        (["not", "a", "dict"], "a dict"),
        ({"when": object()}, "JSON-serializable"),
        ({"nan": float("nan")}, "JSON-serializable"),
    ],
)
def test_attributes_that_are_not_a_dict_of_json_values_are_refused_when_built(
    attributes: Any, must_be: str
) -> None:
    with pytest.raises(DBOSArgumentTypeError) as refused:
        SetWorkflowAttributes(attributes)  # never entered
    assert refused.value.message.startswith("Invalid workflow attributes ")
    assert f"Attributes must be {must_be}" in refused.value.message


def test_the_other_option_blocks_check_their_values_when_built_too() -> None:
    with pytest.raises(DBOSInvalidArgumentError):
        SetWorkflowTimeout(-1)
    with pytest.raises(DBOSInvalidArgumentError):
        SetEnqueueOptions(priority=0)


def test_an_option_block_can_be_entered_again_and_nested() -> None:
    from dbos_trio._engine.workflows.options import take_assigned_id

    block = SetWorkflowID("same")
    with block:
        assert take_assigned_id() == "same"
        with SetWorkflowID("inner"):
            assert take_assigned_id() == "inner"
        assert take_assigned_id() is None  # the outer id was taken already
    assert take_assigned_id() is None
    with block:  # a second entry assigns the id afresh
        assert take_assigned_id() == "same"
