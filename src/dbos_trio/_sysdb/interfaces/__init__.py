"""The system-database protocol's parts, one per concern; :mod:`dbos_trio._sysdb.protocol`
composes them into ``SystemDatabase``.

Layer: the sysdb protocol (with ``records``, ``errors``, ``wakeups`` and ``retry``): no
driver, row or SQL type, no backend code. Split by concern so that a reader (or an engine
module that needs only one concern) sees one part's promises at a time; the backends
implement the composition, never the parts alone.
"""
