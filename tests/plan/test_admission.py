"""maxOffsetsPerTrigger shared out as Spark's Kafka source shares it (in proportion to each
partition's backlog), but never past the cap."""

from __future__ import annotations

from hypothesis import given, strategies as st

from segmentlog_source.plan.admission import backlog, rate_limit

partitions = st.dictionaries(st.tuples(st.sampled_from("abc"), st.integers(0, 5)),
                             st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)),
                             min_size=1, max_size=12)


@given(partitions, st.integers(1, 10**6))
def test_a_trigger_never_takes_more_than_the_cap_nor_more_than_is_there(parts, cap):
    start = {tp: min(a, b) for tp, (a, b) in parts.items()}
    end = {tp: max(a, b) for tp, (a, b) in parts.items()}
    cut = rate_limit(start, end, cap)
    assert set(cut) == set(end)
    assert all(start[tp] <= cut[tp] <= end[tp] for tp in end)
    assert backlog(start, cut) == min(cap, backlog(start, end))


def test_shares_follow_the_backlog():
    start = {("a", 0): 0, ("a", 1): 100, ("b", 0): 50}
    end = {("a", 0): 900, ("a", 1): 190, ("b", 0): 50}
    assert rate_limit(start, end, 99) == {("a", 0): 90, ("a", 1): 109, ("b", 0): 50}
    # a small backlog is not starved: its fraction rounds up before the large one's
    assert rate_limit({("a", 0): 0, ("b", 0): 0}, {("a", 0): 1000, ("b", 0): 1}, 10) == {
        ("a", 0): 9, ("b", 0): 1}


def test_nothing_waiting_is_nothing_cut():
    assert rate_limit({("a", 0): 5}, {("a", 0): 5}, 10) == {("a", 0): 5}
    assert backlog({("a", 0): 5}, {("a", 0): 5, ("b", 0): 3}) == 0
