"""Damaged logs, made in the tests: generated healthy logs, then the bytes or files of one class
of damage changed; and the three tools a user would point at them (the reader as the data
source runs it, `verify`, `dump`)."""

from __future__ import annotations

import io
from pathlib import Path
import struct

import pyarrow as pa
import pytest

from segmentlog_source.cli.dump import DumpOptions, dump_files
from segmentlog_source.cli.generate import generate_log
from segmentlog_source.cli.verify import verify_partition
from segmentlog_source.errors import SegmentLogError
from segmentlog_source.format.batch import BatchHeader
from segmentlog_source.plan.options import parse_read_options
from segmentlog_source.plan.predicates import fold
from segmentlog_source.plan.read_plan import plan_read
from segmentlog_source.spark.reader import GroupScan, ScanSettings
from segmentlog_source.storage.log.partition_log import PartitionLog

# v2 header fields outside the CRC, and inside it (the CRC covers bytes 21..end)
BASE_OFFSET, BATCH_LENGTH, LEADER_EPOCH, MAGIC = 0, 8, 12, 16
ATTRIBUTES, LAST_OFFSET_DELTA, BASE_TIMESTAMP, MAX_TIMESTAMP = 21, 23, 27, 35


def generated(root: Path, **options) -> Path:
    """A generated data directory (one topic `t`, small segments); returns its `t-0`."""
    settings = dict(topics=["t"], records=600, value_size=60, records_per_batch=10,
                    segment_bytes=8 * 1024, seed=7)
    settings.update(options)
    generate_log(str(root), **settings)
    return root / "t-0"


def read(path: Path, **options) -> list[tuple]:
    """The rows the data source returns, planned and scanned as on Spark (without Spark):
    (topic, partition, offset, timestamp in µs, timestampType, key, value)."""
    opts = parse_read_options({"path": str(path), **{k: str(v) for k, v in options.items()}})
    plan = plan_read(opts, fold([]))
    settings = ScanSettings(fold([]), opts.read_committed, opts.verify_checksums, True, False,
                            opts.fail_on_data_loss)
    rows = []
    for group in plan.groups:
        for batch in GroupScan(group, settings):
            columns = [batch.column(n).cast(pa.int64()) if n == "timestamp" else batch.column(n)
                       for n in ("topic", "partition", "offset", "timestamp", "timestampType",
                                 "key", "value")]
            columns = [c.to_pylist() for c in columns]
            rows.extend(zip(*columns))
    return rows


def read_error(path: Path, names: Path | str, **options) -> SegmentLogError:
    """The error a read raises; it must be segmentlog's and name `names` (a file)."""
    with pytest.raises(SegmentLogError) as info:
        read(path, **options)
    assert str(names) in str(info.value), f"{info.value!r} does not name {names}"
    return info.value


def verify_errors(path: Path) -> list[str]:
    """`verify`'s errors for a partition directory, as printed ("error: <file> ...")."""
    return [str(p) for p in verify_partition(str(path)).errors]


def dump_all(path: Path) -> str:
    """`dump --deep-iteration --print-data-log` of every file of a partition directory: it must
    finish, or fail with segmentlog's error; returns what it printed."""
    out, err = io.StringIO(), io.StringIO()
    files = [str(f) for f in sorted(path.iterdir()) if f.is_file() or f.is_symlink()]
    try:
        dump_files(files, DumpOptions(print_data_log=True), out, err)
    except SegmentLogError as exc:
        return out.getvalue() + f"\nerror: {exc}"
    return out.getvalue() + err.getvalue()


def segments(path: Path) -> list[tuple[Path, list[BatchHeader]]]:
    """Each segment's `.log` and its batch headers, as written."""
    log = PartitionLog.open(str(path))
    return [(Path(s.log_path), [h for h, _ in s.iter_entries()]) for s in log.segments]


def poke(path: Path, position: int, fmt: str, value) -> None:
    """Overwrite a big-endian field of a file in place."""
    data = bytearray(path.read_bytes())
    struct.pack_into(">" + fmt, data, position, value)
    path.write_bytes(bytes(data))
