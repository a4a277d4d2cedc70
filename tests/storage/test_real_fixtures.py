"""Every broker-written partition under fixtures/kafka-real: read, indexed and looked up exactly
as the broker (and kafka-python's independent decoder, in inspect.txt) sees it."""

from __future__ import annotations

from pathlib import Path
import random

import pytest

from segmentlog_source.format.batch import CODEC_NAMES
from segmentlog_source.storage.log.abstract_index import DEFAULT_MAX_INDEX_BYTES
from segmentlog_source.storage.log.log_directory import find_partitions
from segmentlog_source.storage.log.offset_index import OffsetIndex
from segmentlog_source.storage.log.partition_log import PartitionLog
from segmentlog_source.storage.log.segment_indexer import rebuild_index_bytes
from segmentlog_source.storage.log.time_index import TimeIndex
from segmentlog_source.storage.txn.producer_state_manager import snapshot_offsets
from tests.conftest import shared_fixture
from tests.fixture_inspect import parse_inspect
from tests.storage.helpers import BruteForce, real_id, real_partition_dirs

PARTITIONS = real_partition_dirs()
# __cluster_metadata-0 has no segments in the fixture (its .log is >= 4 MiB and was not kept).
LOGS = [p for p in PARTITIONS if not p.name.startswith("__cluster_metadata")]


def test_fixture_inventory():
    assert len(PARTITIONS) == 31 and len(LOGS) == 30


@pytest.mark.parametrize("path", LOGS, ids=real_id)
def test_shallow_iteration_matches_inspect(path):
    expected = parse_inspect(path / "inspect.txt")
    log = PartitionLog.open(str(path))
    topic, _, partition = path.name.rpartition("-")
    assert (log.topic, log.partition) == (topic, int(partition))
    seen = []
    for segment, header, entry in log.iter_entries(chunk_bytes=700, verify_crc=True):
        seen.append((segment.log_path.rsplit("/", 1)[1], header.position, header.last_offset,
                     header.magic, CODEC_NAMES[header.codec], header.crc, header.max_timestamp,
                     header.is_transactional, header.is_control, header.producer_id))
        assert len(entry) == header.size
    assert seen == [(b.file, b.position, b.last_offset, b.magic, b.codec, b.checksum,
                     b.max_timestamp, b.is_transactional, b.is_control, b.producer_id)
                    for b in expected.batches]
    # v2 base offsets are in the header; legacy ones need decompression (none is compressed here)
    for (segment, header, _), b in zip(log.iter_entries(), expected.batches):
        assert header.base_offset == b.base_offset
    sizes = {s.log_path.rsplit("/", 1)[1]: s.size for s in log.segments}
    assert sizes == expected.segments
    last = max((b.last_offset for b in expected.batches), default=None)
    first_base = log.segments[0].base_offset
    assert log.log_start_offset == first_base
    assert log.log_end_offset == (last + 1 if last is not None else first_base)


@pytest.mark.parametrize("path", LOGS, ids=real_id)
def test_index_files_read_as_inspect_lists_them(path):
    expected = parse_inspect(path / "inspect.txt")
    for segment in PartitionLog.open(str(path)).segments:
        name = segment.log_path.rsplit("/", 1)[1][:20]
        if not segment.has_index_files:
            assert f"{name}.index" in expected.missing
            continue
        assert [(o - segment.base_offset, p) for o, p in segment.offset_index.entries()] == \
            expected.index.get(f"{name}.index", [])
        assert [(t, o - segment.base_offset) for t, o in segment.time_index.entries()] == \
            expected.timeindex.get(f"{name}.timeindex", [])


def _clean_segments():
    """(segment dir, base offset) of every real segment whose index files are present and
    trimmed: the state a clean close or a roll leaves."""
    found = []
    for path in LOGS:
        for index in sorted(path.glob("*.index")):
            time_index = index.with_suffix(".timeindex")
            assert index.stat().st_size != DEFAULT_MAX_INDEX_BYTES
            assert time_index.exists()
            found.append((path, int(index.name[:20])))
    return found


