"""A KRaft snapshot (`<20-digit end offset>-<10-digit epoch>.checkpoint` in `__cluster_metadata-0`,
or a controller's `bootstrap.checkpoint`) read whole and checked: record batches whose offsets
run from 0 without a gap, a control batch holding one SnapshotHeader record first, one holding a
SnapshotFooter last, data batches (the metadata records) between, every batch's CRC valid and no
byte after the footer. A snapshot of a quorum whose kraft.version is 1 or more (every controller
formatted with --standalone or --initial-controllers) also holds KRaftVersion and KRaftVoters
control records after its header, in the header's batch. Kafka's snapshot reader checks the
header and the CRCs; its writer keeps the other rules, so a file that breaks one is damaged:
a CorruptDataError naming the file, the byte and the offset.

Bytes only: the records' values are decoded by values/kafka_internal/metadata_records.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...errors import CorruptDataError
from ...format.control import (CONTROL_TYPE_NAMES, KRAFT_VERSION, KRAFT_VOTERS, SNAPSHOT_FOOTER,
                               SNAPSHOT_HEADER, parse_control_key)
from ...format.record_decoder import decode_batch
from .entry_scan import EntryScan

SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
BOOTSTRAP_NAME = "bootstrap.checkpoint"


@dataclass(frozen=True)
class SnapshotRecord:
    offset: int
    timestamp: int
    value: bytes | None
    position: int      # of its batch in the file


@dataclass(frozen=True)
class KraftSnapshot:
    path: str
    end_offset: int | None     # from the file name; None for bootstrap.checkpoint
    epoch: int | None
    records: list[SnapshotRecord]   # the metadata records between header and footer


def snapshot_id(name: str) -> tuple[int | None, int | None]:
    """(end offset, epoch) a snapshot's file name gives; (None, None) for bootstrap.checkpoint."""
    if name == BOOTSTRAP_NAME:
        return None, None
    match = SNAPSHOT_NAME.match(name)
    if match is None:
        raise CorruptDataError(f"not a KRaft snapshot name (<20-digit end offset>-<10-digit "
                               f"epoch>.checkpoint or {BOOTSTRAP_NAME}): {name}")
    return int(match[1]), int(match[2])


def read_kraft_snapshot(fs, path: str, *, keep_records: bool = True) -> KraftSnapshot:
    """The snapshot at `path`, checked; `keep_records=False` checks it in bounded memory and
    returns no records (the dump's check of a snapshot it has printed)."""
    end_offset, epoch = snapshot_id(fs.basename(path))
    scan = EntryScan(fs, path, allow_torn_tail=True)
    records: list[SnapshotRecord] = []
    expected, header_seen, footer_at = 0, False, None

    def fail(reason: str, position: int, offset: int | None = None):
        at = "" if offset is None else f" (offset {offset})"
        return CorruptDataError(f"KRaft snapshot: {reason}{at}", path, position)

    for header, entry in scan:
        pos = header.position
        if footer_at is not None:
            raise fail("a batch follows the SnapshotFooter", pos, header.base_offset)
        if header.magic < 2:
            raise fail(f"a batch of magic {header.magic} (snapshots are v2 batches)", pos)
        if not header.crc_is_valid(entry):
            raise fail(f"the CRC of the batch at offsets {header.base_offset}-"
                       f"{header.last_offset} is wrong", pos, header.base_offset)
        if header.base_offset != expected:
            raise fail(f"the batch starts at offset {header.base_offset}, {expected} expected",
                       pos, header.base_offset)
        batch = decode_batch(entry, header, verify_crc=False)
        for record in batch.records:
            if record.offset != expected:
                raise fail(f"offset {record.offset} where {expected} was expected", pos,
                           record.offset)
            expected += 1
            if header.is_control:
                try:
                    kind = parse_control_key(record.key)[1]
                except CorruptDataError as err:
                    raise fail(err.reason, pos, record.offset) from None
                if kind == SNAPSHOT_HEADER and record.offset == 0:
                    header_seen = True
                elif kind == SNAPSHOT_FOOTER and header_seen:
                    footer_at = record.offset
                elif kind in (KRAFT_VERSION, KRAFT_VOTERS) and header_seen:
                    pass    # the quorum's kraft.version and voters (kraft.version 1+)
                else:
                    due = "data or the SnapshotFooter" if header_seen else "the SnapshotHeader"
                    raise fail(f"a {CONTROL_TYPE_NAMES[kind]} control record where {due} "
                               "belongs", pos, record.offset)
            elif not header_seen:
                raise fail("a metadata record before the SnapshotHeader (the first record must "
                           "be one)", pos, record.offset)
            elif footer_at is not None:
                raise fail("a record after the SnapshotFooter", pos, record.offset)
            elif keep_records:
                value = None if record.value is None else bytes(record.value)
                records.append(SnapshotRecord(record.offset, record.timestamp, value, pos))
    if scan.torn_tail is not None:
        raise fail(f"{scan.torn_tail.length} bytes after the last whole batch",
                   scan.torn_tail.position)
    if not header_seen:
        raise fail("no SnapshotHeader (the file holds no batch)", 0)
    if footer_at is None:
        raise fail("no SnapshotFooter after the last record (cut short?)", scan.position,
                   expected)
    return KraftSnapshot(path, end_offset, epoch, records)
