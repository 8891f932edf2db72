"""The launched executor: launch and shutdown in one place, the state it holds, and its
background tasks — dispatch of claimed work, graceful drain, the orphan, timeout and
cancellation sweeps — all in the one nursery the executor owns.

Layer: the engine's top: it imports every other engine package. Invariant: nothing here
outlives ``launched()``; shutdown cancels the nursery and awaits every task before the
connections close.
"""
