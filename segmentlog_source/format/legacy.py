"""Legacy (magic 0 and 1) message-set entries decoded into records.

One entry of a `.log` (and of a compressed wrapper's inner message set), big-endian::

    off size field
      0   8  offset (a compressed wrapper's: its *last* inner record's absolute offset)
      8   4  messageSize (bytes that follow)
     12   4  crc: CRC-32 (IEEE) of [16, 12 + messageSize)
     16   1  magic (0 or 1)
     17   1  attributes: bits 0-2 codec (zstd invalid), bit 3 LogAppendTime (magic 1)
     18   8  timestamp (magic 1 only)
    18/26 4  keyLength (-1 = null), key
      .   4  valueLength (-1 = null), value (a wrapper's: the compressed inner message set)

An uncompressed entry is one record. A compressed wrapper's value is one codec stream of
uncompressed inner entries of the same layout. Their offsets are absolute under a magic 0
wrapper and relative (0, 1, ...) under magic 1, made absolute as
`wrapperOffset - lastInnerOffset + innerOffset` (inner offsets as they are if the wrapper
offset is 0, as some librdkafka versions wrote it). Timestamps: -1 for magic 0 messages; under
a LogAppendTime wrapper every inner magic 1 record takes the wrapper's timestamp
(AbstractLegacyRecordBatch.DeepRecordsIterator, LegacyRecord.timestamp in Kafka).
"""

from __future__ import annotations

import struct
import zlib

from ..errors import CorruptDataError
from .batch import (ATTR_CODEC_MASK, ATTR_TIMESTAMP_TYPE, LEGACY_CRC_START, LOG_OVERHEAD,
                    MIN_LEGACY_MESSAGE_SIZE, BatchHeader, header_at)
from .codecs import DEFAULT_MAX_DECOMPRESSED, ZSTD, decompress
from .records import Record

_ENTRY = struct.Struct(">qiIbb")   # offset, messageSize, crc, magic, attributes
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
NO_TIMESTAMP = -1


