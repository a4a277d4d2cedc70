"""The compression codecs of Kafka batches: the exact stream formats Kafka writes and reads.

A compressed v2 batch holds its records as one stream after byte 61; a legacy wrapper holds its
inner message set as its value. Codec ids (attributes bits 0-2): 0 none, 1 gzip, 2 snappy, 3 lz4,
4 zstd (magic 2 only). gzip is a standard RFC 1952 stream and zstd a standard zstd frame; the
other two use framings of their own.

snappy, as snappy-java's SnappyOutputStream writes it ("xerial" framing, big-endian)::

    off size field
      0   8  magic 82 53 4e 41 50 50 59 00 ("\\x82SNAPPY\\0")
      8   4  version (1)
     12   4  minimum compatible version (1)
     16   .. chunks: int32 compressed length + one raw snappy block of <= 32 KiB of input
             (a chunk length equal to the first 4 magic bytes starts a concatenated stream)

Without that magic the whole payload is one raw snappy block (some non-Java clients).

lz4, as Kafka's Lz4BlockOutputStream writes it (the LZ4 frame format, little-endian)::

    off size field
      0   4  magic 04 22 4d 18
      4   1  FLG: bits 7-6 version (01), 5 block independence (must be 1), 4 block checksum,
             3 content size, 2 content checksum, 1-0 reserved. Kafka writes 0x60
      5   1  BD: bits 6-4 max block size (4 = 64 KiB .. 7 = 4 MiB). Kafka writes 0x40
     (6   8  content size, only if FLG bit 3)
      .   1  HC = (xxh32(FLG, BD[, content size]) >> 8) & 0xff; magic 0 hashes from the
             frame magic on (Kafka's old bug) and readers skip the check
      .   .. blocks: uint32 size (high bit = stored uncompressed) + data [+ uint32 xxh32]
      .   4  end mark 00000000 [+ uint32 content checksum, not verified, as in Kafka]

Every decoder is bounded by `max_output` so that a small corrupt or hostile payload cannot make
us allocate gigabytes, and every failure is a CorruptDataError (position None: the caller knows
where the payload sits and locates the error).
"""

from __future__ import annotations

import functools
import struct
import threading
import zlib

import cramjam
import numpy as np
import xxhash

from ..errors import BadOptionError, CorruptDataError
from .batch import CODEC_NAMES

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)

# Kafka's own limit on a batch is ~1 MiB by default (max.message.bytes, raisable); 256 MiB of
# decompressed records is far beyond anything real and still safe to hold in memory.
DEFAULT_MAX_DECOMPRESSED = 256 * 1024 * 1024

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_BLOCK_SIZE = 32 * 1024        # snappy-java's default block size
_XERIAL_MAGIC_HEAD = struct.unpack(">i", XERIAL_MAGIC[:4])[0]

LZ4_MAGIC = b"\x04\x22\x4d\x18"
LZ4_FLG = 0x60                       # version 01, independent blocks, no checksums, no size
LZ4_BD = 0x40                        # 64 KiB blocks
LZ4_BLOCK_SIZE = 64 * 1024
LZ4_DEFAULT_LEVEL = 9                # Kafka: level 9 means lz4's fast compressor, others LZ4-HC
_LZ4_STORED = 0x80000000
_FLG_VERSION_MASK, _FLG_INDEPENDENT, _FLG_BLOCK_CHECKSUM = 0xC0, 0x20, 0x10
_FLG_CONTENT_SIZE, _FLG_CONTENT_CHECKSUM, _FLG_RESERVED = 0x08, 0x04, 0x03

ZSTD_DEFAULT_LEVEL = 3               # Kafka's default (compression.zstd.level)
# Levels Kafka accepts (KIP-390); the codec libraries accept the same ranges.
_LEVELS = {GZIP: range(1, 10), LZ4: range(1, 18), ZSTD: range(-131072, 23)}
COMPRESSION_LEVELS = _LEVELS         # (public: write options check a level before any task runs)

