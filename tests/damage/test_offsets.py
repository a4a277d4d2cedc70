"""Offsets outside the CRC (a batch's baseOffset, a legacy entry's offset, the segments' file
names) are checked against their neighbours: a moved one is an error naming the file, never
duplicated, reordered or renumbered rows (issue #16, classes 2 and 4)."""

from __future__ import annotations

import shutil
import struct

from crc32c import crc32c
import pytest

from segmentlog_source.errors import DataLossError
from segmentlog_source.format.batch import MAX_OFFSET
from segmentlog_source.plan.options import parse_read_options
from segmentlog_source.plan.predicates import Predicate, fold
from segmentlog_source.plan.read_plan import plan_read
from segmentlog_source.format.record_encoder import encode_batch
from segmentlog_source.format.records import Record
from segmentlog_source.spark.reader import GroupScan, ScanSettings
from segmentlog_source.storage.log.partition_log import PartitionLog

CRC, CRC_START, LAST_OFFSET_DELTA = 17, 21, 23   # a v2 batch header's fields (spec §2)
from tests.damage.helpers import (BASE_OFFSET, dump_all, generated, poke, read, read_error,
                                  segments, verify_errors)

START_MS = 1_700_000_000_000
SEGMENT_INDEXES = (0, 3, -1)          # the first, a middle and the last segment
BATCH_INDEXES = (0, 4, -1)            # the first, a middle and the last batch of each
SHIFTS = (-11, -1, 1, 3, 50, 10**6)   # into the previous batch, next to it, into the next...


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    path = generated(tmp_path_factory.mktemp("offsets") / "data")
    return path, read(path)


@pytest.fixture
def log(healthy, tmp_path):
    copy = tmp_path / "data"
    shutil.copytree(healthy[0].parent, copy)
    return copy / "t-0"


@pytest.mark.parametrize("segment", SEGMENT_INDEXES)
@pytest.mark.parametrize("batch", BATCH_INDEXES)
@pytest.mark.parametrize("shift", SHIFTS)
def test_a_moved_base_offset_is_an_error_naming_the_log(log, segment, batch, shift):
    path, headers = segments(log)[segment]
    header = headers[batch]
    moved = header.base_offset + shift
    if moved < 0:   # (negative offsets are test_impossible_offsets' case)
        moved = header.base_offset + 2
    poke(path, header.position + BASE_OFFSET, "q", moved)
    err = read_error(log, log)
    # the segment's .log, or its index, or the producer snapshot that says where the log ended
    assert path.stem in str(err) or ".snapshot" in str(err)
    assert any(str(log) in e for e in verify_errors(log))
    assert "Traceback" not in dump_all(log)


@pytest.mark.parametrize("value", [-1, -(2**40), MAX_OFFSET, 2**63 - 1, 2**63 - 10])
def test_impossible_offsets(log, value):
    path, headers = segments(log)[2]
    poke(path, headers[3].position + BASE_OFFSET, "q", value)
    err = read_error(log, path)
    assert f"at byte {headers[3].position}" in str(err)
    assert any(str(path) in e for e in verify_errors(log))   # no OverflowError either
    assert "Traceback" not in dump_all(log)


@pytest.mark.parametrize("segment", [1, 3, 6])
@pytest.mark.parametrize("move", [-5, -1, 1, 7])
def test_a_renamed_segment_overlaps_or_misses_its_neighbours(log, segment, move):
    """A segment file name is outside every CRC: renamed, its base offset no longer matches its
    first batch, or its range overlaps the previous segment's."""
    path, headers = segments(log)[segment]
    base = headers[0].base_offset
    for old in sorted(log.glob(path.stem + ".*")):
        old.rename(log / (f"{base + move:020d}" + old.suffix))
    err = read_error(log, log)
    assert f"{base + move:020d}.log" in str(err) or "is missing" in str(err)
    assert any(str(log) in e for e in verify_errors(log))


