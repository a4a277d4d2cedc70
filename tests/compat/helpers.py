"""What the compatibility tests share: the refusal's one line, and which features this PySpark has
(asked of segmentlog_source.compat, the one place that knows)."""

from __future__ import annotations

import pytest

from segmentlog_source import compat
from segmentlog_source.errors import SegmentLogError
from tests.spark.option_cases import FIRST_LINE_LIMIT, segmentlog_message


def has(feature: str) -> bool:
    return compat.FEATURES[feature][0]


def assert_refused(action, feature: str, option: str | None = None) -> str:
    """`action` fails with the one line that names the feature (and the option), the release
    that has it and the installed one, and no import error anywhere in what Spark raised."""
    with pytest.raises(Exception) as err:
        action()
    text = str(err.value)
    assert "ModuleNotFoundError" not in text and "ImportError" not in text, text[:3000]
    # raised in this process (register()), or by a Python worker inside what Spark raised
    first = str(err.value).splitlines()[0] if isinstance(err.value, SegmentLogError) \
        else segmentlog_message(err.value)
    _, release, what = compat.FEATURES[feature]
    assert first.startswith(f"option {option}: " if option else what), first
    assert f"{what} needs PySpark {release} or later (this is PySpark {compat.VERSION})" \
        in first, first
    assert len(first) < FIRST_LINE_LIMIT, first
    return first
