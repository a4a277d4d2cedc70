"""The batches and segments views on damaged logs, each class of damage generated at random
batches: a CRC the view reads (verifyChecksums=true) fails with the file and byte; offsets,
which no CRC covers, are checked against their neighbours with or without it; salvaging
(failOnDataLoss=false) leaves out the damaged batch alone. Never a wrong row.

(Executor code run in-process, without Spark: the same functions Spark's tasks call.)"""

from __future__ import annotations

from pathlib import Path
import random
import shutil
import struct

import pyarrow as pa
import pytest

from segmentlog_source.cli.generate import generate_log
from segmentlog_source.errors import CorruptDataError
from segmentlog_source.format.batch import V2_HEADER_SIZE
from segmentlog_source.format.record_decoder import decode_batch
from segmentlog_source.plan.options import parse_read_options
from segmentlog_source.plan.read_plan import plan_read
from segmentlog_source.plan.view_plan import segment_groups
from segmentlog_source.spark.partition_scan import (SegmentLogInputPartition,
                                                    SegmentsInputPartition, scan_partition)
from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.conftest import shared_fixture


def view_rows(path, view: str, **options) -> list[dict]:
    opts = parse_read_options({"path": str(path), "view": view, **options})
    plan = plan_read(opts)
    if view == "segments":
        parts = [SegmentsInputPartition(s) for s in segment_groups(plan.groups)]
    else:
        parts = [SegmentLogInputPartition(g) for g in plan.groups]
    return [row for p in parts for b in scan_partition(p, opts)
            for row in pa.Table.from_batches([b]).to_pylist()]


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    path = tmp_path_factory.mktemp("views")
    generate_log(str(path), topics=["t"], partitions=1, records=4000, codec="lz4",
                 segment_bytes=32 * 1024, transactions=True, seed=11,
                 start_timestamp=1_700_000_000_000)
    return path


def _batches(path):
    log = PartitionLog.open(str(path / "t-0"))
    return [(seg.log_path, header) for seg, header, _ in log.iter_entries()]


def _copy(healthy, tmp_path):
    shutil.copytree(healthy, tmp_path / "d")
    return tmp_path / "d"