@pytest.mark.parametrize("into", [1, 4])
def test_a_lookup_by_timestamp_sees_a_segment_renamed_into_another(log, healthy, into):
    """The first segment renamed into the range of a later one: the log seems to start at
    segment 1, and a lookup by timestamp answered there must see that its segment runs into
    the misnamed one."""
    first, _ = segments(log)[0]
    _, target = segments(log)[into]
    new_base = target[0].base_offset + 5
    for old in sorted(log.glob(first.stem + ".*")):
        old.rename(log / (f"{new_base:020d}" + old.suffix))
    stamp = next(r[3] for r in healthy[1] if r[2] == target[0].base_offset + 2) // 1000
    err = read_error(log, log, startingTimestamp=str(stamp), endingTimestamp=str(stamp + 1))
    assert f"{new_base:020d}.log" in str(err)


@pytest.mark.parametrize("answer,into", [(1, 2), (1, 4), (1, 6), (2, 4), (3, 6)])
def test_a_lookup_by_timestamp_sees_a_segment_renamed_far_after_its_answer(log, healthy, answer,
                                                                             into):
    """The first segment renamed into a later segment's range, the lookup answered before it
    (from a segment whose end meets its neighbour's base): the answer never opens the misnamed
    file, so the first batch of each segment the lookup passes must confirm its name; it
    confirms a window of LOOKUP_PREFETCH (8) segments at a time, and this log has 7. (One
    renamed past that window and past the range is met by any read of it and by verify:
    test_a_renamed_segment_overlaps_or_misses_its_neighbours; segment_order.py says why a
    lookup goes no further.)"""
    first, _ = segments(log)[0]
    _, target = segments(log)[into]
    _, answering = segments(log)[answer]
    new_base = target[0].base_offset + 5
    for old in sorted(log.glob(first.stem + ".*")):
        old.rename(log / (f"{new_base:020d}" + old.suffix))
    stamp = next(r[3] for r in healthy[1] if r[2] == answering[0].base_offset + 2) // 1000
    err = read_error(log, log, startingTimestamp=str(stamp), endingTimestamp=str(stamp + 1))
    assert f"{new_base:020d}.log" in str(err)


@pytest.fixture(scope="module")
def long_log(tmp_path_factory):
    """More segments (23) than a lookup confirms the names of at once (LOOKUP_PREFETCH, 8)."""
    path = generated(tmp_path_factory.mktemp("long") / "data", records=2000)
    return path, read(path)


def _read_where_timestamp_from(path, stamp_ms: int) -> list[int]:
    """WHERE timestamp >= stamp as pushdown gives it to the planner (its time floor)."""
    where = fold([Predicate("timestamp", ">=", stamp_ms * 1000)])
    opts = parse_read_options({"path": str(path)})
    settings = ScanSettings(where, False, True, True, False, True)
    return [o for group in plan_read(opts, where).groups
            for batch in GroupScan(group, settings) for o in batch.column("offset").to_pylist()]


@pytest.mark.parametrize("moved,to,answer", [(1, 17, 6), (2, 20, 12), (5, 15, 9), (3, 21, 4)])
@pytest.mark.parametrize("how", ["startingTimestamp", "WHERE timestamp >="])
def test_a_segment_moved_from_among_those_a_lookup_passes_is_lost_data(long_log, tmp_path,
                                                                       moved, to, answer, how):
    """A segment renamed forward, past the names a lookup by timestamp confirms, leaves a hole
    among the segments the lookup passes over: every name there is right, but the segment
    before the hole no longer ends where the next begins, and the moved records could have
    held the answer. Never a read that quietly starts after them."""
    copy = tmp_path / "data"
    shutil.copytree(long_log[0].parent, copy)
    log = copy / "t-0"
    all_segments = segments(log)
    path, _ = all_segments[moved]
    before, _ = all_segments[moved - 1]
    new_base = all_segments[to][1][0].base_offset + 5
    for old in sorted(log.glob(path.stem + ".*")):
        old.rename(log / (f"{new_base:020d}" + old.suffix))
    first = all_segments[answer][1][0].base_offset + 2
    stamp = next(r[3] for r in long_log[1] if r[2] == first) // 1000
    with pytest.raises(DataLossError) as info:
        if how == "startingTimestamp":
            read(log, startingTimestamp=str(stamp), endingTimestamp=str(stamp + 1))
        else:
            _read_where_timestamp_from(log, stamp)
    assert str(before) in str(info.value) and "missing" in str(info.value)


