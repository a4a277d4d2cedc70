"""A narrow range reads its own bytes plus at most one index interval and one batch per touched
segment: counted in the reader (the executor side, without a SparkSession)."""

from __future__ import annotations

from pathlib import Path
import shutil

from hypothesis import given, settings, strategies as st
import pyarrow as pa
import pytest

from segmentlog_source.cli.generate import generate_log
from segmentlog_source.format.batch import V2_HEADER_SIZE
from segmentlog_source.plan.options import parse_read_options
from segmentlog_source.plan.predicates import Predicate, fold
from segmentlog_source.plan.read_plan import plan_read
from segmentlog_source.spark.reader import GroupScan, ScanSettings
from segmentlog_source.storage.io.local import LocalFileSystem
from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.conftest import shared_dir

INTERVAL = 4096
START = 1_700_000_000_000


@pytest.fixture(scope="module", params=["none", "lz4"])
def log(request, tmp_path_factory):
    path = tmp_path_factory.mktemp(f"bytes-{request.param}")
    generate_log(str(path), topics=["t"], partitions=1, records=30_000, codec=request.param,
                 value_size=100, records_per_batch=25, segment_bytes=256 * 1024,
                 timestamp_step_ms=10, timestamp_jitter_ms=500, seed=3, start_timestamp=START)
    part = PartitionLog.open(str(path / "t-0"))
    batches = [(h.base_offset, h.last_offset, h.size, h.max_timestamp, seg.log_path)
               for seg, h, _ in part.iter_entries()]
    return path, part, batches


def scan(path: Path, options: dict, predicates=()):
    opts = parse_read_options({"path": str(path), **options})
    plan = plan_read(opts, fold(list(predicates)))
    settings_ = ScanSettings(fold(list(predicates)), False, True, True, False, True)
    offsets, read = [], 0
    for group in plan.groups:
        s = GroupScan(group, settings_)
        for batch in s:
            offsets.extend(batch.column("offset").to_pylist())
        read += s.stats.bytes_read
    return offsets, read, plan


def bound(batches, lo, hi) -> int:
    wanted = [b for b in batches if b[0] < hi and b[1] >= lo]
    touched = {b[4] for b in wanted}
    biggest = max(b[2] for b in batches)
    return sum(b[2] for b in wanted) + len(touched) * (INTERVAL + biggest)


def test_log_spans_many_segments(log):
    assert len(log[1].segments) >= 8


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 29_000), st.integers(1, 400))
def test_offset_range_options(log, start, length):
    path, part, batches = log
    end = min(start + length, part.log_end_offset)
    offsets, read, _ = scan(path, {"startingOffsets": f'{{"t": {{"0": {start}}}}}',
                                   "endingOffsets": f'{{"t": {{"0": {end}}}}}'})
    assert offsets == list(range(start, end))
    assert read <= bound(batches, start, end)
    # in fact the executor reads exactly the batches that hold the range, plus the header of
    # the batch after it when the range ends inside a segment (its offsets vouch for the last
    # batch's: offsets are outside the CRC)
    exact = sum(b[2] for b in batches if b[0] < end and b[1] >= start)
    assert read in (exact, exact + V2_HEADER_SIZE)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 290_000), st.integers(10, 3000))
def test_time_range_options(log, start_ms, length_ms):
    path, part, batches = log
    lo_ts, hi_ts = START + start_ms, START + start_ms + length_ms
    lo, hi = part.offset_for_timestamp(lo_ts), part.offset_for_timestamp(hi_ts)
    offsets, read, _ = scan(path, {"startingTimestamp": str(lo_ts),
                                   "endingTimestamp": str(hi_ts)})
    hi = part.log_end_offset if hi is None else hi
    assert offsets == list(range(lo, hi))
    assert read <= bound(batches, lo, hi)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 290_000))
def test_where_timestamp_lower_bound_prunes(log, start_ms):
    path, part, batches = log
    t = START + start_ms
    preds = [Predicate("timestamp", ">=", t * 1000), Predicate("offset", "<", 10**9)]
    offsets, read, _ = scan(path, {}, preds)
    first = part.offset_for_timestamp(t)
    # exact rows: every record with timestamp >= t; and nothing before ListOffsets(t) is read
    assert offsets and min(offsets) >= first
    assert read <= bound(batches, first, part.log_end_offset)


def test_single_offset_lookup_reads_about_one_interval(log):
    path, part, batches = log
    offsets, read, plan = scan(path, {}, [Predicate("offset", "=", 12_345)])
    assert offsets == [12_345]
    assert read <= INTERVAL + 2 * max(b[2] for b in batches)
    assert plan.planner_io.bytes_read < 64 * 1024


def test_metadata_only_batches_match_the_spark_schema(log):
    path, _, _ = log
    opts = parse_read_options({"path": str(path), "includePayload": "false"})
    plan = plan_read(opts)
    settings_ = ScanSettings(fold([]), False, True, False, False, True)
    batch = next(iter(GroupScan(plan.groups[0], settings_)))
    assert batch.schema == pa.schema([("topic", pa.string()), ("partition", pa.int32()),
                                      ("offset", pa.int64()),
                                      ("timestamp", pa.timestamp("us", tz="UTC")),
                                      ("timestampType", pa.int32())])


CLIENT_LOGS = sorted(p.name for p in (shared_dir() / "fixtures" / "kafka-clients").iterdir()
                     if p.is_dir() and list(p.glob("*.log")))


@pytest.mark.parametrize("chunk", [None, 700])
@pytest.mark.parametrize("name", CLIENT_LOGS)
def test_a_whole_log_is_read_once_whichever_path_reads_it(name, chunk, tmp_path, monkeypatch):
    """The walked chunks hand what does not look healthy (a legacy entry, a gap, a compressed
    wrapper) to the checked scan with the bytes already read: every byte is read once, and the
    rows are the checked scan's alone."""
    if chunk:
        monkeypatch.setattr(LocalFileSystem, "read_ahead_bytes", chunk)
    part = tmp_path / "t-0"
    part.mkdir()
    for log_file in (shared_dir() / "fixtures" / "kafka-clients" / name).glob("*.log"):
        shutil.copy(log_file, part / log_file.name)
    size = sum(f.stat().st_size for f in part.glob("*.log"))
    checked = []
    monkeypatch.setattr(GroupScan, "_checked_scan", _counted(GroupScan._checked_scan, checked))
    offsets, read, _ = scan(tmp_path, {})
    assert read == size
    # the walk takes every healthy range of uncompressed batches: only damage or legacy
    # entries, gaps, compaction and transaction markers go to the checked scan
    if name in ("v2-none", "v2-headers", "v2-log-append-time", "v2-large-base-offset"):
        assert not checked, name
    monkeypatch.setattr(GroupScan, "_walked_scan", lambda *args: None)
    assert scan(tmp_path, {})[:2] == (offsets, read)


def _counted(method, calls: list):
    def counted(self, *args, **kwargs):
        calls.append(args)
        return method(self, *args, **kwargs)
    return counted
