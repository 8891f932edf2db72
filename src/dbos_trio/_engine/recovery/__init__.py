"""Recovery: re-enqueueing this executor's abandoned work at launch, adopting a dead executor's
work, application versions, and stranded work found from the rows alone.

Layer: engine. Invariant: recovery is one write per decision (never a read followed by a
blind write), fenced on the owner it saw, so two executors deciding at once cannot both take
one workflow.
"""