@pytest.mark.parametrize("moved,to", [(2, 18), (4, 21), (1, 15)])
def test_a_log_the_cleaner_shaped_has_every_name_confirmed_without_its_checkpoint(tmp_path,
                                                                                  moved, to):
    """A partition copied without its cleaner-offset-checkpoint whose batches show the
    cleaner's hand (fewer records than offsets): its offset gaps are excused, so a hole among
    the segments a lookup passes proves nothing, and the first such batch a lookup sees makes
    it confirm every file name: the segment renamed far forward is an error naming it."""
    log = tmp_path / "data" / "t-0"
    with PartitionLog.open_for_append(str(log), topic="t", partition=0) as writer:
        for k in range(24):
            if k:
                writer.roll()
            for b in range(5):
                base = k * 50 + b * 10       # 9 records of 10 offsets: one cleaned away
                records = [Record(base + i, START_MS + base + i, None, b"v%d" % (base + i))
                           for i in range(9)]
                writer.append_batches(encode_batch(records, base_offset=base,
                                                   last_offset=base + 9))
    new_base = to * 50 + 5
    for old in sorted(log.glob(f"{moved * 50:020d}.*")):
        old.rename(log / (f"{new_base:020d}" + old.suffix))
    stamp = START_MS + (moved + 2) * 50
    err = read_error(log, f"{new_base:020d}.log", startingTimestamp=str(stamp),
                     endingTimestamp=str(stamp + 20))
    assert "renamed" in str(err)


@pytest.mark.parametrize("segment", [1, 3, 6])
@pytest.mark.parametrize("move", [1, 4])
def test_a_compacted_segment_renamed_below_its_first_batch(log, segment, move):
    """In a compacted partition a segment's first batch may lie above its base offset. Renamed
    lower, into the previous segment's tail, a range read starting at its new base skips that
    tail: the planner checks the skipped segment ends below the base."""
    (log.parent / "cleaner-offset-checkpoint").write_text("0\n1\nt 0 0\n")
    path, headers = segments(log)[segment]
    new_base = headers[0].base_offset - move
    for old in sorted(log.glob(path.stem + ".*")):
        old.rename(log / (f"{new_base:020d}" + old.suffix))
    err = read_error(log, log, startingOffsets=f'{{"t":{{"0":{new_base}}}}}')
    assert f"{new_base:020d}.log" in str(err)


@pytest.mark.parametrize("segment", [0, 3])
@pytest.mark.parametrize("batch,claims", [(2, 0), (2, 4), (5, 8)])
def test_a_compacted_batch_claiming_fewer_offsets_hides_no_records(log, segment, batch, claims):
    """In a compacted partition the cleaner leaves gaps between batches. A batch whose
    lastOffsetDelta was lowered and its CRC recomputed (a valid header) would open such a gap
    over its own records: a range read starting in it decodes the batch it skips."""
    (log.parent / "cleaner-offset-checkpoint").write_text("0\n1\nt 0 0\n")
    path, headers = segments(log)[segment]
    header = headers[batch]
    poke(path, header.position + LAST_OFFSET_DELTA, "i", claims)
    data = bytearray(path.read_bytes())
    body = data[header.position + CRC_START:header.position + header.size]
    struct.pack_into(">I", data, header.position + CRC, crc32c(bytes(body)))
    path.write_bytes(bytes(data))
    start = header.base_offset + claims + 1
    err = read_error(log, path, startingOffsets=f'{{"t":{{"0":{start}}}}}',
                     endingOffsets=f'{{"t":{{"0":{header.last_offset + 3}}}}}')
    assert f"at byte {header.position}" in str(err)


@pytest.mark.parametrize("segment", [0, 2, 5])
def test_a_duplicated_segment_is_an_error(log, segment):
    path, _ = segments(log)[segment]
    last_path, last_headers = segments(log)[-1]
    copy = log / f"{last_headers[-1].last_offset + 1:020d}.log"
    shutil.copyfile(path, copy)
    read_error(log, copy)
    assert any(str(copy) in e for e in verify_errors(log))


def test_healthy_log_reads_exactly(healthy):
    path, rows = healthy
    assert [r[2] for r in rows] == list(range(600))
    assert verify_errors(path) == []
