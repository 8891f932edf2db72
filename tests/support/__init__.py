"""What the tests share: database fixtures and row helpers, applications, helper scripts.

Imported as ``support.<module>`` (``tests/`` is on ``sys.path``: pytest's default
``prepend`` import mode puts it there for ``tests/conftest.py``, and helper scripts get it
in ``PYTHONPATH``). The modules that define fixtures are registered once, as plugins, in
``tests/conftest.py``; test modules import only helpers from here, never fixtures.
"""
