"""The GPU suite (a package, so that its conftest and test modules do not clash with
tests/python's own: see conftest.py)."""