def decode_legacy_entry(entry, header: BatchHeader | None = None, *, verify_crc: bool = True,
                        max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> tuple[int, list]:
    """(first offset, records) of one magic 0/1 entry; `entry` is exactly that entry's bytes.

    The first offset is the entry's base offset: its own offset when uncompressed, the first
    inner record's for a compressed wrapper (whose header only knows the last one). Records are
    `records.Record` tuples with no headers. Errors are located at `header.position`.
    """
    view = memoryview(entry).cast("B")
    if header is None:
        header = header_at(view, 0)
    where = header.position
    if header.magic not in (0, 1):
        raise CorruptDataError(f"magic {header.magic} is not a legacy message format", None, where)
    if len(view) < header.size:
        raise CorruptDataError(f"legacy entry of {header.size} bytes is truncated to {len(view)}",
                               None, where)
    view = view[:header.size]
    if header.size - LOG_OVERHEAD < MIN_LEGACY_MESSAGE_SIZE[header.magic]:
        raise CorruptDataError(f"magic {header.magic} message size {header.size - LOG_OVERHEAD} is "
                               f"below the minimum {MIN_LEGACY_MESSAGE_SIZE[header.magic]}",
                               None, where)
    if verify_crc and not header.crc_is_valid(view):
        raise CorruptDataError(f"legacy message CRC mismatch: stored {header.crc}, computed "
                               f"{header.compute_crc(view)}", None, where)
    magic, timestamp, key, value = _message(view, LOG_OVERHEAD, header.size, where, "message")
    codec = header.codec
    if codec == 0:
        return header.base_offset, [Record(header.base_offset, timestamp, key, value, ())]

    if codec >= ZSTD:
        raise CorruptDataError(f"compression codec {codec} is invalid in a magic {magic} wrapper",
                               None, where)
    if value is None:
        raise CorruptDataError("compressed wrapper message has a null value", None, where)
    try:
        inner = memoryview(decompress(codec, value, magic=magic, max_output=max_decompressed))
    except CorruptDataError as err:
        raise CorruptDataError(f"compressed wrapper message: {err.reason}", None, where) from err
    entries = _inner_entries(inner, where, verify_crc)
    if not entries:
        raise CorruptDataError("compressed wrapper message holds no inner messages", None, where)

    wrapper_offset = header.last_offset
    base = 0  # magic 0 inner offsets are absolute; so are magic 1's when the wrapper's is 0
    relative_as_is = magic == 1 and wrapper_offset == 0
    if magic == 1 and wrapper_offset != 0:
        last_inner = entries[-1][0]
        if wrapper_offset < last_inner:
            raise CorruptDataError(f"wrapper offset {wrapper_offset} is below its last inner "
                                   f"offset {last_inner}", None, where)
        base = wrapper_offset - last_inner
    offsets = [base + e[0] for e in entries]
    if any(b <= a for a, b in zip(offsets, offsets[1:])):
        raise CorruptDataError(f"inner offsets {offsets[0]}..{offsets[-1]} of the wrapper at "
                               f"offset {wrapper_offset} do not increase", None, where)
    if (offsets[-1] != wrapper_offset and not relative_as_is) or offsets[0] < 0:
        # The wrapper's offset is outside every CRC; its inner messages' are inside one.
        raise CorruptDataError(f"wrapper offset {wrapper_offset} is not its last inner offset "
                               f"{offsets[-1]}", None, where)
    log_append_time = magic == 1 and bool(header.attributes & ATTR_TIMESTAMP_TYPE)
    records = []
    for inner_offset, inner_magic, inner_timestamp, inner_key, inner_value in entries:
        if log_append_time and inner_magic == 1:
            inner_timestamp = timestamp
        records.append(Record(base + inner_offset, inner_timestamp, inner_key, inner_value, ()))
    return records[0].offset, records


def _inner_entries(buf: memoryview, where: int, verify_crc: bool) -> list:
    """(offset, magic, timestamp, key, value) of every entry of a decompressed message set."""
    entries = []
    pos, end = 0, len(buf)
    while pos < end:
        if end - pos < LOG_OVERHEAD + MIN_LEGACY_MESSAGE_SIZE[0]:
            raise CorruptDataError(f"inner message set: {end - pos} trailing bytes at inner byte "
                                   f"{pos} are too few for a message", None, where)
        offset, size, crc, magic, attributes = _ENTRY.unpack_from(buf, pos)
        label = f"inner message at inner byte {pos}"
        if magic not in (0, 1):
            raise CorruptDataError(f"{label}: invalid magic {magic}", None, where)
        if size < MIN_LEGACY_MESSAGE_SIZE[magic] or size > end - pos - LOG_OVERHEAD:
            raise CorruptDataError(f"{label}: message size {size} does not fit the "
                                   f"{end - pos - LOG_OVERHEAD} bytes left", None, where)
        stop = pos + LOG_OVERHEAD + size
        if attributes & ATTR_CODEC_MASK:
            raise CorruptDataError(f"{label}: nested compression (inner messages must be "
                                   "uncompressed)", None, where)
        if verify_crc:
            computed = zlib.crc32(buf[pos + LEGACY_CRC_START:stop]) & 0xFFFFFFFF
            if computed != crc:
                raise CorruptDataError(f"{label}: CRC mismatch: stored {crc}, computed {computed}",
                                       None, where)
        entries.append((offset, magic) + _message(buf, pos + LOG_OVERHEAD, stop, where, label)[1:])
        pos = stop
    return entries


def _message(buf: memoryview, start: int, stop: int, where: int, label: str):
    """(magic, timestamp, key, value) of the message in buf[start:stop] (crc .. value)."""
    magic = buf[start + 4]
    pos = start + 6
    timestamp = NO_TIMESTAMP
    if magic == 1:
        timestamp = _INT64.unpack_from(buf, pos)[0]
        pos += 8
    key, pos = _sized_bytes(buf, pos, stop, where, label, "key")
    value, pos = _sized_bytes(buf, pos, stop, where, label, "value")
    if pos != stop:
        raise CorruptDataError(f"{label}: {stop - pos} bytes left after the value", None, where)
    return magic, timestamp, key, value


def _sized_bytes(buf: memoryview, pos: int, stop: int, where: int, label: str, what: str):
    if stop - pos < 4:
        raise CorruptDataError(f"{label}: no room for the {what} length", None, where)
    length = _INT32.unpack_from(buf, pos)[0]
    pos += 4
    if length == -1:
        return None, pos
    if length < 0 or length > stop - pos:
        raise CorruptDataError(f"{label}: {what} length {length} does not fit the "
                               f"{stop - pos} bytes left", None, where)
    return bytes(buf[pos:pos + length]), pos + length
