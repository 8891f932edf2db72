"""Observability: contextual logs, OpenTelemetry spans and Prometheus metrics.

Layer: the engine's bottom: any engine module may report through :mod:`.hooks`, and nothing
here imports another engine package. Invariant: the optional extras (``otel``, ``metrics``)
are imported only when switched on, and a failing exporter never affects a workflow.
"""
