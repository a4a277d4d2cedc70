"""Reading logs from a real S3-compatible server (moto on loopback): the same rows as the local
read, at the cost the query needs, counted by the server's side of the wire."""

from __future__ import annotations

from chispa import assert_df_equality
import pytest

from segmentlog_source.cli.generate import generate_log
from segmentlog_source.plan.options import parse_read_options
from segmentlog_source.plan.predicates import fold
from segmentlog_source.plan.read_plan import plan_read
from segmentlog_source.spark.reader import GroupScan, ScanSettings
from segmentlog_source.storage.log.log_segment import CONFIRMING_READ_BYTES
from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.conftest import read_segmentlog, shared_fixture

pytestmark = pytest.mark.spark

REAL = shared_fixture("kafka-real")
REAL_DIRS = sorted(p for p in REAL.iterdir() if p.is_dir())
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
INTERVAL = 4096
START = 1_700_000_000_000


def same_rows(spark, local_path, s3_uri, s3, **options):
    local = read_segmentlog(spark, local_path, **options)
    remote = read_segmentlog(spark, s3_uri, **options, **s3.storage_options)
    assert_df_equality(remote, local, ignore_row_order=True)
    return remote


@pytest.fixture(scope="module")
def bucket(s3):
    s3.create_bucket("reads")
    return "s3://reads"


@pytest.mark.parametrize("fixture", REAL_DIRS, ids=lambda p: p.name)
def test_every_real_broker_fixture_reads_the_same_from_s3(spark, s3, bucket, fixture):
    uri = f"{bucket}/real/{fixture.name}"
    s3.upload_tree(fixture, uri)
    df = same_rows(spark, fixture, uri, s3, includeHeaders="true")
    assert df.count() > 0


@pytest.fixture(scope="module")
def codec_logs(s3, bucket, tmp_path_factory):
    logs = {}
    for codec in CODECS:
        path = tmp_path_factory.mktemp(f"s3-{codec}")
        generate_log(str(path), topics=["orders", "clicks"], partitions=2, records=3000,
                     codec=codec, headers=2, segment_bytes=64 * 1024, transactions=True,
                     timestamp_jitter_ms=50, seed=7, start_timestamp=START)
        uri = f"{bucket}/codecs/{codec}"
        s3.upload_tree(path, uri)
        logs[codec] = (path, uri)
    return logs


@pytest.mark.parametrize("codec", CODECS)
def test_generated_logs_of_every_codec_read_the_same(spark, s3, codec_logs, codec):
    path, uri = codec_logs[codec]
    same_rows(spark, path, uri, s3, includeHeaders="true")
    same_rows(spark, path, uri, s3, isolationLevel="read_committed")


def test_range_options_and_pushed_down_where_read_the_same(spark, s3, codec_logs):
    path, uri = codec_logs["lz4"]
    same_rows(spark, path, uri, s3, startingOffsets='{"orders": {"0": 100, "1": 50}}',
              endingOffsets='{"orders": {"0": 400, "1": -1}}', subscribe="orders")
    same_rows(spark, path, uri, s3, startingTimestamp=str(START + 500),
              endingTimestamp=str(START + 900))
    where = ("offset between 200 and 260 and partition = 1 and topic = 'clicks' "
             f"and timestamp >= timestamp_millis({START + 100})")
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    try:
        local = read_segmentlog(spark, path, pushdown="true").where(where)
        remote = read_segmentlog(spark, uri, pushdown="true", **s3.storage_options).where(where)
        assert_df_equality(remote, local, ignore_row_order=True)
        assert read_segmentlog(spark, uri, pushdown="true", **s3.storage_options) \
            .where(where).count() > 0
    finally:
        spark.conf.unset("spark.sql.python.filterPushdown.enabled")


# -- what a narrow read costs, as the server counted it --------------------------------------------

@pytest.fixture(scope="module")
def big_log(s3, bucket, tmp_path_factory):
    path = tmp_path_factory.mktemp("s3-bytes")
    generate_log(str(path), topics=["t"], partitions=1, records=30_000, value_size=100,
                 records_per_batch=25, segment_bytes=256 * 1024, timestamp_step_ms=10,
                 # out of order by less than a batch (250 ms), as one producer's CreateTimes
                 # are: ListOffsets then finds a timestamp within an index interval (§8.2)
                 timestamp_jitter_ms=100, seed=3, start_timestamp=START)
    uri = f"{bucket}/bytes"
    s3.upload_tree(path, uri)
    part = PartitionLog.open(str(path / "t-0"))
    batches = [(h.base_offset, h.last_offset, h.size, seg.base_offset)
               for seg, h, _ in part.iter_entries()]
    return uri, part, batches


