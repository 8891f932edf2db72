"""The chaos soak: executors killed and a PostgreSQL restarted under a queue of workflows.

See chaos/README.md. ``chaos.cluster`` also serves the tests that stop, restart or fail
over a throwaway server.
"""
