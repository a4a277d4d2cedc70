"""A remote tier in a real S3-compatible server (moto on loopback, counting what it serves):
read alone and below a local log, planned through the copies' own indexes, so a 0.1% time
range costs under 1% of the tier's bytes, in Kafka's LocalTieredStorage layout and in Aiven's
(fixed 64 KiB chunks).

What such a read costs beyond the range's own batches is per segment it plans: the copy's
indexes (Aiven: its manifest and `.indexes`) and ~14 header probes of its `.log` for the two
ListOffsets lookups and the checks on its largest timestamp (~9 KB a segment for 1 MiB
LocalTieredStorage copies, ~80 KB for 8 MiB Aiven ones), so the tiers below have segments of
1 and 8 MiB (Kafka's default is 1 GiB)."""

from __future__ import annotations

import json
import shutil

from chispa import assert_df_equality
import pyarrow as pa
import pytest

from segmentlog_source.cli.generate import generate_log
from segmentlog_source.plan.options import parse_read_options
from segmentlog_source.plan.predicates import RowFilter
from segmentlog_source.plan.read_plan import plan_read
from segmentlog_source.spark.partition_scan import SegmentLogInputPartition, scan_partition
from tests.conftest import read_segmentlog
from tests.storage.remote_metadata_log import copy_events, write_metadata
from tests.storage.tiered_layouts import copy_to_aiven_tier, copy_to_tier, topic_id_of

START = 1_700_000_000_000
STEP_MS = 1_000
RECORDS = 150_000
SEGMENT_BYTES = 1024 * 1024


@pytest.fixture(scope="module")
def tier(s3, tmp_path_factory):
    """~19 MB of one partition in 18 segments of 1 MiB; every closed one copied to a tier in
    S3, laid out as LocalTieredStorage lays it out."""
    work = tmp_path_factory.mktemp("s3-tier")
    generate_log(str(work / "data"), topics=["t"], partitions=1, records=RECORDS,
                 value_size=100, segment_bytes=SEGMENT_BYTES, timestamp_step_ms=STEP_MS,
                 seed=8, start_timestamp=START)
    copied = copy_to_tier(work / "data" / "t-0", work / "tier", seed=8)
    s3.create_bucket("tier")
    s3.upload_tree(work / "tier", "s3://tier/rsm")
    tier_bytes = sum(f.stat().st_size for f in (work / "tier").rglob("*") if f.is_file())
    return work, copied, tier_bytes


@pytest.fixture(scope="module")
def aiven_tier(s3, tmp_path_factory):
    """~34 MB of one partition in 8 MiB segments, its closed ones uploaded as Aiven's plugin
    uploads them without compression, in fixed chunks of 64 KiB."""
    work = tmp_path_factory.mktemp("s3-aiven")
    generate_log(str(work / "data"), topics=["t"], partitions=1, records=2 * RECORDS,
                 value_size=100, segment_bytes=8 * SEGMENT_BYTES, timestamp_step_ms=STEP_MS,
                 seed=9, start_timestamp=START)
    copied = copy_to_aiven_tier(work / "data" / "t-0", work / "tier", chunk_size=64 * 1024,
                                seed=9)
    s3.create_bucket("aiven")
    s3.upload_tree(work / "tier", "s3://aiven/rsm")
    tier_bytes = sum(f.stat().st_size for f in (work / "tier").rglob("*") if f.is_file())
    return work, copied, tier_bytes


def _rows(path, **options) -> list[dict]:
    """A read planned and scanned here, as Spark's driver and tasks would (no Spark: the
    server counts the same requests)."""
    opts = parse_read_options({"path": str(path), **options})
    return [row for group in plan_read(opts).groups
            for batch in scan_partition(SegmentLogInputPartition(group), opts)
            for row in pa.Table.from_batches([batch]).to_pylist()]


