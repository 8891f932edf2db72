"""Every test module has a basename of its own.

The test folders are not packages, so pytest imports each module by its basename: a
second ``test_client.py`` anywhere under ``tests/`` is refused at collection ("import file
mismatch") and every test in it silently never runs in the worker that met it second. A
clean-clone CI run met this twice; this fails first, naming the clash.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_two_test_modules_share_a_basename() -> None:
    by_name: dict[str, list[str]] = defaultdict(list)
    for module in TESTS.rglob("test_*.py"):
        by_name[module.name].append(str(module.relative_to(TESTS)))
    clashes = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert clashes == {}
