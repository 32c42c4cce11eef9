"""Fixtures shared by the integration tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.binutils import newer_binutils as fetch_newer_binutils


@pytest.fixture(scope="session")
def newer_binutils() -> Path:
    """binutils 2.44 (bin-trixie) and 2.47 (bin-sid), fetched once per checkout."""
    try:
        return fetch_newer_binutils()
    except RuntimeError as exc:
        pytest.fail(str(exc))
