"""Batch headers: what a shallow pass over a `.log` sees, for every magic.

A `.log` file is batches laid end to end. Byte 16 of every entry is its magic.

RecordBatch v2 (magic 2), 61-byte header, big-endian::

    off size field                  off size field
      0   8  baseOffset              27   8  baseTimestamp
      8   4  batchLength (= size-12) 35   8  maxTimestamp
     12   4  partitionLeaderEpoch    43   8  producerId
     16   1  magic                   51   2  producerEpoch
     17   4  crc (CRC-32C of [21,end))53   4  baseSequence
     21   2  attributes              57   4  recordsCount
     23   4  lastOffsetDelta         61   .. records (maybe one compressed stream)

Legacy message-set entry (magic 0 and 1)::

      0   8  offset (the *last* inner offset for a compressed wrapper)
      8   4  messageSize (= size-12)
     12   4  crc (CRC-32 IEEE of [16,end))
     16   1  magic
     17   1  attributes (bits 0-2 codec, bit 3 LogAppendTime for magic 1)
     18   8  timestamp (magic 1 only)
     .. key (int32 length, -1 = null), value (int32 length, -1 = null)

Attributes (both): bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd), bit 3 timestamp
type; v2 only: bit 4 transactional, bit 5 control, bit 6 delete horizon in baseTimestamp.
"""

from __future__ import annotations

import struct
import zlib
from typing import Iterator, NamedTuple

from crc32c import crc32c

from ..errors import CorruptDataError

LOG_OVERHEAD = 12  # offset + length, the part of every entry that its length field does not count
MAGIC_OFFSET = 16
V2_LEADER_EPOCH_AT = 12   # partitionLeaderEpoch, outside the CRC: a leader sets it at append
V2_CRC_AT = 17
V2_HEADER_SIZE = 61
V2_CRC_START = 21  # the CRC covers attributes .. end; not baseOffset, length, leader epoch, magic
LEGACY_CRC_START = 16
# The broker stops a shallow scan when fewer than 18 bytes remain (offset, size, epoch/crc, magic).
MIN_ENTRY_PREFIX = 18
MIN_LEGACY_MESSAGE_SIZE = {0: 14, 1: 22}
MIN_V2_BATCH_LENGTH = V2_HEADER_SIZE - LOG_OVERHEAD
# Kafka's max.message.bytes defaults to ~1 MiB; brokers can raise it, so the guard is generous.
# A declared size above it is treated as corruption, so garbage never makes us allocate gigabytes.
DEFAULT_MAX_BATCH_BYTES = 256 * 1024 * 1024

CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")
CODEC_IDS = {name: i for i, name in enumerate(CODEC_NAMES)}

CREATE_TIME = 0
LOG_APPEND_TIME = 1
NO_TIMESTAMP_TYPE = -1
TIMESTAMP_TYPE_NAMES = {CREATE_TIME: "CreateTime", LOG_APPEND_TIME: "LogAppendTime",
                        NO_TIMESTAMP_TYPE: "NoTimestampType"}

ATTR_CODEC_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

NO_PRODUCER_ID = -1
NO_SEQUENCE = -1
INT32_MAX = 2**31 - 1
# The largest offset a batch may hold: the offset after it (the log end offset) must fit a long.
MAX_OFFSET = 2**63 - 2

_PREFIX = struct.Struct(">qi")            # offset/baseOffset, length
_V2 = struct.Struct(">qiibIhiqqqhii")     # the whole 61-byte header
_LEGACY = struct.Struct(">qiIbb")         # offset, size, crc, magic, attributes
_INT64 = struct.Struct(">q")


