"""The `.rsm-manifest` of Aiven's tiered-storage plugin for Kafka (its "kafka" segment format),
and the custom metadata the plugin hands the broker for `__remote_log_metadata`.

Each uploaded segment is three objects sharing one key stem: `.log` (the segment cut into
chunks of `originalChunkSize` bytes, each chunk zstd-compressed and/or AES-GCM-encrypted on its
own, concatenated), `.indexes` (the segment's indexes, concatenated, each encrypted whole) and
this manifest, a compact JSON object written last. The manifest says where every transformed
chunk and index lies; nothing in the other two objects frames them, so every size here is
checked before it is used to cut bytes (and again against the objects' real sizes, by
aiven_segment.py).

Format facts: Aiven-Open/tiered-storage-for-apache-kafka, manifest/ and manifest/index/ (V1, the
only version, unchanged from v1.1.1 to 2026).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
import json

import cramjam
import numpy as np

from ...errors import CorruptDataError, SegmentLogError

MANIFEST_SUFFIX = ".rsm-manifest"
LOG_OBJECT_SUFFIX = ".log"
INDEXES_OBJECT_SUFFIX = ".indexes"

# AES-GCM as the plugin writes it: a 12-byte IV before the ciphertext, a 16-byte tag after.
GCM_IV_BYTES = 12
GCM_TAG_BYTES = 16
GCM_OVERHEAD = GCM_IV_BYTES + GCM_TAG_BYTES

INT32_MAX = 2**31 - 1

# The segment indexes in the order the plugin concatenates them in `.indexes`.
INDEX_FIELDS = (("offset", "offset"), ("timestamp", "timestamp"),
                ("producerSnapshot", "producer_snapshot"), ("leaderEpoch", "leader_epoch"),
                ("transaction", "transaction"))


class IcebergSegmentError(SegmentLogError):
    """A segment the plugin stored in its Iceberg format (`segment.format=iceberg`): Parquet
    files of an Iceberg table, not Kafka batches, so it is read as an Iceberg table."""


def iceberg_error(what: str, path: str) -> IcebergSegmentError:
    return IcebergSegmentError(
        f"{path}: {what}: this is an Iceberg-mode segment of Aiven's tiered storage "
        f"(segment.format=iceberg: the records are in an Iceberg table named after the topic, "
        f"with a Puffin file <table location>/metadata/<segment id>.puffin for its indexes); "
        f"read that table as Iceberg, not as Kafka segments")


@dataclass(frozen=True, eq=False)
class ChunkIndex:
    """Where each chunk of the original segment is, before and after its transforms.

    `original` and `transformed` are the chunk boundaries (int64, one more than the chunk
    count): chunk i is [original[i], original[i+1]) of the segment and [transformed[i],
    transformed[i+1]) of the `.log` object."""

    kind: str                     # "fixed" or "variable" (the JSON type id)
    original_chunk_size: int
    original_file_size: int
    original: np.ndarray
    transformed: np.ndarray

    @property
    def count(self) -> int:
        return len(self.original) - 1

    @property
    def transformed_size(self) -> int:
        return int(self.transformed[-1])

    def chunks_covering(self, start: int, end: int) -> range:
        """The chunks that hold bytes [start, end) of the segment (end > start)."""
        return range(start // self.original_chunk_size,
                     (end - 1) // self.original_chunk_size + 1)


@dataclass(frozen=True)
class IndexSlice:
    """One index inside the `.indexes` object: its stored (transformed) bytes."""

    position: int
    size: int

    @property
    def end(self) -> int:
        return self.position + self.size


@dataclass(frozen=True)
class SegmentIndexes:
    offset: IndexSlice
    timestamp: IndexSlice
    producer_snapshot: IndexSlice
    leader_epoch: IndexSlice
    transaction: IndexSlice | None   # JSON null: the segment had no `.txnindex`

    def slices(self) -> list[tuple[str, IndexSlice]]:
        return [(name, getattr(self, name)) for _, name in INDEX_FIELDS
                if getattr(self, name) is not None]

    @property
    def end(self) -> int:
        """Where the last index ends: the size the `.indexes` object must have."""
        return max((s.end for _, s in self.slices()), default=0)


@dataclass(frozen=True)
class Encryption:
    """The segment's AES key, wrapped with the RSA public key of key pair `key_pair_id`, and the
    additional authenticated data of every chunk and index of the segment."""

    key_pair_id: str
    wrapped_key: bytes
    aad: bytes

    def __repr__(self) -> str:
        return f"Encryption(key_pair_id={self.key_pair_id!r}, aad={len(self.aad)} bytes)"


@dataclass(frozen=True)
class RemoteSegmentMetadata:
    """The broker's RemoteLogSegmentMetadata as the plugin serialised it into the manifest (for
    people: the plugin never reads it back)."""

    topic: str
    topic_id: str
    partition: int
    segment_id: str
    start_offset: int
    end_offset: int               # inclusive
    max_timestamp_ms: int
    broker_id: int
    event_timestamp_ms: int
    segment_leader_epochs: tuple[tuple[int, int], ...]   # (epoch, start offset), by epoch
    txn_index_empty: bool | None  # only where the broker's class has isTxnIdxEmpty()


@dataclass(frozen=True, eq=False)
class SegmentManifest:
    path: str
    version: str
    chunk_index: ChunkIndex
    segment_indexes: SegmentIndexes
    compression: bool
    encryption: Encryption | None
    metadata: RemoteSegmentMetadata | None

    @property
    def transforms(self) -> str:
        parts = [p for p, on in (("zstd", self.compression),
                                 ("AES-GCM", self.encryption is not None)) if on]
        return " + ".join(parts) or "none"


# -- parsing ------------------------------------------------------------------------------------

class _Fields:
    """Typed access to one JSON object of the manifest, failing with the field's path."""

    def __init__(self, obj, where: str, path: str):
        if not isinstance(obj, dict):
            raise CorruptDataError(f"manifest field {where or '(top)'} is not a JSON object",
                                   path)
        self.obj, self.where, self.path = obj, where, path

    def _name(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def bad(self, key: str, why: str) -> CorruptDataError:
        return CorruptDataError(f"manifest field {self._name(key)} {why}", self.path)

    def get(self, key: str, kind, *, optional: bool = False):
        if key not in self.obj or (optional and self.obj[key] is None):
            if optional:
                return None
            raise self.bad(key, "is missing")
        value = self.obj[key]
        if kind is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
        else:
            ok = isinstance(value, kind)
        if not ok:
            raise self.bad(key, f"is {json.dumps(value)[:40]}, not a {kind.__name__}")
        return value

    def int_in(self, key: str, low: int, high: int = INT32_MAX, *, optional=False):
        value = self.get(key, int, optional=optional)
        if value is not None and not low <= value <= high:
            raise self.bad(key, f"is {value}, outside [{low}, {high}]")
        return value

    def sub(self, key: str, *, optional: bool = False) -> "_Fields | None":
        value = self.get(key, dict, optional=optional)
        return None if value is None else _Fields(value, self._name(key), self.path)


def parse_manifest(data: bytes, path: str) -> SegmentManifest:
    """The manifest in `data` (read from `path`), checked; CorruptDataError on anything a
    plugin would not have written, IcebergSegmentError for an Iceberg-mode object."""
    if data[:4] == b"PFA1":   # Puffin's magic: the Iceberg format's per-segment index file
        raise iceberg_error("a Puffin file where a segment manifest was expected", path)
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise CorruptDataError(f"not a segment manifest (not JSON: {err})", path) from None
    _refuse_iceberg(obj, path)
    top = _Fields(obj, "", path)
    version = top.get("version", str)
    if version != "1":
        raise CorruptDataError(f"unknown manifest version {version!r} (this reader knows "
                               f"version 1 of Aiven's segment manifest)", path)
    compression = top.get("compression", bool)
    encryption = _encryption(top.sub("encryption", optional=True))
    chunk_index = _chunk_index(top.sub("chunkIndex"), compression, encryption is not None)
    indexes = _segment_indexes(top.sub("segmentIndexes"), encryption is not None)
    metadata = _metadata(top.sub("remoteLogSegmentMetadata", optional=True))
    return SegmentManifest(path, version, chunk_index, indexes, compression, encryption,
                           metadata)


def _refuse_iceberg(obj, path: str) -> None:
    # The Iceberg format keeps no manifest of its own; what it writes instead is a file list
    # ([{location, startOffset, startByteOffset...}]), and a configuration names the format.
    if isinstance(obj, list) and obj and all(isinstance(o, dict) and "location" in o
                                             and "startByteOffset" in o for o in obj):
        raise iceberg_error("an Iceberg data-file list where a segment manifest was expected",
                            path)
    if isinstance(obj, dict):
        for key in ("segment.format", "segmentFormat", "format"):
            if str(obj.get(key, "")).lower() == "iceberg":
                raise iceberg_error(f"the manifest says {key}=iceberg", path)


def _chunk_index(f: _Fields, compression: bool, encrypted: bool) -> ChunkIndex:
    kind = f.get("type", str)
    chunk = f.int_in("originalChunkSize", 1)
    file_size = f.int_in("originalFileSize", 0)
    count = -(-file_size // chunk)
    if kind == "fixed":
        full = f.int_in("transformedChunkSize", 0)
        final = f.int_in("finalTransformedChunkSize", 0)
        if count == 0 and final != 0:
            raise f.bad("finalTransformedChunkSize", f"is {final} for an empty segment")
        sizes = np.full(count, full, np.int64)
        if count:
            sizes[-1] = final
    elif kind == "variable":
        sizes = _variable_sizes(f, f.get("transformedChunks", str), count)
        if len(sizes) != count:
            raise f.bad("transformedChunks", f"lists {len(sizes)} chunks, but "
                        f"originalFileSize {file_size} in chunks of {chunk} bytes makes {count}")
    else:
        raise f.bad("type", f"is {kind!r}: neither 'fixed' nor 'variable'")
    original = np.minimum(np.arange(count + 1, dtype=np.int64) * chunk, file_size)
    transformed = np.zeros(count + 1, np.int64)
    np.cumsum(sizes, out=transformed[1:])
    plain = np.diff(original)
    overhead = GCM_OVERHEAD if encrypted else 0
    if not compression and count and not np.array_equal(sizes, plain + overhead):
        bad = int(np.flatnonzero(sizes != plain + overhead)[0])
        raise f.bad("originalChunkSize" if kind == "variable" else "transformedChunkSize",
                    f"disagrees with the transforms: chunk {bad} holds {int(plain[bad])} "
                    f"bytes, which {'encrypted ' if encrypted else ''}without compression "
                    f"are {int(plain[bad]) + overhead} bytes, but the index says "
                    f"{int(sizes[bad])}")
    if compression and count and int(sizes.min()) < overhead + 1:
        raise f.bad("transformedChunks", "has a chunk too small to be a transformed chunk")
    return ChunkIndex(kind, chunk, file_size, original, transformed)


def bounded_unzstd(frame, limit: int) -> bytes:
    """The content of one zstd frame, refused (ValueError) past `limit` bytes: a frame's
    declared size is not trusted with memory."""
    buffer = np.empty(limit + 1, np.uint8)
    try:
        written = cramjam.zstd.decompress_into(frame, buffer)
    except cramjam.DecompressionError as err:
        if "write whole buffer" in str(err):
            raise ValueError(f"it inflates past {limit} bytes") from None
        raise ValueError(str(err)) from None
    if written > limit:
        raise ValueError(f"it inflates past {limit} bytes")
    return buffer[:written].tobytes()


def _variable_sizes(f: _Fields, encoded: str, expected: int) -> np.ndarray:
    """The table of transformed chunk sizes of a variable index: base64 of one zstd frame of
    big-endian ints (count; then base, byte width W and count-1 W-byte `size - base`, then the
    last size whole; count 1: the size alone)."""
    try:
        frame = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise f.bad("transformedChunks", "is not base64") from None
    try:   # (at most 4 bytes per chunk, and 9 more: a longer table is not the segment's)
        raw = bounded_unzstd(frame, 4 * expected + 13)
    except ValueError as err:
        raise f.bad("transformedChunks", f"is not the zstd frame of a chunk table "
                    f"({err})") from None

    def int32(at: int) -> int:
        if at + 4 > len(raw):
            raise f.bad("transformedChunks", f"table ends at byte {len(raw)}, inside a field")
        return int.from_bytes(raw[at:at + 4], "big", signed=True)

    count = int32(0)
    if count < 0:
        raise f.bad("transformedChunks", f"table counts {count} chunks")
    if count == 0:
        sizes, end = np.zeros(0, np.int64), 4
    elif count == 1:
        sizes, end = np.array([int32(4)], np.int64), 8
    else:
        base = int32(4)
        if len(raw) < 9:
            raise f.bad("transformedChunks", "table ends before its value width")
        width = raw[8]
        if not 1 <= width <= 4:
            raise f.bad("transformedChunks", f"table value width is {width}, not 1..4")
        packed_end = 9 + width * (count - 1)
        if packed_end + 4 > len(raw):
            raise f.bad("transformedChunks", f"table of {count} chunks needs "
                        f"{packed_end + 4} bytes, has {len(raw)}")
        packed = np.frombuffer(raw, np.uint8, width * (count - 1), 9).reshape(count - 1, width)
        deltas = np.zeros(count - 1, np.int64)
        for column in range(width):
            deltas = deltas << 8 | packed[:, column]
        sizes = np.append(deltas + base, int32(packed_end))
        end = packed_end + 4
    if end != len(raw):
        raise f.bad("transformedChunks", f"table has {len(raw) - end} bytes after its end")
    if count and (int(sizes.min()) < 0 or int(sizes.max()) > INT32_MAX):
        raise f.bad("transformedChunks", "table holds a negative or oversized chunk size")
    return sizes


def _segment_indexes(f: _Fields, encrypted: bool) -> SegmentIndexes:
    slices = {}
    for key, name in INDEX_FIELDS:
        sub = f.sub(key, optional=key == "transaction")
        if sub is None:
            slices[name] = None
            continue
        s = IndexSlice(sub.int_in("position", 0), sub.int_in("size", 0))
        if encrypted and 0 < s.size < GCM_OVERHEAD:
            raise sub.bad("size", f"is {s.size}: an encrypted index takes at least "
                          f"{GCM_OVERHEAD} bytes")
        slices[name] = s
    ordered = sorted((s.position, s.end, n) for n, s in slices.items() if s is not None and s.size)
    for (_, end, name), (start, _, after) in zip(ordered, ordered[1:]):
        if start < end:
            raise f.bad(after, f"overlaps {name} in the .indexes object")
    return SegmentIndexes(**slices)


def _encryption(f: _Fields | None) -> Encryption | None:
    if f is None:
        return None
    key_id, colon, wrapped = f.get("dataKey", str).partition(":")
    if not colon or not key_id:
        raise f.bad("dataKey", "is not '<key pair id>:<base64 of the wrapped key>'")
    try:
        wrapped_key = base64.b64decode(wrapped, validate=True)
        aad = base64.b64decode(f.get("aad", str), validate=True)
    except (binascii.Error, ValueError):
        raise f.bad("dataKey/aad", "is not base64") from None
    if not wrapped_key:
        raise f.bad("dataKey", "holds no wrapped key")
    if len(aad) != 32:
        raise f.bad("aad", f"is {len(aad)} bytes, not the 32 the plugin writes")
    return Encryption(key_id, wrapped_key, aad)


def _metadata(f: _Fields | None) -> RemoteSegmentMetadata | None:
    if f is None:
        return None
    ident = f.sub("remoteLogSegmentId")
    tip = ident.sub("topicIdPartition")
    tp = tip.sub("topicPartition")
    epochs = f.get("segmentLeaderEpochs", dict)
    try:
        pairs = tuple(sorted((int(k), v) for k, v in epochs.items()))
    except ValueError:
        raise f.bad("segmentLeaderEpochs", "has a key that is not an epoch number") from None
    if any(not isinstance(v, int) or isinstance(v, bool) for _, v in pairs):
        raise f.bad("segmentLeaderEpochs", "has a start offset that is not an integer")
    start = f.int_in("startOffset", 0, 2**63 - 1)
    end = f.int_in("endOffset", -1, 2**63 - 1)
    if end < start - 1:
        raise f.bad("endOffset", f"is {end}, before startOffset {start}")
    txn_empty = f.get("txnIdxEmpty", bool, optional=True)
    return RemoteSegmentMetadata(
        tp.get("topic", str), tip.get("topicId", str), tp.int_in("partition", 0),
        ident.get("id", str), start, end, f.get("maxTimestampMs", int),
        f.get("brokerId", int), f.get("eventTimestampMs", int), pairs, txn_empty)


# -- custom metadata (RemoteLogSegmentMetadata.customMetadata) ------------------------------------

@dataclass(frozen=True)
class AivenCustomMetadata:
    """The fields the plugin stores in a segment's custom metadata (config
    `custom.metadata.fields.include`); None where a field was not included."""

    remote_size: int | None = None      # bytes of the three objects together
    object_prefix: str | None = None    # the key.prefix the segment was uploaded under
    object_key: str | None = None       # the key's main part: <topic>-<id>/<p>/<offset>-<id>


def parse_custom_metadata(data: bytes, where: str) -> AivenCustomMetadata:
    """Decode the plugin's custom metadata: a tagged-fields section (uvarint count, then per
    field uvarint tag, uvarint size, value): tag 0 a zigzag varlong, tags 1 and 2 compact
    strings. `where` names the segment in errors."""
    pos = 0

    def uvarint(limit: int) -> int:
        nonlocal pos
        value = shift = 0
        while True:
            if pos >= limit:
                raise CorruptDataError("custom metadata ends inside a varint", where, pos)
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7
            if shift > 63:
                raise CorruptDataError("custom metadata has a varint over 64 bits", where, pos)

    fields: dict[int, object] = {}
    count = uvarint(len(data))
    previous = -1
    for _ in range(count):
        tag = uvarint(len(data))
        size = uvarint(len(data))
        if tag <= previous or pos + size > len(data):
            raise CorruptDataError(f"custom metadata field {tag} is out of order or runs past "
                                   f"the end", where, pos)
        previous, end = tag, pos + size
        if tag == 0:
            raw = uvarint(end)
            fields[tag] = (raw >> 1) ^ -(raw & 1)
        elif tag in (1, 2):
            length = uvarint(end) - 1
            if length < 0 or pos + length != end:
                raise CorruptDataError(f"custom metadata field {tag} is not a compact string",
                                       where, pos)
            try:
                fields[tag] = data[pos:end].decode("utf-8")
            except UnicodeDecodeError:
                raise CorruptDataError(f"custom metadata field {tag} is not UTF-8", where,
                                       pos) from None
            pos = end
        if pos != end and tag in (0, 1, 2):
            raise CorruptDataError(f"custom metadata field {tag} has {end - pos} extra bytes",
                                   where, pos)
        pos = end   # (an unknown tag, from a newer plugin, is skipped)
    if pos != len(data):
        raise CorruptDataError(f"custom metadata has {len(data) - pos} bytes after its fields",
                               where, pos)
    return AivenCustomMetadata(fields.get(0), fields.get(1), fields.get(2))


# -- object keys -----------------------------------------------------------------------------------

def object_keys(key_prefix: str, main: str, custom_metadata: bytes | None = None
                ) -> tuple[str, str]:
    """(.log key, .indexes key) of the segment `main` (`<topic>-<id>/<p>/<offset>-<id>`):
    the plugin fetches them by the custom metadata's prefix and key where it has them, else by
    the configured `key_prefix` and `main` (its manifest is always at key_prefix + main)."""
    prefix, key = key_prefix, main
    if custom_metadata:
        fields = parse_custom_metadata(custom_metadata, f"custom metadata of segment {main}")
        prefix = key_prefix if fields.object_prefix is None else fields.object_prefix
        key = main if fields.object_key is None else fields.object_key
    return prefix + key + LOG_OBJECT_SUFFIX, prefix + key + INDEXES_OBJECT_SUFFIX
