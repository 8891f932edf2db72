"""Operator actions on stored workflows: cancel, resume, fork, delete, delay, attributes,
rewind, retention and renaming an application.

Layer: engine; these are the primitives the faces (``DBOS``, ``Client``, the CLI, the
dashboard) call. Invariant: each action is validated before it writes and says what it changed.
"""
