"""Shared test fixtures: the one way to reach ../shared, and the one SparkSession."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def shared_dir() -> Path:
    """The read-only reference material (fixtures, docs, tools) beside the repository.

    Tests that need it fail loudly when it is missing: they never skip.
    """
    path = Path(os.environ.get("SEGMENTLOG_SHARED", REPO.parent / "shared"))
    if not (path / "fixtures").is_dir():
        raise RuntimeError(
            f"the shared reference material is missing: expected {path}/fixtures "
            "(set SEGMENTLOG_SHARED to its location)")
    return path


def shared_fixture(*parts: str) -> Path:
    path = shared_dir().joinpath("fixtures", *parts)
    if not path.exists():
        raise RuntimeError(f"shared fixture missing: {path}")
    return path


@pytest.fixture(scope="session")
def shared() -> Path:
    return shared_dir()