class BatchHeader(NamedTuple):
    """One entry of a `.log`, as a shallow scan sees it (no decompression).

    `position` is the byte position of the entry's first byte in its file (or in the buffer plus
    the base position the scan was given). `size` counts every byte of the entry, header included.
    For a legacy compressed wrapper the first offset is only known after decompression, so
    `base_offset` is the wrapper's own (last) offset there; see `first_offset_known`.
    """

    position: int
    size: int
    magic: int
    base_offset: int
    last_offset: int
    crc: int
    attributes: int
    partition_leader_epoch: int = -1
    base_timestamp: int = -1
    max_timestamp: int = -1
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = -1
    base_sequence: int = NO_SEQUENCE
    records_count: int = -1  # legacy entries carry no count

    @property
    def end(self) -> int:
        return self.position + self.size

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def codec(self) -> int:
        return self.attributes & ATTR_CODEC_MASK

    @property
    def codec_name(self) -> str:
        codec = self.codec
        return CODEC_NAMES[codec] if codec < len(CODEC_NAMES) else f"unknown({codec})"

    @property
    def timestamp_type(self) -> int:
        if self.magic == 0:
            return NO_TIMESTAMP_TYPE
        return LOG_APPEND_TIME if self.attributes & ATTR_TIMESTAMP_TYPE else CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & ATTR_CONTROL)

    @property
    def has_delete_horizon(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & ATTR_DELETE_HORIZON)

    @property
    def first_offset_known(self) -> bool:
        return self.magic >= 2 or self.codec == 0

    @property
    def last_sequence(self) -> int:
        """Kafka's lastSequence: baseSequence + lastOffsetDelta, wrapping past Int.MAX to 0."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        delta = self.last_offset - self.base_offset
        if delta > INT32_MAX - self.base_sequence:
            return delta - (INT32_MAX - self.base_sequence) - 1
        return self.base_sequence + delta

    def crc_span(self) -> tuple[int, int]:
        """The [start, end) of the bytes this entry's CRC covers, relative to `position`."""
        return (V2_CRC_START if self.magic >= 2 else LEGACY_CRC_START), self.size

    def compute_crc(self, entry: bytes | memoryview) -> int:
        """The CRC of `entry` (exactly this entry's bytes) with the algorithm of its magic."""
        start, end = self.crc_span()
        if self.magic >= 2:
            return crc32c(entry[start:end])
        return zlib.crc32(entry[start:end]) & 0xFFFFFFFF

    def crc_is_valid(self, entry: bytes | memoryview) -> bool:
        return self.compute_crc(entry) == self.crc


def parse_header(buf, pos: int = 0, end: int | None = None, *, base_position: int = 0,
                 max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES) -> BatchHeader | None:
    """Parse the entry starting at `buf[pos]`, the way the broker's shallow iterator does.

    Returns None at a clean end: fewer than 18 bytes left before `end`, or an entry that runs past
    `end` (a partial batch, which the broker silently ignores; the caller decides whether that
    is a torn tail or just the edge of the chunk it read). Raises CorruptDataError, located at
    `base_position + pos`, for sizes no broker writes.
    """
    if end is None:
        end = len(buf)
    if pos >= end - (MIN_ENTRY_PREFIX - 1):
        return None
    offset, length = _PREFIX.unpack_from(buf, pos)
    where = base_position + pos
    if length < MIN_LEGACY_MESSAGE_SIZE[0]:
        raise CorruptDataError(
            f"record size {length} is smaller than the minimum record overhead (14)", None, where)
    magic = buf[pos + MAGIC_OFFSET]
    if magic > 2:
        raise CorruptDataError(f"unknown magic byte {magic} (not a Kafka log?)", None, where)
    size = length + LOG_OVERHEAD
    if size > max_batch_bytes:
        raise CorruptDataError(
            f"declared batch size {size} exceeds the limit of {max_batch_bytes} bytes", None, where)
    if magic == 2:
        if length < MIN_V2_BATCH_LENGTH:
            raise CorruptDataError(
                f"v2 batch length {length} is smaller than the header ({MIN_V2_BATCH_LENGTH})",
                None, where)
    elif length < MIN_LEGACY_MESSAGE_SIZE[magic]:
        raise CorruptDataError(
            f"magic {magic} message size {length} is below the minimum "
            f"{MIN_LEGACY_MESSAGE_SIZE[magic]}", None, where)
    if pos + size > end:
        return None
    return header_at(buf, pos, base_position=base_position)


