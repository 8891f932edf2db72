"""``python -m benchmarks``: see benchmarks/README.md and ``--help``."""

from benchmarks.runner import main

raise SystemExit(main())