_UINT32_LE = struct.Struct("<I")
_INT32_BE = struct.Struct(">i")


class OutputBuffer:
    """One growing buffer that the records of many batches are decompressed into, back to back:
    the decoder's record kernel reads them from one buffer, and writing them there directly
    (where the codec library can) saves copying every decompressed byte once more (~10% of a
    snappy batch's decode). np.empty: pages are touched only when written."""

    def __init__(self, capacity: int = 1 << 20):
        self.buffer = np.empty(capacity, np.uint8)
        self.size = 0

    def reserve(self, n: int) -> np.ndarray:
        """Room for `n` more bytes, at the end (valid until the next reserve)."""
        if self.size + n > len(self.buffer):
            grown = np.empty(max(2 * len(self.buffer), self.size + n), np.uint8)
            grown[:self.size] = self.buffer[:self.size]
            self.buffer = grown
        return self.buffer[self.size:self.size + n]

    def commit(self, n: int) -> None:
        """The first `n` bytes reserved are written."""
        self.size += n

    def append(self, data) -> None:
        n = len(data)
        self.reserve(n)[:] = np.frombuffer(data, np.uint8)
        self.commit(n)

    def view(self) -> np.ndarray:
        return self.buffer[:self.size]


def decompress(codec: int, data, *, magic: int = 2, max_output: int = DEFAULT_MAX_DECOMPRESSED,
               into: OutputBuffer | None = None) -> bytes | bytearray | memoryview | int:
    """The uncompressed bytes of a `codec` stream, as Kafka's reader for `magic` sees them: a
    bytes-like object, never copied once more (a batch's records can take hundreds of MB).
    With `into`, they are appended to that buffer instead, and their length is returned; a
    stream that fails leaves the buffer as it was.

    An empty payload is an empty stream for every codec (the cleaner's empty batches keep their
    codec bits but carry no bytes). Raises CorruptDataError for malformed input and for output
    larger than `max_output` (checked before or while decoding, never after allocating it).
    """
    name = _codec_name(codec)
    if codec == ZSTD and magic < 2:
        raise CorruptDataError(f"zstd compression is invalid with magic {magic}")
    view = memoryview(data).cast("B")
    if len(view) == 0:
        return b"" if into is None else 0
    start = 0 if into is None else into.size
    try:
        return _decompress(codec, view, magic, max_output, into)
    except (cramjam.DecompressionError, zlib.error) as exc:  # callers need one vocabulary
        if into is not None:
            into.size = start
        raise CorruptDataError(f"{name}: {exc}") from exc
    except BaseException:
        if into is not None:
            into.size = start    # (lz4 keeps each block as it goes)
        raise


def _decompress(codec: int, view: memoryview, magic: int, max_output: int,
                into: OutputBuffer | None):
    if codec == NONE:
        if len(view) > max_output:
            raise _too_big("none", max_output)
        out = bytes(view) if into is None else view
    elif codec == GZIP:
        out = _gunzip(view, max_output)
    elif codec == SNAPPY:
        return _unsnappy(view, max_output, into)
    elif codec == LZ4:
        return _unlz4(view, magic, max_output, into)
    else:
        return _unzstd(view, max_output, into)
    if into is None:
        return out
    into.append(out)       # (zlib returns its own bytes: there is no decoding in place)
    return len(out)


