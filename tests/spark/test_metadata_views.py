"""view=batches and view=segments on every fixture log, against the records view aggregated: each
batch row's count, offsets and timestamps are its records', each segment row its batches' (and
so its records'); with verifyChecksums=false (headers only) the rows are the same."""

from __future__ import annotations

from bisect import bisect_left
import datetime as dt
from collections import defaultdict
from pathlib import Path

import pytest

from tests.conftest import read_segmentlog, shared_fixture
from tests.spark.test_view_damage import view_rows

REAL = shared_fixture("kafka-real")
CLIENTS = shared_fixture("kafka-clients")
BROKER_DIRS = sorted(p for p in REAL.iterdir() if p.is_dir())
CLIENT_CASES = sorted(p for p in CLIENTS.iterdir() if (p / "inspect.txt").exists())

pytestmark = pytest.mark.spark


def _ms(ts) -> int:
    """A Spark timestamp back in Kafka's milliseconds (None: no timestamp, Kafka's -1)."""
    if ts is None:
        return -1
    return round(ts.timestamp() * 1000)


def _plain(values) -> tuple:
    """A row's values with timestamps as milliseconds (Spark's are naive local times, Arrow's
    aware UTC ones)."""
    return tuple(_ms(v) if isinstance(v, dt.datetime) else v for v in values)


def _rows(spark, path: Path, view: str, **options) -> list:
    return read_segmentlog(spark, path, view=view, **options).collect()


def check_views(spark, path: Path) -> dict:
    """Compare the three views of the logs under `path`; what was compared, counted."""
    records = defaultdict(list)    # (topic, partition) -> [(offset, timestamp ms)]
    for r in read_segmentlog(spark, path, includePayload="false").select(
            "topic", "partition", "offset", "timestamp").collect():
        records[(r.topic, r.partition)].append((r.offset, _ms(r.timestamp)))
    batches = _rows(spark, path, "batches")
    # headers only (in-process, as Spark's tasks run it): the same rows
    assert [_plain(r.values()) for r in view_rows(path, "batches", verifyChecksums="false")] \
        == [_plain(b) for b in batches]
    by_partition = defaultdict(list)
    for b in batches:
        by_partition[(b.topic, b.partition)].append(b)

    counted = dict(records=0, batches=len(batches), segments=0)
    segment_facts = {}              # (topic, partition, segment) -> what its batches say
    for key, rows in by_partition.items():
        rows.sort(key=lambda b: b.baseOffset)
        lasts = [b.lastOffset for b in rows]
        assert lasts == sorted(lasts) and len(set(lasts)) == len(lasts), key
        inside = defaultdict(list)
        for offset, ts in sorted(records.pop(key, [])):
            i = bisect_left(lasts, offset)
            assert i < len(rows) and rows[i].baseOffset <= offset, (key, offset)
            inside[i].append((offset, ts))
        for i, b in enumerate(rows):
            got = inside.get(i, [])
            counted["records"] += len(got)
            if b.isControl:
                assert not got and b.recordCount >= 1, b
            else:
                assert b.recordCount == len(got), b
            if got:
                assert _ms(b.firstTimestamp) == got[0][1], b
                assert _ms(b.maxTimestamp) == max(ts for _, ts in got), b
                assert b.lastOffset >= got[-1][0], b
            first = got[0][0] if got else b.baseOffset
            facts = segment_facts.setdefault((*key, b.segment), dict(
                first=first, first_ts=_ms(b.firstTimestamp), last=-1, max_ts=-1))
            facts["last"] = max(facts["last"], b.lastOffset)
            facts["max_ts"] = max(facts["max_ts"], _ms(b.maxTimestamp))
    assert not records, f"records outside every batch: {list(records)}"

    segments = _rows(spark, path, "segments")
    empty = [s for s in segments if s.size == 0]      # a rolled segment no batch reached yet
    assert {(s.topic, s.partition, s.segment) for s in segments if s.size} == set(segment_facts)
    for s in empty:
        assert (s.firstOffset, s.lastOffset, s.firstTimestamp, s.maxTimestamp) == (None,) * 4, s
        assert Path(s.path).stat().st_size == 0
    counted["empty segments"] = len(empty)
    for s in segments:
        if not s.size:
            continue
        facts = segment_facts[(s.topic, s.partition, s.segment)]
        assert (s.firstOffset, _ms(s.firstTimestamp), s.lastOffset, _ms(s.maxTimestamp)) == (
            facts["first"], facts["first_ts"], facts["last"], facts["max_ts"]), s
        assert s.size == Path(s.path).stat().st_size
        counted["segments"] += 1
    return counted


@pytest.mark.parametrize("broker_dir", BROKER_DIRS, ids=lambda p: p.name)
def test_views_of_a_real_brokers_log_dir(spark, broker_dir):
    counted = check_views(spark, broker_dir)
    assert counted["batches"] > 0 and counted["segments"] > 0


EMPTY_ONLY = [REAL / "donaldy-kafka-2.7.1" / "myTopic-0",
              REAL / "ronem123-rupia" / "topic_transactions-0"]


def test_an_empty_segment_is_a_row(spark):
    """A partition whose only .log is empty (0 bytes: rolled, no batch yet) is a segments row
    with its size and no offsets; the records and batches views have no row, `segmentlog
    stats` counts the segment and its 0 bytes, `explain` plans nothing to read."""
    from tests.cli.helpers import run_cli

    for part in EMPTY_ONLY:
        log, = part.glob("*.log")
        base = int(log.name[:20])
        rows = _rows(spark, part, "segments")
        assert [(r.segment, r.path, r.size, r.firstOffset, r.lastOffset, r.firstTimestamp,
                 r.maxTimestamp) for r in rows] == [(base, str(log), 0, None, None, None,
                                                     None)]
        assert read_segmentlog(spark, part).count() == 0
        assert _rows(spark, part, "batches") == []
        stats = run_cli("stats", part)
        assert stats.returncode == 0 and "1 partition, 1 segment, 0 bytes" in stats.stdout
        explain = run_cli("explain", part)
        assert explain.returncode == 0 and "reads 0 of 0 bytes" in explain.stdout, explain


def test_views_of_every_kafka_clients_log(spark, tmp_path):
    # The case directories are not named <topic>-<partition>: link each segment in place.
    for case in CLIENT_CASES:
        partition_dir = tmp_path / f"{case.name}-0"
        partition_dir.mkdir()
        for log in case.glob("*.log"):
            (partition_dir / log.name).symlink_to(log)
    counted = check_views(spark, tmp_path)
    assert counted["segments"] == sum(len(list(c.glob("*.log"))) for c in CLIENT_CASES)