CLEAN = _clean_segments()


def test_clean_segment_inventory():
    assert len(CLEAN) == 13  # as SOURCES.md and spec §4.5 count them


@pytest.mark.parametrize("path,base", CLEAN, ids=[f"{real_id(p)}@{b}" for p, b in CLEAN])
def test_rebuilt_indexes_are_byte_identical(path, base):
    log = (path / f"{base:020d}.log").read_bytes()
    index = (path / f"{base:020d}.index").read_bytes()
    time_index = (path / f"{base:020d}.timeindex").read_bytes()
    # Restarts of a 2.1 broker, known from its producer snapshots (spec §4.5).
    restarts = snapshot_offsets(str(path))
    assert rebuild_index_bytes(log, base, restart_offsets=restarts) == (index, time_index)
    plain = rebuild_index_bytes(log, base)
    if path.parent.name == "william0423-kafka":
        assert plain != (index, time_index)  # the restarts are what makes these two differ
    else:
        assert plain == (index, time_index)


@pytest.mark.parametrize("path", LOGS, ids=real_id)
def test_offset_lookups_agree_with_a_scan(path):
    log = PartitionLog.open(str(path))
    brute = BruteForce(log)
    for offset in range(log.log_start_offset, log.log_end_offset + 1):
        segment, position = log.position_for_offset(offset)
        assert (segment.base_offset, position) == brute.position(offset), offset


@pytest.mark.parametrize("path", LOGS, ids=real_id)
def test_timestamp_lookups_agree_with_a_scan(path):
    log = PartitionLog.open(str(path))
    brute = BruteForce(log)
    stamps = brute.record_timestamps()
    rng = random.Random(path.name)
    targets = {0, 1}
    for ts in stamps[:: max(1, len(stamps) // 200)] + stamps[-3:]:
        targets |= {ts - 1, ts, ts + 1}
    if stamps:
        targets |= {rng.randint(stamps[0] - 10, stamps[-1] + 10) for _ in range(50)}
    for target in sorted(t for t in targets if t >= 0):
        assert log.offset_for_timestamp(target) == brute.offset_for_timestamp(target), target


def test_fixture_facts():
    """A few facts SOURCES.md states, seen through the API."""
    root = shared_fixture("kafka-real")
    gaps = PartitionLog.open(str(root / "donaldy-kafka-2.7.1" / "__consumer_offsets-39"))
    assert [s.base_offset for s in gaps.segments] == [0, 18]
    assert gaps.position_for_offset(5)[1] == gaps.position_for_offset(16)[1]  # 4 jumps to 16
    empty = PartitionLog.open(str(root / "donaldy-kafka-2.7.1" / "myTopic-0"))
    assert (empty.log_start_offset, empty.log_end_offset) == (38, 38)
    assert empty.offset_for_timestamp(0) is None
    assert empty.offset_for_timestamp(-2) == 38 and empty.offset_for_timestamp(-1) == 38
    metadata = PartitionLog.open(str(root / "gozieokafor-data-store" / "__cluster_metadata-0"))
    assert metadata.segments == [] and metadata.log_end_offset == 0  # only KRaft snapshots kept
    debug = PartitionLog.open(str(root / "william0423-kafka" / "debug_topic-0"))
    assert debug.offset_for_timestamp(1534299423772) == 21
    assert debug.offset_for_timestamp(-3) == 39


def test_data_dirs_are_discovered():
    root = shared_fixture("kafka-real")
    found = [p for d in sorted(root.iterdir()) if d.is_dir() for p in find_partitions(str(d))]
    assert sorted(real_id(Path(p.path)) for p in found) == sorted(real_id(p) for p in LOGS)


def test_index_objects_round_trip_real_files():
    for path, base in CLEAN:
        data = (path / f"{base:020d}.index").read_bytes()
        assert OffsetIndex.from_bytes(data, base).to_bytes() == data
        data = (path / f"{base:020d}.timeindex").read_bytes()
        assert TimeIndex.from_bytes(data, base).to_bytes() == data