def compress(codec: int, data, *, magic: int = 2, level: int | None = None) -> bytes:
    """`data` compressed the way a Kafka producer or broker writes `codec` for `magic`.

    `level` follows Kafka's compression.<codec>.level (gzip 1-9, lz4 1-17, zstd up to 22;
    None is the codec's default, and gzip also takes -1 for it). The bytes need not match
    Java's (codec libraries differ), but Kafka's readers accept them.
    """
    if codec not in range(len(CODEC_NAMES)):
        raise BadOptionError("compression", codec,
                             f"unknown codec id (known: 0-{len(CODEC_NAMES) - 1})")
    if codec == ZSTD and magic < 2:
        raise BadOptionError("compression", "zstd", f"zstd needs magic 2, not {magic}")
    if codec == GZIP and level == -1:
        level = None
    if level is not None and level not in _LEVELS.get(codec, ()):
        raise BadOptionError("compression.level", level,
                             f"not a valid level for {CODEC_NAMES[codec]}")
    view = memoryview(data).cast("B")
    if codec == NONE:
        return bytes(view)
    if codec == GZIP:
        # cramjam writes MTIME 0 and OS 0xff, the header a JDK 16+ broker writes.
        return bytes(cramjam.gzip.compress(view, level=level))
    if codec == SNAPPY:
        chunks = [XERIAL_HEADER]
        for start in range(0, len(view), XERIAL_BLOCK_SIZE):
            block = bytes(cramjam.snappy.compress_raw(view[start:start + XERIAL_BLOCK_SIZE]))
            chunks += [_INT32_BE.pack(len(block)), block]
        return b"".join(chunks)
    if codec == LZ4:
        return _lz4_frame(view, magic, LZ4_DEFAULT_LEVEL if level is None else level)
    return bytes(cramjam.zstd.compress(view, level=ZSTD_DEFAULT_LEVEL if level is None else level))


def _codec_name(codec: int) -> str:
    if not 0 <= codec < len(CODEC_NAMES):
        raise CorruptDataError(f"unknown compression codec {codec}")
    return CODEC_NAMES[codec]


def _too_big(name: str, max_output: int) -> CorruptDataError:
    return CorruptDataError(f"{name}: decompressed size exceeds the limit of {max_output} bytes")


def _gunzip(data: memoryview, max_output: int) -> bytes:
    members, produced = [], 0
    rest = data
    while True:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)  # gzip wrapper only, as GZIPInputStream
        # Asking for one byte more than allowed tells a bomb from a stream that just fits.
        members.append(inflater.decompress(rest, max_output - produced + 1))
        produced += len(members[-1])
        if produced > max_output:
            raise _too_big("gzip", max_output)
        if not inflater.eof:
            raise CorruptDataError("gzip: truncated stream (no end of deflate data or trailer)")
        rest = inflater.unused_data
        # Java's GZIPInputStream decodes concatenated members and ignores any other trailing bytes.
        if rest[:2] != b"\x1f\x8b":   # (one member, the usual case, is returned uncopied)
            return members[0] if len(members) == 1 else b"".join(members)


def _unsnappy(data: memoryview, max_output: int, into: OutputBuffer | None):
    if len(data) < len(XERIAL_HEADER) or data[:8] != XERIAL_MAGIC:
        return _snappy_blocks([data], max_output, into)  # snappy-java's fallback: one raw block
    blocks = []
    pos = 0
    while len(data) - pos >= 4:  # snappy-java stops quietly when fewer than 4 bytes remain
        if pos == 0 or _INT32_BE.unpack_from(data, pos)[0] == _XERIAL_MAGIC_HEAD:
            _check_xerial_header(data, pos)
            pos += len(XERIAL_HEADER)
            continue
        length = _INT32_BE.unpack_from(data, pos)[0]
        pos += 4
        if length < 0 or length > len(data) - pos:
            raise CorruptDataError(f"snappy: chunk of {length} bytes at byte {pos - 4} runs past "
                                   f"the end of the {len(data)}-byte stream")
        blocks.append(data[pos:pos + length])
        pos += length
    return _snappy_blocks(blocks, max_output, into)


