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
from segmentlog_source.plan.options import parse_read_options
from segmentlog_source.plan.read_plan import plan_read
from segmentlog_source.plan.view_plan import segment_groups
from segmentlog_source.spark.partition_scan import (SegmentLogInputPartition,
                                                    SegmentsInputPartition, scan_partition)
from segmentlog_source.storage.log.partition_log import PartitionLog


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
    assert view_rows(healthy, "batches", verifyChecksums="false") == batches
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
