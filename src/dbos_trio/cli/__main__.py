"""``python -m dbos_trio.cli``: the same as the ``dbos-trio`` console script."""

import sys

from dbos_trio.cli._main import main

sys.exit(main())
