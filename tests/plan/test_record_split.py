"""maxRecordsPerPartition and minPartitions cut offset ranges as Spark's Kafka source does.

The minPartitions cases are those of Spark's KafkaOffsetRangeCalculatorSuite (connector/
kafka-0-10-sql/src/test/.../KafkaOffsetRangeCalculatorSuite.scala, named after its tests), which
check KafkaOffsetRangeCalculator.getRanges (KafkaOffsetRangeCalculator.scala:48-134 in 4.2.0).
"""

from __future__ import annotations

import pytest

from segmentlog_source.errors import BadOptionError
from segmentlog_source.plan.record_split import OffsetSpan, split_spans
from segmentlog_source.plan.scan_plan import MAX_GROUPS


def spans(*ranges):
    """("t1", 1, 5) -> OffsetSpan("t1", 1, 1, 5): Spark's suite reads partition 1 of t1..t3."""
    return [OffsetSpan(t, 1, a, b) for t, a, b in ranges]


@pytest.mark.parametrize("min_partitions, given, expected", [
    # "with no minPartition: empty ranges ignored"
    (None, [("t1", 1, 2), ("t2", 1, 1)], [("t1", 1, 2)]),
    # "N TopicPartitions to N offset ranges"
    (3, [("t1", 1, 2), ("t2", 1, 2), ("t3", 1, 2)], [("t1", 1, 2), ("t2", 1, 2), ("t3", 1, 2)]),
    # "1 TopicPartition to N offset ranges"
    (4, [("t1", 1, 5)], [("t1", 1, 2), ("t1", 2, 3), ("t1", 3, 4), ("t1", 4, 5)]),
    # "N skewed TopicPartitions to M offset ranges"
    (4, [("t1", 1, 5), ("t2", 1, 21)],
     [("t1", 1, 5), ("t2", 1, 7), ("t2", 7, 14), ("t2", 14, 21)]),
    # "SPARK-30656: ignore empty ranges and split the rest"
    (4, [("t1", 1, 1), ("t2", 1, 21)],
     [("t2", 1, 6), ("t2", 6, 11), ("t2", 11, 16), ("t2", 16, 21)]),
    # "SPARK-30656: N very skewed TopicPartitions to M offset ranges"
    (4, [("t1", 1, 2), ("t2", 1, 1001)],
     [("t1", 1, 2), ("t2", 1, 334), ("t2", 334, 667), ("t2", 667, 1001)]),
    # "SPARK-30656: minPartitions less than the length of topic partitions"
    (1, [("t1", 1, 5), ("t2", 1, 21)], [("t1", 1, 5), ("t2", 1, 21)]),
    # "range inexact multiple of minPartitions"
    (3, [("t1", 1, 11)], [("t1", 1, 4), ("t1", 4, 7), ("t1", 7, 11)]),
    # "SPARK-28489: never drop offsets"
    (6, [("t1", 0, 10), ("t2", 0, 10), ("t3", 0, 1)],
     [("t1", 0, 3), ("t1", 3, 6), ("t1", 6, 10), ("t2", 0, 3), ("t2", 3, 6), ("t2", 6, 10),
      ("t3", 0, 1)]),
    # "SPARK-36576: 0 small unsplit ranges and 3 large split ranges"
    (9, [("t1", 0, 10000), ("t2", 0, 15000), ("t3", 0, 20000)],
     [("t1", 0, 5000), ("t1", 5000, 10000), ("t2", 0, 5000), ("t2", 5000, 10000),
      ("t2", 10000, 15000), ("t3", 0, 5000), ("t3", 5000, 10000), ("t3", 10000, 15000),
      ("t3", 15000, 20000)]),
    # "SPARK-36576: 1 small unsplit range and 2 large split ranges"
    (6, [("t1", 0, 500), ("t2", 0, 12000), ("t3", 0, 15001)],
     [("t1", 0, 500), ("t2", 0, 6000), ("t2", 6000, 12000), ("t3", 0, 5000),
      ("t3", 5000, 10000), ("t3", 10000, 15001)]),
    # "SPARK-36576: 2 small unsplit ranges and 1 large split range"
    (6, [("t1", 0, 1), ("t2", 0, 1), ("t3", 0, 10000)],
     [("t1", 0, 1), ("t2", 0, 1), ("t3", 0, 2500), ("t3", 2500, 5000), ("t3", 5000, 7500),
      ("t3", 7500, 10000)]),
])
def test_min_partitions_as_sparks_suite(min_partitions, given, expected):
    assert split_spans(spans(*given), min_partitions, None) == spans(*expected)


def test_max_records_cuts_each_range_into_equal_parts():
    # KafkaOffsetRangeCalculator.scala:63-72: ceil(size / max) parts per range, the last part
    # taking the rounding (:121-129): 100 offsets at most 30 each -> 4 parts of 25
    got = split_spans(spans(("t1", 0, 100), ("t2", 10, 40)), None, 30)
    assert got == spans(("t1", 0, 25), ("t1", 25, 50), ("t1", 50, 75), ("t1", 75, 100),
                        ("t2", 10, 40))
    assert all(s.size <= 30 for s in got)
    # 7 offsets at most 2 each: 4 parts of 1, 2, 2, 2 (integer division, remainder last)
    assert [s.size for s in split_spans(spans(("t1", 0, 7)), None, 2)] == [1, 2, 2, 2]


def test_min_partitions_applies_after_max_records():
    # :77: minPartitions only splits further when the record cut made fewer parts than asked
    assert len(split_spans(spans(("t1", 0, 100)), 3, 30)) == 4
    got = split_spans(spans(("t1", 0, 100)), 8, 30)
    assert len(got) == 8 and all(s.size <= 30 for s in got)
    assert [(s.start, s.end) for s in got][0] == (0, 12) and got[-1].end == 100
    # and no offset is lost or read twice
    covered = [o for s in got for o in range(s.start, s.end)]
    assert covered == list(range(100))


def test_too_many_parts_are_refused_naming_the_option():
    with pytest.raises(BadOptionError) as err:
        split_spans(spans(("t1", 0, MAX_GROUPS + 1)), None, 1)
    assert err.value.name == "maxRecordsPerPartition"
    assert len(split_spans(spans(("t1", 0, 10 * MAX_GROUPS)), None, 10 * MAX_GROUPS)) == 1
