"""The kafka-clients fixtures (written by Kafka's own client library) as one-segment partitions:
legacy wrappers, LogAppendTime, compaction gaps and empty batches, a base offset above 2^33."""

from __future__ import annotations

import pytest

from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.conftest import shared_fixture
from tests.fixture_inspect import parse_inspect
from tests.storage.helpers import BruteForce

CASES = sorted(p.parent for p in shared_fixture("kafka-clients").glob("*/inspect.txt"))


def test_inventory():
    assert len(CASES) == 20


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_batches_and_lookups(case):
    log = PartitionLog.open(str(case), topic=case.name, partition=0)
    expected = parse_inspect(case / "inspect.txt").batches
    seen = [(h.position, h.last_offset, h.crc, h.size)
            for _, h, _ in log.iter_entries(verify_crc=True)]
    assert seen == [(b.position, b.last_offset, b.checksum, b.size) for b in expected]
    assert log.log_end_offset == expected[-1].last_offset + 1
    brute = BruteForce(log)
    for offset in range(log.log_start_offset, log.log_end_offset + 1):
        segment, position = log.position_for_offset(offset)
        assert (segment.base_offset, position) == brute.position(offset)
    stamps = brute.record_timestamps()
    for target in sorted({0, *stamps, *(s + 1 for s in stamps), *(s - 1 for s in stamps)}):
        if target >= 0:
            assert log.offset_for_timestamp(target) == brute.offset_for_timestamp(target), target


def test_compacted_gaps_listoffsets_skips_the_empty_batch():
    """Spec §8.2: the empty batch 40-44 carries a max timestamp but no record to return."""
    log = PartitionLog.open(str(shared_fixture("kafka-clients", "v2-compacted-gaps")),
                            topic="t", partition=0)
    empty = [h for _, h, _ in log.iter_entries() if h.records_count == 0]
    assert len(empty) == 1 and (empty[0].base_offset, empty[0].last_offset) == (40, 44)
    assert empty[0].max_timestamp == 1700000300044
    # stopping at the first batch whose max timestamp reaches the target would answer nothing
    assert log.offset_for_timestamp(1700000300035) == 46
    assert log.offset_for_timestamp(1700000300044) == 46
    assert log.offset_for_timestamp(1700000300050) is None
