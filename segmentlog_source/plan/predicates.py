"""WHERE-clause predicates the reader can answer exactly, folded into one `RowFilter`.

The Spark layer translates Spark's filter objects into `Predicate`s (plain data, no Spark
import here); whatever is not a `Predicate` stays with Spark. Every accepted predicate is applied
again, row by row, by the executor: Spark does not re-check filters a source accepts, so the
planner may only use them to *skip* bytes that cannot hold a matching row.

Timestamps: Spark hands timestamp literals as microseconds since the epoch; Kafka stores
milliseconds. A record matches `timestamp >= L` iff `ms * 1000 >= L` iff `ms >= ceil(L / 1000)`,
so bounds are kept in exact milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass

COLUMNS = ("offset", "timestamp", "partition", "topic")
OPERATORS = ("=", "<", "<=", ">", ">=", "in")

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1


@dataclass(frozen=True)
class Predicate:
    column: str   # one of COLUMNS
    op: str       # one of OPERATORS
    value: object  # int (offset, partition), microseconds (timestamp), str (topic), tuple for "in"


@dataclass(frozen=True)
class RowFilter:
    """The conjunction of accepted predicates. Bounds are [lo, hi): lo inclusive, hi exclusive."""

    offset_lo: int = INT64_MIN
    offset_hi: int = INT64_MAX
    offsets_in: tuple[int, ...] | None = None     # sorted, distinct
    timestamp_lo_ms: int = INT64_MIN
    timestamp_hi_ms: int = INT64_MAX
    partition_lo: int = INT64_MIN
    partition_hi: int = INT64_MAX
    partitions_in: tuple[int, ...] | None = None
    topics: frozenset[str] | None = None

    @property
    def is_empty(self) -> bool:
        """True when no row can match (contradictory predicates)."""
        return (self.offset_lo >= self.offset_hi or self.timestamp_lo_ms >= self.timestamp_hi_ms
                or self.partition_lo >= self.partition_hi or self.offsets_in == ()
                or self.partitions_in == () or self.topics == frozenset())

    @property
    def filters_offsets(self) -> bool:
        return (self.offset_lo != INT64_MIN or self.offset_hi != INT64_MAX
                or self.offsets_in is not None)

    @property
    def filters_timestamps(self) -> bool:
        return self.timestamp_lo_ms != INT64_MIN or self.timestamp_hi_ms != INT64_MAX

    def selects(self, topic: str, partition: int) -> bool:
        return ((self.topics is None or topic in self.topics)
                and self.partition_lo <= partition < self.partition_hi
                and (self.partitions_in is None or partition in self.partitions_in))

    def offset_span(self) -> tuple[int, int]:
        """The smallest [lo, hi) holding every offset the filter can match."""
        lo, hi = self.offset_lo, self.offset_hi
        if self.offsets_in:
            lo = max(lo, self.offsets_in[0])
            hi = min(hi, self.offsets_in[-1] + 1)
        return lo, hi


def _ceil_div(a: int, b: int) -> int:
    return -((-a) // b)


def accepts(predicate: Predicate) -> bool:
    """Whether the reader can apply `predicate` exactly (and so may take it from Spark)."""
    if predicate.column not in COLUMNS or predicate.op not in OPERATORS:
        return False
    if predicate.column == "topic" and predicate.op not in ("=", "in"):
        return False
    if predicate.column == "timestamp" and predicate.op == "in":
        return False  # kept by Spark: a set of instants does not fold into a range
    if predicate.op == "in":
        values = predicate.value
        return isinstance(values, tuple) and len(values) > 0 and all(
            _value_ok(predicate.column, v) for v in values)
    return _value_ok(predicate.column, predicate.value)


def _value_ok(column: str, value: object) -> bool:
    if column == "topic":
        return isinstance(value, str)
    if column == "timestamp" and not isinstance(value, int):
        return False
    return isinstance(value, int) and not isinstance(value, bool)


def fold(predicates: list[Predicate]) -> RowFilter:
    """Intersect accepted predicates into one RowFilter."""
    f = dict(offset_lo=INT64_MIN, offset_hi=INT64_MAX, offsets_in=None,
             timestamp_lo_ms=INT64_MIN, timestamp_hi_ms=INT64_MAX, partition_lo=INT64_MIN,
             partition_hi=INT64_MAX, partitions_in=None, topics=None)
    for p in predicates:
        if not accepts(p):
            raise ValueError(f"predicate not accepted: {p}")
        if p.column == "offset":
            _fold_range(f, "offset_lo", "offset_hi", "offsets_in", p, scale=1)
        elif p.column == "timestamp":
            _fold_range(f, "timestamp_lo_ms", "timestamp_hi_ms", None, p, scale=1000)
        elif p.column == "partition":
            _fold_range(f, "partition_lo", "partition_hi", "partitions_in", p, scale=1)
        else:
            topics = frozenset(p.value) if p.op == "in" else frozenset([p.value])
            f["topics"] = topics if f["topics"] is None else f["topics"] & topics
    return RowFilter(**f)


def _fold_range(f: dict, lo_key: str, hi_key: str, in_key: str | None, p: Predicate,
                scale: int) -> None:
    """Fold a comparison on an integer column into [lo, hi), in units of `scale` (us -> ms)."""

    def at_least(v: int) -> int:  # smallest stored value x with x * scale >= v
        return _ceil_div(v, scale)

    if p.op == "in":
        values = set(p.value)
        if f[in_key] is not None:
            values &= set(f[in_key])
        f[in_key] = tuple(sorted(values))
        return
    v = p.value
    if p.op == "=":
        if v % scale:
            f[lo_key], f[hi_key] = 0, 0   # no stored value equals it
            return
        lo, hi = v // scale, v // scale + 1
    elif p.op == ">":
        lo, hi = at_least(v + 1), INT64_MAX
    elif p.op == ">=":
        lo, hi = at_least(v), INT64_MAX
    elif p.op == "<":
        lo, hi = INT64_MIN, at_least(v)
    else:  # "<="
        lo, hi = INT64_MIN, at_least(v + 1)
    f[lo_key] = max(f[lo_key], lo)
    f[hi_key] = min(f[hi_key], hi)
