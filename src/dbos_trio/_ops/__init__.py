"""The operations every face shares: written and validated once, for ``DBOS``, ``Client``,
the command line and the dashboard.

Each operation is a plain function taking a :class:`~.reach.Reach` — how the calling face
reaches the system database, and whether a call made inside a workflow is checkpointed — and
the user's arguments. It validates every argument *at the call*, before anything is awaited
(so a bad value fails before anything is written, and a face's step id is reserved in call
order), then returns the coroutine that does the work. A face method is one line: its own
docstring and signature, then the operation.

Layer: between the faces and the engine. Imports the engine, ``_core`` and the foundations;
never a face (``_dbos``, ``_client``, ``cli``, ``dashboard``). Invariant: an operation's
rules live here only; a face adds none of its own.
"""