def _patch(path: str, position: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        f.write(data)


def test_views_of_a_healthy_log_agree_in_both_checksum_modes(healthy):
    batches = view_rows(healthy, "batches")
    assert len(batches) == len(_batches(healthy)) > 50
    # CRC-checked: walked in compiled code in chunks, or, salvaging, by the checked scan
    assert view_rows(healthy, "batches", failOnDataLoss="false") == batches
    # headers only: walked in compiled code (storage/log/header_table.py), or, salvaging, by
    # the checked scan; the same rows either way
    assert view_rows(healthy, "batches", verifyChecksums="false") == batches
    assert view_rows(healthy, "batches", verifyChecksums="false",
                     failOnDataLoss="false") == batches
    # small tasks: ranges cut inside segments, each batch in exactly one of them
    assert view_rows(healthy, "batches", verifyChecksums="false",
                     maxBytesPerPartition=str(64 * 1024), minPartitions="40") == batches
    segments = view_rows(healthy, "segments")
    assert len(segments) == len(list((healthy / "t-0").glob("*.log"))) > 3
    assert sum(b["recordCount"] for b in batches if not b["isControl"]) == 4000


@pytest.mark.parametrize("seed", range(4))
def test_a_damaged_record_byte_fails_the_crc_checked_view(healthy, tmp_path, seed):
    path = _copy(healthy, tmp_path)
    rng = random.Random(seed)
    log_path, header = rng.choice([b for b in _batches(path) if b[1].size > V2_HEADER_SIZE + 8])
    at = rng.randrange(header.position + V2_HEADER_SIZE, header.end)
    with open(log_path, "rb") as f:
        f.seek(at)
        byte = f.read(1)[0]
    _patch(log_path, at, bytes([byte ^ 0x5A]))
    with pytest.raises(CorruptDataError) as err:
        view_rows(path, "batches")
    assert err.value.path.endswith(log_path.rsplit("/", 1)[1])
    assert err.value.position == header.position and "CRC" in str(err.value)
    # headers only: the records' bytes are not read, so the (intact) header's row is right
    assert view_rows(path, "batches", verifyChecksums="false") == view_rows(healthy, "batches")
    # salvaging: every batch but that one
    where = lambda b: (b["segment"], b["position"])   # noqa: E731
    damaged = (int(Path(log_path).stem), header.position)
    assert [where(b) for b in view_rows(path, "batches", failOnDataLoss="false")] == \
        [where(b) for b in view_rows(healthy, "batches") if where(b) != damaged]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("verify", ["true", "false"])
def test_a_moved_base_offset_fails_either_view_mode(healthy, tmp_path, seed, verify):
    path = _copy(healthy, tmp_path)
    rng = random.Random(seed)
    log_path, header = rng.choice(_batches(path)[1:-1])
    moved = header.base_offset + rng.choice([-3, -1, 1, 2, 50])
    _patch(log_path, header.position, struct.pack(">q", moved))
    with pytest.raises(CorruptDataError) as err:
        view_rows(path, "batches", verifyChecksums=verify)
    assert err.value.path.endswith(log_path.rsplit("/", 1)[1])


def test_a_segment_renamed_below_its_batches_fails_the_segments_view(healthy, tmp_path):
    path = _copy(healthy, tmp_path)
    logs = sorted((path / "t-0").glob("*.log"))
    victim = logs[1]
    base = int(victim.stem)
    # its neighbour's batches now run past its base offset: the name no CRC covers is wrong
    for suffix in (".log", ".index", ".timeindex"):
        src = victim.with_suffix(suffix)
        if src.exists():
            src.rename(src.with_name(f"{base - 5:020d}{suffix}"))
    with pytest.raises(CorruptDataError):
        view_rows(path, "segments")


# -- what an attacker's pass found -------------------------------------------------------------

def _first_batch_of_a_middle_segment(path):
    batches = _batches(path)
    victim = sorted({p for p, _ in batches})[1]
    return victim, next(h for p, h in batches if p == victim)


@pytest.mark.parametrize("verify", ["true", "false"])
@pytest.mark.parametrize("shift", [1, 3, -1])
def test_a_segments_first_batch_moved_fails_the_segments_view(healthy, tmp_path, verify, shift):
    """Its base offset (no CRC) is checked against the file name and the batch after it."""
    path = _copy(healthy, tmp_path)
    log_path, header = _first_batch_of_a_middle_segment(path)
    _patch(log_path, header.position, struct.pack(">q", header.base_offset + shift))
    with pytest.raises(CorruptDataError) as err:
        view_rows(path, "segments", verifyChecksums=verify)
    assert err.value.path.endswith(Path(log_path).name)


def test_the_segments_view_checks_the_first_batchs_crc(healthy, tmp_path):
    path = _copy(healthy, tmp_path)
    log_path, header = _first_batch_of_a_middle_segment(path)
    _patch(log_path, header.position + 27, struct.pack(">q", header.base_timestamp - 3_600_000))
    with pytest.raises(CorruptDataError, match="CRC mismatch"):
        view_rows(path, "segments")


def test_a_leader_epoch_that_goes_down_fails_the_batches_view(healthy, tmp_path):
    path = _copy(healthy, tmp_path)
    log_path, header = _batches(path)[5]
    _patch(log_path, header.position + 12, struct.pack(">i", 2_000_000))
    for verify in ("true", "false"):
        with pytest.raises(CorruptDataError, match="leader epoch"):
            view_rows(path, "batches", verifyChecksums=verify)


@pytest.mark.parametrize("seed", range(3))
def test_a_leader_epoch_that_goes_down_at_a_segment_boundary_fails_the_batches_view(
        healthy, tmp_path, seed):
    """The batch after a segment's last one is in the next task: the task that goes on where
    the one before stopped checks its first epoch against it (here all in one Spark task)."""
    path = _copy(healthy, tmp_path)
    batches = _batches(path)
    last_of_segment = [i for i in range(len(batches) - 1)
                       if batches[i][0] != batches[i + 1][0]]
    i = random.Random(seed).choice(last_of_segment)
    log_path, header = batches[i]
    _patch(log_path, header.position + 12, struct.pack(">i", 2_000_000))
    after_path, after = batches[i + 1]
    for verify in ("true", "false"):
        with pytest.raises(CorruptDataError, match="leader epoch") as err:
            view_rows(path, "batches", verifyChecksums=verify,
                      maxBytesPerPartition=str(1 << 30))
        assert err.value.path.endswith(after_path.rsplit("/", 1)[1])
        assert err.value.position == after.position


def _linked(case: str, root: Path, topic: str | None = None) -> Path:
    partition_dir = root / f"{topic or case}-0"
    partition_dir.mkdir(parents=True)
    for log in (CLIENTS / case).glob("*.log"):
        shutil.copy(log, partition_dir / log.name)
    return partition_dir


CLIENTS = shared_fixture("kafka-clients")


def test_a_cleaned_batchs_first_record_is_read_from_its_body():
    from segmentlog_source.storage.log.batch_facts import first_record, needs_body

    log = PartitionLog.open(str(CLIENTS / "v2-compacted-gaps"), topic="t", partition=0)
    for _, header, entry in log.iter_entries():
        records = decode_batch(entry, header).records
        assert needs_body(header) == (len(records) != header.last_offset - header.base_offset + 1
                                      or header.has_delete_horizon)
        if records:
            assert first_record(header, entry, "x") == (records[0].offset, records[0].timestamp)


def test_a_grown_length_swallowing_the_next_batch_of_a_compacted_log(tmp_path):
    """A gap the cleaner may have left hides a batch whose length grew over the next one:
    reading headers only, the batch before a gap has its CRC checked."""
    part = _linked("v2-compacted-gaps", tmp_path, "store-changelog")   # compacted by name
    log_path = str(part / "00000000000000000000.log")
    headers = [h for _, h, _ in PartitionLog.open(str(part)).iter_entries()]
    victim, swallowed = headers[1], headers[2]
    _patch(log_path, victim.position + 8, struct.pack(">i", victim.size - 12 + swallowed.size))
    for verify in ("true", "false"):
        with pytest.raises(CorruptDataError, match="CRC mismatch") as err:
            view_rows(tmp_path, "batches", verifyChecksums=verify)
        assert err.value.position == victim.position


@pytest.mark.parametrize("case,end", [("v1-snappy", 7), ("v0-gzip", 7), ("mixed-v0-v1-v2", 3)])
def test_a_range_ending_where_a_legacy_wrapper_starts(tmp_path, case, end):
    """The planner reads the wrapper holding the range's end (its header does not tell its
    first offset); when it starts at the end, it is left out quietly, not called corrupt."""
    _linked(case, tmp_path)
    ending = f'{{"{case}": {{"0": {end}}}}}'
    offsets = [r["offset"] for r in view_rows(tmp_path, "records", includePayload="false",
                                              endingOffsets=ending)]
    assert offsets == list(range(end))
    batches = view_rows(tmp_path, "batches", endingOffsets=ending)
    assert batches and batches[-1]["lastOffset"] < end


def _compacted(root: Path, seed: int) -> Path:
    """A partition of every codec written as a leader would, then compacted by LogManager (a
    cleaner-offset-checkpoint tells readers where the cleaner has been)."""
    from segmentlog_source.storage.log.log_manager import LogManager
    from tests.storage.cleaner_logs import HOUR_MS, LogPlan, PartitionWriter

    data = root / f"seed{seed}"
    writer = PartitionWriter(str(data / "t-0"), "t", 0,
                             LogPlan(seed=seed, batches=60, key_space=12, abort_pct=0,
                                     segment_bytes=6000))
    writer.write(60, 20 * HOUR_MS, finish=True)
    LogManager(str(data), overrides={"cleanup.policy": "compact"},
               clock_ms=lambda: writer.clock + HOUR_MS).compact()
    return data


@pytest.mark.parametrize("seed", [2, 4, 8])
def test_a_grown_length_in_a_compacted_log_fails_every_read_without_crcs(tmp_path, seed):
    """Generated: a compressed batch of a compacted log whose length (no CRC covers it) grew
    over the next batch, in a segment's middle and at its end. Its codec stops at its own
    stream's end and the cleaner's gaps excuse the missing offsets, so only its CRC tells:
    records and batches read without CRCs must still name it, never return what is left."""
    data = _compacted(tmp_path, seed)
    log = PartitionLog.open(str(data / "t-0"))
    by_segment: dict[int, list] = {}
    for segment, header, _ in log.iter_entries():
        by_segment.setdefault(segment.base_offset, []).append((segment, header))
    middles, ends = [], []
    for found in by_segment.values():
        pairs = [(a, b) for a, b in zip(found, found[1:]) if a[1].attributes & 0x07]
        middles += pairs[:1] if pairs and pairs[0][1] != found[-1] else []
        ends += pairs[-1:] if pairs and pairs[-1][1] == found[-1] else []
    assert len(middles) >= 2 and len(ends) >= 1, (seed, len(middles), len(ends))
    cases = middles[:3] + ends[:2]
    for (segment, victim), (_, swallowed) in cases:
        damaged = tmp_path / f"damaged-{seed}"
        shutil.rmtree(damaged, ignore_errors=True)
        shutil.copytree(data, damaged)
        log_path = str(damaged / "t-0" / Path(segment.log_path).name)
        _patch(log_path, victim.position + 8, struct.pack(">i", swallowed.end - victim.position
                                                          - 12))
        for view, options in (("records", {}), ("batches", {})):
            with pytest.raises(CorruptDataError, match="CRC mismatch") as err:
                view_rows(damaged, view, verifyChecksums="false", **options)
            assert (err.value.path, err.value.position) == (log_path, victim.position), view
