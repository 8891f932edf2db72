"""The system database: its protocol, and the backends that implement it.

Layer: below the engine. The protocol (:mod:`.protocol`, :mod:`.records`, :mod:`.errors`,
:mod:`.wakeups`, :mod:`.retry`) imports no backend code and no driver; the shared SQL
implementation (:mod:`.sql`) runs over a small statement-runner interface (:mod:`.statements`),
and :mod:`.postgres` and :mod:`.sqlite` supply only what truly differs. :mod:`.open` is the one
place a URL becomes a backend, and the only backend module the engine may import. Invariant:
driver errors are mapped once, at this boundary, into named kinds (transient, permanent data
error, expected conflict).
"""
