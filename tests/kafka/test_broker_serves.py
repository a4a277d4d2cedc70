"""What segmentlog writes, the broker serves (adoption.py has the procedure): a topic written by
df.write.format("segmentlog") (every codec, keys, headers, out-of-order timestamps, several
segments per partition) is put in place of an empty topic's files, and a Kafka 4.4 broker started
on them serves exactly those records: its log end offsets, its ListOffsets by timestamp and its
max timestamp equal segmentlog's own, Spark's Kafka source reads back the written rows, and the
broker neither truncated, recovered from corruption nor moved anything aside.

Round "marker": the broker starts with its clean-shutdown marker and trusts segmentlog's indexes
and producer snapshots. Round "no marker": it recovers, re-checking every batch and rebuilding
every index itself.
"""

from __future__ import annotations

from collections import Counter

import pytest

from tests.kafka.adoption import ROWS_PER_CODEC, comparable
from tests.kafka.broker_topics import ADOPTED_PARTITIONS, CODECS

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("kafka")]

ROUNDS = {"marker": "m", "no-marker": "n"}


def test_segmentlog_wrote_what_it_was_given(adoption):
    written = adoption.written
    given = Counter((row[3], row[0], row[1], tuple(row[2])) for row in written.input_rows)
    read = Counter((r[0], r[2], r[3], r[4]) for r in written.rows)
    assert read == given and len(written.rows) == ROWS_PER_CODEC * len(CODECS)
    for p in range(ADOPTED_PARTITIONS):
        part = written.data_dir / f"adopt-{p}"
        assert len(list(part.glob("*.log"))) >= 4, "the topic should span several segments"
        assert written.end_offsets[p] == sum(1 for r in written.rows if r[0] == p)


@pytest.mark.parametrize("round_", ROUNDS)
def test_the_broker_serves_exactly_what_segmentlog_wrote(adoption, round_):
    topic = f"adopt-{ROUNDS[round_]}"
    assert adoption.problems[topic] == []
    assert adoption.kept_topic_ids[topic]
    served = adoption.served[topic]
    assert {p: a["latest"]["offset"] for p, a in served.offsets.items()} == \
        adoption.written.end_offsets
    assert comparable(served.read.rows) == adoption.written.rows


def test_without_the_marker_the_broker_recovered_segmentlogs_segments(adoption):
    """Round 2 really was the broker's full recovery, not a trusted load."""
    log = adoption.served["adopt-n"].log
    assert any("Recovering unflushed segment" in line for line in log), log[:20]
    assert not any("Recovering unflushed segment" in line
                   for line in adoption.served["adopt-m"].log)


@pytest.mark.parametrize("round_", ROUNDS)
def test_the_check_catches_a_wrong_checksum(adoption, round_):
    topic = f"crc-{ROUNDS[round_]}"
    problems = adoption.problems[topic]
    assert problems, f"{adoption.damage[topic]}: the acceptance check found nothing"
    text = "\n".join(problems)
    if round_ == "marker":   # served as is: the consumer is the one that fails
        assert "format('kafka') failed" in text and "corrupt" in text.lower(), text
    else:                    # recovery cut the partition at the bad batch
        assert "Corruption found" in text and "ListOffsets latest" in text, text


@pytest.mark.parametrize("round_", ROUNDS)
def test_the_check_catches_skipped_offsets(adoption, round_):
    topic = f"gap-{ROUNDS[round_]}"
    problems = adoption.problems[topic]
    end = adoption.written.end_offsets[0]
    # the broker takes the moved batch in both rounds: only the check sees it
    assert f"partition 0: ListOffsets latest is {end + 3}, segmentlog wrote offsets up to " \
        f"{end}" in "\n".join(problems), (adoption.damage[topic], problems)
    assert not any("partition 1" in p for p in problems), problems
