import pytest
from hypothesis import given, strategies as st

from segmentlog_source.plan.predicates import INT64_MAX, Predicate, RowFilter, accepts, fold


def test_offset_comparisons_fold_into_half_open_range():
    f = fold([Predicate("offset", ">", 5), Predicate("offset", "<=", 10)])
    assert (f.offset_lo, f.offset_hi) == (6, 11)
    assert fold([Predicate("offset", "=", 7)]).offset_span() == (7, 8)


def test_in_lists_intersect():
    f = fold([Predicate("offset", "in", (1, 5, 9)), Predicate("offset", "in", (5, 9, 11))])
    assert f.offsets_in == (5, 9) and f.offset_span() == (5, 10)


def test_contradiction_is_empty():
    assert fold([Predicate("offset", ">", 5), Predicate("offset", "<", 3)]).is_empty
    assert fold([Predicate("topic", "=", "a"), Predicate("topic", "=", "b")]).is_empty


def test_timestamp_microseconds_become_exact_milliseconds():
    # ts >= 1.0005 s  <=>  ms >= 1001 ; ts < 2.0 s <=> ms < 2000 ; ts <= 2.0 s <=> ms < 2001
    f = fold([Predicate("timestamp", ">=", 1_000_500), Predicate("timestamp", "<", 2_000_000)])
    assert (f.timestamp_lo_ms, f.timestamp_hi_ms) == (1001, 2000)
    assert fold([Predicate("timestamp", "<=", 2_000_000)]).timestamp_hi_ms == 2001
    assert fold([Predicate("timestamp", "=", 1_000_500)]).is_empty


@given(st.integers(-10**12, 10**12), st.sampled_from(["=", "<", "<=", ">", ">="]),
       st.integers(-10**9, 10**9))
def test_timestamp_fold_matches_row_semantics(v_us, op, record_ms):
    f = fold([Predicate("timestamp", op, v_us)])
    us = record_ms * 1000
    expected = {"=": us == v_us, "<": us < v_us, "<=": us <= v_us, ">": us > v_us,
                ">=": us >= v_us}[op]
    assert (f.timestamp_lo_ms <= record_ms < f.timestamp_hi_ms) == expected


def test_partition_and_topic_selection():
    f = fold([Predicate("partition", "<", 2), Predicate("topic", "in", ("a", "b"))])
    assert f.selects("a", 1) and not f.selects("a", 2) and not f.selects("c", 0)


@pytest.mark.parametrize("p", [
    Predicate("value", "=", 1), Predicate("topic", ">", "a"), Predicate("offset", "=", "5"),
    Predicate("timestamp", "in", (1000,)), Predicate("offset", "in", ()),
    Predicate("offset", "=", True),
])
def test_not_accepted(p):
    assert not accepts(p)


def test_default_filter_is_everything():
    f = RowFilter()
    assert not f.is_empty and not f.filters_offsets and not f.filters_timestamps
    assert f.offset_hi == INT64_MAX