@pytest.mark.parametrize("layout", ["LocalTieredStorage", "Aiven"])
def test_a_narrow_time_range_reads_under_one_percent_of_the_tier(s3, request, layout):
    work, copied, tier_bytes = request.getfixturevalue(
        "tier" if layout == "LocalTieredStorage" else "aiven_tier")
    uri = "s3://tier/rsm" if layout == "LocalTieredStorage" else "s3://aiven/rsm"
    records = RECORDS if layout == "LocalTieredStorage" else 2 * RECORDS
    assert len(copied) >= 3
    lo = START + records * STEP_MS // 2
    window = {"startingTimestamp": str(lo),
              "endingTimestamp": str(lo + records * STEP_MS // 1000)}   # 0.1% of the time
    s3.reset_counts()
    rows = _rows(uri, **window, **s3.storage_options)
    served = sum(r.body_bytes for r in s3.requests() if r.method != "GET" or r.query == "")
    assert rows == _rows(work / "data", **window)
    assert len(rows) == records // 1000
    assert served < tier_bytes / 100, (served, tier_bytes)


@pytest.fixture(scope="module")
def tier_metadata(tier):
    """The tier's `__remote_log_metadata` (one finished copy event pair per copy, described
    from the copy's own files), in a local data directory, as a broker keeps it."""
    work, copied, _ = tier
    topic_id = topic_id_of(work / "data" / "t-0")
    root = work / "rlmm"
    write_metadata(root, [v for _, _, prefix in copied
                          for v in copy_events(prefix, "t", topic_id, 0, epochs=[(0, 0)])])
    return str(root)


def _copies_requested(s3, copied) -> dict[str, int]:
    """GET requests per copy (by segment id) that the server answered (a retry after a
    loaded server's error is not the planner's choice)."""
    out = {}
    for r in s3.requests():
        for _, segment_id, _ in copied:
            if r.method == "GET" and segment_id in r.key and r.status < 500:
                out[segment_id] = out.get(segment_id, 0) + 1
    return out


@pytest.mark.parametrize("bound", ["time", "offset"])
def test_copies_outside_the_range_are_skipped_on_their_metadata(s3, tier, tier_metadata,
                                                                 bound):
    """With `__remote_log_metadata`, a copy whose metadata puts it outside the range (its
    offsets; for a timestamp, a max timestamp below it, as Kafka's remote ListOffsets judges
    it) is passed over without a request for any of its files: only the copies holding the
    range and the last one (where the log end offset is read) are requested. Without the
    metadata, a time range reads the indexes and headers of every copy below it."""
    work, copied, _ = tier
    middle = len(copied) // 2
    if bound == "time":
        lo = START + copied[middle][0] * STEP_MS + 5 * STEP_MS   # (one record a second)
        window = {"startingTimestamp": str(lo), "endingTimestamp": str(lo + 100 * STEP_MS)}
    else:
        lo = copied[middle][0] + 5
        window = {"startingOffsets": json.dumps({"t": {"0": lo}}),
                  "endingOffsets": json.dumps({"t": {"0": lo + 100}})}
    expected = _rows(work / "data", **window)
    assert len(expected) == 100
    s3.reset_counts()
    rows = _rows("s3://tier/rsm", remoteLogMetadata=tier_metadata, **window,
                 **s3.storage_options)
    assert rows == expected
    by_copy = _copies_requested(s3, copied)
    holding, last = copied[middle][1], copied[-1][1]
    assert set(by_copy) == {holding, last}, by_copy
    # the last copy: its .index and .timeindex, and the tail that says the log end offset
    # (6 requests). (Before this, the 8 copies below the time range were asked 4 requests
    # each, the 7 above it 1: 314 requests in all, 131 now. The holding copy's own vary by
    # one from run to run, 19 or 20, not explained yet: they are not asserted.)
    assert by_copy[last] == 6, [(r.method, r.key, r.status) for r in s3.requests()]

    if bound == "time":   # the same read without the metadata opens every copy below it
        s3.reset_counts()
        assert _rows("s3://tier/rsm", **window, **s3.storage_options) == expected
        listed = _copies_requested(s3, copied)
        assert {c[1] for c in copied[:middle + 1]} <= set(listed), listed



def test_a_timestamp_predicate_plans_past_copies_on_their_metadata(s3, tier, tier_metadata):
    """WHERE timestamp >= T (the planner's time floor, not ListOffsets): the copies whose
    metadata max timestamp is below T are passed over unread, and the first task starts in
    the copy holding T."""
    work, copied, _ = tier
    middle = len(copied) // 2
    lo = START + (copied[middle][0] + 5) * STEP_MS
    opts = parse_read_options({"path": "s3://tier/rsm", "remoteLogMetadata": tier_metadata,
                               **s3.storage_options})
    s3.reset_counts()
    plan = plan_read(opts, RowFilter(timestamp_lo_ms=lo))
    tasks = sorted((t for g in plan.groups for t in g.tasks), key=lambda t: t.segment_base)
    assert tasks[0].segment_base == copied[middle][0]
    requested = set(_copies_requested(s3, copied))
    assert not requested & {c[1] for c in copied[:middle]}, requested
    assert copied[middle][1] in requested

def test_a_copy_whose_max_timestamp_is_the_bound_is_not_skipped(s3, tier, tier_metadata):
    """Kafka's rule: a copy may hold the first offset with timestamp >= T unless its max
    timestamp is below T. T equal to a copy's max timestamp (its last record's here) starts
    the range in that copy, at that record."""
    work, copied, _ = tier
    middle = len(copied) // 2
    last_of_before = copied[middle][0] - 1
    lo = START + last_of_before * STEP_MS
    window = {"startingTimestamp": str(lo), "endingTimestamp": str(lo + 100 * STEP_MS)}
    s3.reset_counts()
    rows = _rows("s3://tier/rsm", remoteLogMetadata=tier_metadata, **window,
                 **s3.storage_options)
    assert rows == _rows(work / "data", **window)
    assert [r["offset"] for r in rows] == list(range(last_of_before, last_of_before + 100))
    assert set(_copies_requested(s3, copied)) == {copied[middle - 1][1], copied[middle][1],
                                                  copied[-1][1]}


@pytest.mark.spark
def test_s3_copies_below_a_local_log_each_offset_once(spark, s3, tier, tmp_path):
    """The broker's data directory on disk after local retention (only the last segments),
    its remote tier in S3: one log, each offset once, across where the tiers meet (the last
    three copies are still local too)."""
    work, copied, _ = tier
    local = tmp_path / "data"
    shutil.copytree(work / "data", local)
    keep_from = copied[-3][0]
    for file in (local / "t-0").iterdir():
        if file.stem.isdigit() and int(file.stem) < keep_from:
            file.unlink()
    around = {"startingOffsets": json.dumps({"t": {"0": copied[-5][0] - 7}}),
              "endingOffsets": json.dumps({"t": {"0": keep_from + 1000}})}
    both = read_segmentlog(spark, local, remoteTier="s3://tier/rsm", **around,
                           **s3.storage_options)
    assert_df_equality(both, read_segmentlog(spark, work / "data", **around),
                       ignore_row_order=True)
    assert both.count() == keep_from + 1000 - (copied[-5][0] - 7)
