"""Lookups by timestamp over closed segments of legacy (magic 0/1) batches, compressed too: a
wrapper's first offset is known only inside it, and the lookup that confirms a closed
segment's largest timestamp must still find the wrapper its time index names. Kafka's client
library wrote the logs (../shared/fixtures/kafka-clients); kafka-python decodes the answers."""

from __future__ import annotations

import shutil

from kafka.record import MemoryRecords
import pytest

from segmentlog_source.storage.log.log_segment import LogSegment
from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.conftest import shared_fixture

CASES = ["v1-none", "v1-gzip", "v1-snappy", "v1-lz4", "mixed-v0-v1-v2"]


def _records(data: bytes) -> list[tuple[int, int]]:
    """(offset, timestamp) of every record, as kafka-python reads them (-1: none, magic 0)."""
    records, out = MemoryRecords(data), []
    while (batch := records.next_batch()) is not None:
        out += [(r.offset, r.timestamp if r.timestamp is not None else -1) for r in batch]
    return out


def _split(case: str, tmp_path, parts: int):
    """The fixture's log cut at batch boundaries into `parts` segments, named by the offset
    after the batch before each cut; no index files (rebuilt as a broker rebuilds them)."""
    data = (shared_fixture("kafka-clients", case) / "00000000000000000000.log").read_bytes()
    log = tmp_path / "t-0"
    log.mkdir()
    (log / "00000000000000000000.log").write_bytes(data)
    headers = [h for h, _ in LogSegment(str(log), 0).iter_headers()]
    cuts = [headers[len(headers) * k // parts] for k in range(1, parts)]
    bounds = [0] + [c.position for c in cuts] + [len(data)]
    names = [0] + [headers[headers.index(c) - 1].last_offset + 1 for c in cuts]
    shutil.rmtree(log)
    log.mkdir()
    for name, start, end in zip(names, bounds, bounds[1:]):
        (log / f"{name:020d}.log").write_bytes(data[start:end])
    return log, _records(data)


@pytest.mark.parametrize("parts", [2, 3])
@pytest.mark.parametrize("case", CASES)
def test_a_lookup_passes_closed_legacy_segments_as_a_broker_answers(tmp_path, case, parts):
    log_dir, records = _split(case, tmp_path, parts)
    log = PartitionLog.open(str(log_dir))
    assert len(log.segments) == parts
    stamped = sorted({ts for _, ts in records if ts >= 0})
    assert stamped, "the fixture has timestamps"
    for target in stamped[:: max(1, len(stamped) // 12)] + [stamped[-1], stamped[-1] + 1]:
        expected = next((o for o, ts in records if ts >= target), None)
        assert log.offset_for_timestamp(target) == expected, target