def _read_counted(s3, options):
    """Plan and scan like Spark does (planner, then one scan per group); the server's count of
    requests and body bytes, split by kind of object."""
    s3.reset_counts()
    opts = parse_read_options(options)
    plan = plan_read(opts)
    offsets = []
    for group in plan.groups:
        settings = ScanSettings(fold([]), False, True, True, False, True, opts.store)
        for batch in GroupScan(group, settings):
            offsets.extend(batch.column("offset").to_pylist())
    requests = s3.requests()
    log_bytes = sum(r.body_bytes for r in requests if r.key.endswith(".log"))
    index_bytes = sum(r.body_bytes for r in requests if r.key.endswith("index"))
    return offsets, log_bytes, index_bytes, requests


def _bound(batches, part, lo, hi):
    """The range's batches + one index interval and one batch per touched segment; the last
    segment counts as touched (its tail gives the log end offset)."""
    wanted = [b for b in batches if b[0] < hi and b[1] >= lo]
    touched = {b[3] for b in wanted} | {part.segments[-1].base_offset}
    biggest = max(b[2] for b in batches)
    return sum(b[2] for b in wanted) + len(touched) * (INTERVAL + biggest), touched


@pytest.mark.parametrize("start,length", [(12_000, 30), (5_000, 400), (29_990, 10), (0, 1)])
def test_narrow_offset_range_costs_its_bytes(s3, big_log, start, length):
    uri, part, batches = big_log
    end = start + length
    offsets, log_bytes, index_bytes, requests = _read_counted(s3, {
        "path": uri, "startingOffsets": f'{{"t": {{"0": {start}}}}}',
        "endingOffsets": f'{{"t": {{"0": {end}}}}}', **s3.storage_options})
    assert offsets == list(range(start, end))
    bound, touched = _bound(batches, part, start, end)
    assert log_bytes <= bound
    # index files of the touched segments only, each read whole, once
    sizes = {s.base_offset: s.fs.size(s.index_path) + s.fs.size(s.time_index_path)
             for s in part.segments}
    assert index_bytes <= sum(sizes[b] for b in touched)
    # a listing, two requests per index file, and per touched segment's .log: a HEAD, the scan,
    # the header after it, the tail, and the planner's header hops (one small read each) for two
    # locates, each from one index entry early to the batch after the answer
    smallest = min(b[2] for b in batches)
    hops = 2 * (2 * (INTERVAL + max(b[2] for b in batches)) // smallest + 2)
    assert len(requests) <= 1 + 4 * len(touched) + (4 + hops) * len(touched)


@pytest.mark.parametrize("start_ms,length_ms", [(120_000, 300), (3_000, 2_000)])
def test_narrow_time_range_costs_its_bytes(s3, big_log, start_ms, length_ms):
    uri, part, batches = big_log
    lo_ts, hi_ts = START + start_ms, START + start_ms + length_ms
    lo, hi = part.offset_for_timestamp(lo_ts), part.offset_for_timestamp(hi_ts)
    offsets, log_bytes, _, requests = _read_counted(s3, {
        "path": uri, "startingTimestamp": str(lo_ts), "endingTimestamp": str(hi_ts),
        **s3.storage_options})
    assert offsets == list(range(lo, hi))
    bound, touched = _bound(batches, part, lo, hi)
    # ListOffsets for each timestamp reads from its index entry through the answer and the batch
    # after it, which vouches for the answer's offsets (spec §8.2), in 8 KiB reads; and the tail
    # of the segment before the answer's, whose end must meet it (a lost segment between them
    # could have held the answer)
    biggest = max(b[2] for b in batches)
    lookup = INTERVAL + 2 * biggest + 8 * 1024
    # ListOffsets asks each segment it passes over (those below the ending timestamp's answer)
    # for its largest timestamp, like a broker: its time index's last entry, confirmed by the
    # batch that entry names and the headers after it, in one read of at most
    # CONFIRMING_READ_BYTES (on a store a request costs more than 32 KiB of bytes do)
    passed = [s for s in part.segments if s.base_offset <= hi]
    assert log_bytes <= bound + 2 * (lookup + INTERVAL + biggest) \
        + len(passed) * CONFIRMING_READ_BYTES
    # Requests: a listing, two (HEAD, GET) per index file, and per segment passed over a HEAD
    # of its `.log`, its first header (which confirms its file name: segment_order.py) and
    # the confirming read (one more where the tail runs past it); a few per touched `.log`
    index_files = 2 * len(part.segments)
    assert len(requests) <= 1 + 2 * index_files + 4 * len(passed) + 6 * len(touched)
    assert log_bytes < sum(b[2] for b in batches) / 20
