"""Shared pytest configuration.

Fixture programs are compiled at test time by tests/support/build.py.
"""

from __future__ import annotations

import shutil

import pytest


def require_tool(name: str) -> str:
    """Path of a reference tool; the test fails (not skips) when it is missing,
    because `make test` installs every tool the tests need."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed; `make test` should have installed it")
    return path