def header_at(buf, pos: int, *, base_position: int = 0) -> BatchHeader:
    """Decode the header of a complete entry at `buf[pos]` whose sizes were already checked."""
    magic = buf[pos + MAGIC_OFFSET]
    needed = _V2.size if magic >= 2 else _LEGACY.size + (8 if magic == 1 else 0)
    if len(buf) - pos < needed:   # a caller that framed it with a damaged length
        raise CorruptDataError(f"a magic {magic} header needs {needed} bytes, only "
                               f"{len(buf) - pos} are there", None, base_position + pos)
    if magic >= 2:
        (base_offset, length, epoch, _magic, crc, attributes, last_delta, base_ts, max_ts,
         producer_id, producer_epoch, base_seq, count) = _V2.unpack_from(buf, pos)
        if last_delta < 0:
            raise CorruptDataError(f"negative lastOffsetDelta {last_delta}", None,
                                   base_position + pos)
        _check_offsets(base_offset, base_offset + last_delta, base_position + pos)
        return BatchHeader(base_position + pos, length + LOG_OVERHEAD, magic, base_offset,
                           base_offset + last_delta, crc, attributes & 0xFFFF, epoch, base_ts,
                           max_ts, producer_id, producer_epoch, base_seq, count)
    offset, length, crc, _magic, attributes = _LEGACY.unpack_from(buf, pos)
    _check_offsets(offset, offset, base_position + pos)
    timestamp = _INT64.unpack_from(buf, pos + 18)[0] if magic == 1 else -1
    return BatchHeader(base_position + pos, length + LOG_OVERHEAD, magic, offset, offset, crc,
                       attributes & 0xFF, -1, timestamp, timestamp)


def _check_offsets(first: int, last: int, where: int) -> None:
    # Offsets are outside the CRC: these are the bounds no broker can write past.
    if first < 0:
        raise CorruptDataError(f"negative offset {first}", None, where)
    if last > MAX_OFFSET:
        raise CorruptDataError(f"last offset {last} leaves no room for the next offset (the "
                               f"largest is {MAX_OFFSET})", None, where)


def iter_headers(buf, start: int = 0, end: int | None = None, *, base_position: int = 0,
                 max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES) -> Iterator[BatchHeader]:
    """Every complete entry in `buf[start:end]`, in order; stops at the first incomplete one."""
    if end is None:
        end = len(buf)
    pos = start
    while True:
        header = parse_header(buf, pos, end, base_position=base_position,
                              max_batch_bytes=max_batch_bytes)
        if header is None:
            return
        yield header
        pos += header.size


_MAX_TIMESTAMP_AT = 35
_ATTRIBUTES_AT = 21


def set_log_append_time(entry: bytearray, timestamp: int) -> None:
    """DefaultRecordBatch.setMaxTimestamp(LOG_APPEND_TIME, timestamp), in place on one v2 batch.

    What a broker does to a CreateTime batch on a LogAppendTime topic (spec §2.4): attribute
    bit 3 set, maxTimestamp = the append time, CRC recomputed; baseTimestamp and the record
    deltas stay as the producer wrote them.
    """
    if entry[MAGIC_OFFSET] != 2:
        raise ValueError("only v2 batches carry a batch-level LogAppendTime")
    attributes = struct.unpack_from(">h", entry, _ATTRIBUTES_AT)[0] | ATTR_TIMESTAMP_TYPE
    struct.pack_into(">h", entry, _ATTRIBUTES_AT, attributes)
    _INT64.pack_into(entry, _MAX_TIMESTAMP_AT, timestamp)
    struct.pack_into(">I", entry, V2_CRC_AT, crc32c(memoryview(entry)[V2_CRC_START:]))
