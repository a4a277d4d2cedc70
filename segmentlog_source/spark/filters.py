"""Spark's pushed-down filter objects -> plain `plan.predicates.Predicate`s.

PySpark hands filters as frozen dataclasses (`EqualTo(attribute=("offset",), value=5)`).
Only comparisons on top-level `offset`, `timestamp`, `partition` and `topic` become predicates;
everything else (negations, string matches, nulls, other columns) goes back to Spark.
"""

from __future__ import annotations

import datetime as dt

from ..compat import FILTER_OPS as _OPS
from ..plan.predicates import Predicate, accepts

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _micros(value: dt.datetime) -> int:
    if value.tzinfo is None:  # Spark sends UTC instants; a naive value is UTC wall time
        value = value.replace(tzinfo=dt.timezone.utc)
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _convert(column: str, value):
    if column == "timestamp":
        if isinstance(value, dt.datetime):
            return _micros(value)
        return None
    if column == "topic":
        return value if isinstance(value, str) else None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def to_predicate(f) -> Predicate | None:
    """The predicate for `f`, or None if the reader cannot apply it exactly."""
    op = _OPS.get(type(f))
    attribute = getattr(f, "attribute", ())
    if op is None or len(attribute) != 1:
        return None
    column = attribute[0]
    if op == "in":
        values = tuple(_convert(column, v) for v in f.value)
        if any(v is None for v in values):
            return None
        predicate = Predicate(column, op, values)
    else:
        value = _convert(column, f.value)
        if value is None:
            return None
        predicate = Predicate(column, op, value)
    return predicate if accepts(predicate) else None