def _snappy_blocks(blocks: list, max_output: int, into: OutputBuffer | None):
    """Raw snappy blocks decoded into one buffer. Each block starts with its uncompressed
    length, so the whole size is known (and a bomb refused) before anything is decoded, and
    the output is written once, in place."""
    sizes = [cramjam.snappy.decompress_raw_len(block) for block in blocks]
    total = sum(sizes)
    if total > max_output:
        raise _too_big("snappy", max_output)
    out = np.empty(total, np.uint8) if into is None else into.reserve(total)
    at = 0
    for block, size in zip(blocks, sizes):
        if cramjam.snappy.decompress_raw_into(block, out[at:at + size]) != size:
            raise CorruptDataError("snappy: a block decodes to fewer bytes than it declares")
        at += size
    if into is None:
        return memoryview(out)
    into.commit(total)
    return total


def _check_xerial_header(data: memoryview, pos: int) -> None:
    if len(data) - pos < len(XERIAL_HEADER) or data[pos:pos + 8] != XERIAL_MAGIC:
        raise CorruptDataError(f"snappy: bad xerial stream header at byte {pos}")
    version = _INT32_BE.unpack_from(data, pos + 8)[0]
    if version < 1:
        raise CorruptDataError(f"snappy: unsupported xerial stream version {version}")


def _unlz4(data: memoryview, magic: int, max_output: int, into: OutputBuffer | None):
    # Parsed here rather than by cramjam.lz4.decompress: that refuses magic 0's broken header
    # checksum and accepts linked blocks, both unlike Kafka's Lz4BlockInputStream.
    if len(data) < 7 or data[:4] != LZ4_MAGIC:
        raise CorruptDataError("lz4: not an LZ4 frame (bad magic)")
    flg, bd = data[4], data[5]
    if flg & _FLG_VERSION_MASK != 0x40 or flg & _FLG_RESERVED:
        raise CorruptDataError(f"lz4: unsupported frame flags 0x{flg:02x}")
    if not flg & _FLG_INDEPENDENT:
        raise CorruptDataError("lz4: dependent (linked) blocks are not supported by Kafka")
    if bd & 0x8F or not 4 <= bd >> 4 <= 7:
        raise CorruptDataError(f"lz4: bad block descriptor 0x{bd:02x}")
    max_block = 1 << (2 * (bd >> 4) + 8)
    pos = 6 + (8 if flg & _FLG_CONTENT_SIZE else 0)
    if len(data) <= pos:
        raise CorruptDataError("lz4: truncated frame header")
    # Magic 0 frames carry Kafka's old, wrong header checksum; Kafka skips the check for them.
    if magic >= 1 and data[pos] != _descriptor_checksum(bytes(data[4:pos])):
        raise CorruptDataError("lz4: frame header checksum mismatch")
    pos += 1
    out = OutputBuffer(max_block) if into is None else into
    start = out.size
    while True:
        if len(data) - pos < 4:
            raise CorruptDataError("lz4: truncated frame (no end mark)")
        word = _UINT32_LE.unpack_from(data, pos)[0]
        pos += 4
        size = word & ~_LZ4_STORED
        if size == 0:  # end mark; Kafka reads exactly one frame and ignores what follows
            if flg & _FLG_CONTENT_CHECKSUM and len(data) - pos < 4:
                raise CorruptDataError("lz4: truncated content checksum")
            return memoryview(out.view()) if into is None else out.size - start
        if size > max_block:
            raise CorruptDataError(
                f"lz4: block of {size} bytes exceeds the frame's maximum {max_block}")
        if len(data) - pos < size + (4 if flg & _FLG_BLOCK_CHECKSUM else 0):
            raise CorruptDataError(f"lz4: block of {size} bytes at byte {pos - 4} is truncated")
        block = data[pos:pos + size]
        pos += size
        if flg & _FLG_BLOCK_CHECKSUM:
            if _UINT32_LE.unpack_from(data, pos)[0] != _xxh32(block):
                raise CorruptDataError("lz4: block checksum mismatch")
            pos += 4
        if word & _LZ4_STORED:
            n = size
            room = out.reserve(n)
            room[:] = np.frombuffer(block, np.uint8)
        else:
            # Into room for the frame's largest block, as Kafka's reader decodes each block.
            # decompress_block_into reports the real length; decompress_block would zero-pad.
            n = cramjam.lz4.decompress_block_into(block, out.reserve(max_block))
        if out.size - start + n > max_output:
            raise _too_big("lz4", max_output)
        out.commit(n)


