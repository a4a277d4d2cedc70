"""64-bit edges (issue #16, class 4): timestamps whose microseconds pass a long are an error
naming file and offset (never wrapped into another century); offsets and timestamps near
Long.MAX_VALUE are never dropped by an exclusive upper bound; verify does not overflow."""

from __future__ import annotations

import pytest

from segmentlog_source.errors import UnrepresentableValueError
from segmentlog_source.format.batch import MAX_OFFSET, set_log_append_time
from segmentlog_source.format.record_encoder import encode_batch
from segmentlog_source.format.records import Record
from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.damage.helpers import dump_all, read, verify_errors

LIMIT_MS = (2**63 - 1) // 1000     # the largest millisecond a Spark timestamp holds


def _write(directory, batches: list[bytes]):
    with PartitionLog.open_for_append(str(directory), topic="t", partition=0) as log:
        for batch in batches:
            log.append_batches(batch)
    return directory


@pytest.mark.parametrize("timestamp", [LIMIT_MS + 1, 2**62, 2**63 - 2])
@pytest.mark.parametrize("where", [0, 3])
def test_a_timestamp_beyond_spark_is_an_error_naming_file_and_offset(tmp_path, timestamp, where):
    records = [Record(i, 1_700_000_000_000 + i, b"k", b"v") for i in range(5)]
    records[where] = records[where]._replace(timestamp=timestamp)
    log = _write(tmp_path / "t-0", [encode_batch(records, base_offset=0)])
    with pytest.raises(UnrepresentableValueError) as info:
        read(log)
    assert "00000000000000000000.log" in str(info.value)
    assert f"offset {where} has timestamp {timestamp}" in str(info.value)
    assert verify_errors(log) == []        # a valid log: verify has nothing to say, no crash
    assert "Traceback" not in dump_all(log)


def test_log_append_time_beyond_spark_is_an_error(tmp_path):
    batch = bytearray(encode_batch([Record(0, 1, None, b"v"), Record(1, 2, None, b"w")]))
    set_log_append_time(batch, 2**62)
    log = _write(tmp_path / "t-0", [bytes(batch)])
    with pytest.raises(UnrepresentableValueError, match="offset 0 has timestamp"):
        read(log)


def test_the_largest_timestamp_spark_holds_is_returned(tmp_path):
    records = [Record(0, LIMIT_MS, None, b"a"), Record(1, 0, None, b"b")]
    log = _write(tmp_path / "t-0", [encode_batch(records)])
    rows = read(log)
    assert [r[2] for r in rows] == [0, 1]
    assert [r[3] for r in rows] == [LIMIT_MS * 1000, 0]
    # and a WHERE-style upper bound of Long.MAX_VALUE drops nothing
    assert len(read(log, endingTimestamp=str(2**63 - 1))) == 2


@pytest.mark.parametrize("base", [2**62, MAX_OFFSET - 9, 2**63 - 2**40])
def test_offsets_near_long_max_are_all_returned(tmp_path, base):
    records = [Record(base + i, 1_700_000_000_000 + i, None, b"%d" % i) for i in range(10)]
    log = tmp_path / "t-0"      # one segment named after its base offset, as a broker names it
    log.mkdir()
    (log / f"{base:020d}.log").write_bytes(encode_batch(records[:4], base_offset=base)
                                          + encode_batch(records[4:], base_offset=base + 4))
    rows = read(log)
    assert [r[2] for r in rows] == [base + i for i in range(10)]
    assert [r[6] for r in rows] == [b"%d" % i for i in range(10)]
    assert verify_errors(log) == []
    assert "Traceback" not in dump_all(log)