def _lz4_frame(data: memoryview, magic: int, level: int) -> bytes:
    if level == LZ4_DEFAULT_LEVEL:
        options = {"mode": "default"}
    else:
        options = {"mode": "high_compression", "compression": level}
    parts = [LZ4_MAGIC, bytes((LZ4_FLG, LZ4_BD, _lz4_header_checksum(magic)))]
    for start in range(0, len(data), LZ4_BLOCK_SIZE):
        chunk = data[start:start + LZ4_BLOCK_SIZE]
        block = bytes(cramjam.lz4.compress_block(chunk, store_size=False, **options))
        if len(block) >= len(chunk):  # incompressible: stored as is, as Kafka's writer does
            parts += [_UINT32_LE.pack(len(chunk) | _LZ4_STORED), bytes(chunk)]
        else:
            parts += [_UINT32_LE.pack(len(block)), block]
    parts.append(b"\x00\x00\x00\x00")
    return b"".join(parts)


def _lz4_header_checksum(magic: int) -> int:
    descriptor = bytes((LZ4_FLG, LZ4_BD))
    if magic == 0:  # Kafka before 0.10 hashed from the frame magic on; v0 readers expect that
        descriptor = LZ4_MAGIC + descriptor
    return _descriptor_checksum(descriptor)


@functools.lru_cache(maxsize=256)  # nearly every frame has the same few descriptors
def _descriptor_checksum(descriptor: bytes) -> int:
    return (_xxh32(descriptor) >> 8) & 0xFF


def _xxh32(data) -> int:
    """XXH32(data, seed 0), the checksum of LZ4 frame descriptors and blocks."""
    return xxhash.xxh32_intdigest(data)


_ZSTD_SCRATCH_BYTES = 1 << 20
_zstd_scratch = threading.local()


def _unzstd(data: memoryview, max_output: int, into: OutputBuffer | None):
    # cramjam decodes into a caller's buffer and fails once it is full, which bounds the output.
    # A small first buffer keeps the common case cheap; only a payload that outgrows it pays for
    # a second pass into one of the full size (np.empty: pages are only touched when written).
    # The small one is a per-thread scratch, its output copied out: a fresh MiB per batch cost an
    # mmap, page faults and a munmap each, up to as much again as the decompression itself.
    # Into a caller's OutputBuffer, the same sizes are reserved at its end (no scratch, no copy).
    first = min(max_output + 1, max(_ZSTD_SCRATCH_BYTES, 32 * len(data)))
    for size in (first, max_output + 1) if first <= max_output else (first,):
        reuse = into is None and size == _ZSTD_SCRATCH_BYTES
        if into is not None:
            buffer = into.reserve(size)
        else:
            buffer = _zstd_scratch_buffer() if reuse else np.empty(size, np.uint8)
        try:
            written = cramjam.zstd.decompress_into(data, buffer)
        except cramjam.DecompressionError as exc:
            if "write whole buffer" in str(exc):  # the output did not fit
                continue
            raise
        if written <= max_output:
            if into is not None:
                into.commit(written)
                return written
            # big payloads: no copy, they must not cost two
            return bytes(buffer[:written]) if reuse else memoryview(buffer)[:written]
    raise _too_big("zstd", max_output)


def _zstd_scratch_buffer() -> np.ndarray:
    buffer = getattr(_zstd_scratch, "buffer", None)
    if buffer is None:
        buffer = _zstd_scratch.buffer = np.empty(_ZSTD_SCRATCH_BYTES, np.uint8)
    return buffer
