"""One segment of Aiven's tiered storage, read in place as if it were a local segment.

    <root>/<key.prefix><topic>-<topic id>/<partition>/<20-digit start offset>-<segment id>
        .log            the segment in chunks, each zstd-compressed and/or AES-GCM-encrypted
        .indexes        offset, time, producer-snapshot, leader-epoch [, transaction] indexes
        .rsm-manifest   JSON: where each transformed chunk and index lies (aiven_manifest.py)

`AivenSegmentFiles` is a read-only file system over those three objects (on any file system of
the I/O seam) that shows `<stem>.log` as the plain segment bytes and `<stem>.index`,
`.timeindex`, `.txnindex`, `.snapshot`, `.leader_epoch_checkpoint` as the broker's files, so
LogSegment, the indexes and the scans read it unchanged. A ranged read of `.log` fetches only
the transformed chunks that cover it (one ranged request per run of chunks not cached) and
de-transforms them; a few decoded chunks are kept, since a scan reads a chunk's neighbourhood
more than once (a header, then its batch). Every manifest size is checked against the objects'
real sizes before it cuts bytes; damage is an error naming the object and chunk, never bytes.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
import threading
from typing import Iterable, Mapping

import numpy as np

from ...errors import CorruptDataError, DataLossError, LogNotFoundError, ReadOnlyStoreError
from ..io.filesystem import filesystem_for
from ..io.read_handle import ReadHandle
from ..io.stats import IOStats
from ..log_files import (INDEX_SUFFIX, LOG_SUFFIX, SNAPSHOT_SUFFIX, TIME_INDEX_SUFFIX,
                         TXN_INDEX_SUFFIX, file_name)
from .aiven_crypto import decrypt, parse_private_key_option, unwrap_data_key
from .aiven_manifest import (INDEXES_OBJECT_SUFFIX, LOG_OBJECT_SUFFIX, MANIFEST_SUFFIX,
                             SegmentManifest, bounded_unzstd, iceberg_error, object_keys,
                             parse_manifest)
from .remote_names import LEADER_EPOCH_SUFFIX, split_segment_stem, split_topic_dir

# The files a segment shows, and the index of `.indexes` each one is.
_INDEX_OF_SUFFIX = {INDEX_SUFFIX: "offset", TIME_INDEX_SUFFIX: "timestamp",
                    TXN_INDEX_SUFFIX: "transaction", SNAPSHOT_SUFFIX: "producer_snapshot",
                    LEADER_EPOCH_SUFFIX: "leader_epoch"}
DEFAULT_CACHE_BYTES = 16 * 1024 * 1024   # decoded chunks kept per segment (at least two)


class AivenSegmentFiles:
    """A read-only file system of one uploaded segment (see the module doc). `fs` serves the
    objects; `stem` is the backing path of `<prefix><main>` (the manifest is `stem` +
    `.rsm-manifest`); `log_object` / `indexes_object` default to `stem` + suffix (custom
    metadata may place them under another prefix). `manifest` is the manifest's bytes when the
    caller has them. Encrypted segments need `data_key` (unwrapped already) or `private_key`
    (the `remoteTierPrivateKey` option's value). Backing reads are counted in the caller's
    IOStats, else in `self.stats`."""

    immutable_objects = True
    warms_ranges = False   # (its own cache holds whole chunks: a planner reads it as a file)

    def __init__(self, fs, stem: str, *, manifest: bytes | None = None,
                 log_object: str | None = None, indexes_object: str | None = None,
                 data_key: bytes | None = None, private_key: str | None = None,
                 store_config=None, stats: IOStats | None = None,
                 cache_bytes: int = DEFAULT_CACHE_BYTES):
        self.fs, self.stem = fs, stem.rstrip("/")
        self.stats = IOStats()
        self.directory = fs.dirname(self.stem)
        self.log_object = log_object or self.stem + LOG_OBJECT_SUFFIX
        self.indexes_object = indexes_object or self.stem + INDEXES_OBJECT_SUFFIX
        self.manifest_path = self.stem + MANIFEST_SUFFIX
        self.manifest_bytes = manifest if manifest is not None else self._read_manifest(stats)
        self.manifest: SegmentManifest = parse_manifest(self.manifest_bytes, self.manifest_path)
        self.base_offset, self.segment_id = self._identify()
        self.read_ahead_bytes = getattr(fs, "read_ahead_bytes", 2 * 1024 * 1024)
        self.data_key = data_key
        if self.manifest.encryption is not None and data_key is None:
            self.data_key = unwrap_data_key(
                self.manifest.encryption, parse_private_key_option(private_key),
                segment=self.stem, manifest_path=self.manifest_path, store_config=store_config)
        self._identity = not self.manifest.compression and self.manifest.encryption is None
        self._object_sizes: dict[str, int] = {}
        self._indexes: dict[str, bytes] = {}
        self._chunks: OrderedDict[int, bytes] = OrderedDict()
        self._cached_bytes = 0
        self._cache_bytes = max(cache_bytes, 2 * self.manifest.chunk_index.original_chunk_size)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"AivenSegmentFiles({self.stem!r}, transforms={self.manifest.transforms})"

    def _read_manifest(self, stats) -> bytes:
        try:
            return self.fs.read_all(self.manifest_path, self._stats(stats))
        except FileNotFoundError:
            pass
        if self.fs.exists(self.log_object):   # the plugin writes the manifest last
            raise DataLossError(f"remote segment {self.stem}: its .log is there but not its "
                                f"manifest {self.manifest_path}: an upload that never "
                                f"finished (or a manifest deleted), so its chunks cannot be "
                                f"located") from None
        raise iceberg_error(f"no {MANIFEST_SUFFIX} and no {LOG_OBJECT_SUFFIX} object (a "
                            f"segment whose objects were deleted is missing the same way)",
                            self.stem) from None

    def _identify(self) -> tuple[int, str | None]:
        parsed = split_segment_stem(self.fs.basename(self.stem))
        meta = self.manifest.metadata
        if parsed is None:
            if meta is None:
                raise CorruptDataError("neither the key (<20-digit offset>-<segment id>) nor "
                                       "the manifest says where the segment starts",
                                       self.manifest_path)
            return meta.start_offset, meta.segment_id
        if meta is not None and (meta.start_offset, meta.segment_id) != parsed:
            raise CorruptDataError(f"the manifest describes segment {meta.segment_id} at offset "
                                   f"{meta.start_offset}, but its key names {parsed[1]} at "
                                   f"{parsed[0]}", self.manifest_path)
        return parsed

    def _stats(self, stats: IOStats | None) -> IOStats:
        return stats if stats is not None else self.stats

    def ref(self, root: str, *, private_key: str | None = None) -> "AivenSegmentRef":
        """A picklable description an executor rebuilds this from: with the unwrapped data key,
        unless `private_key` (the option value) is given to travel instead."""
        def rel(path: str) -> str:
            return path[len(root.rstrip("/")) + 1:] if path.startswith(root.rstrip("/") + "/") \
                else path
        return AivenSegmentRef(root, rel(self.stem), self.manifest_bytes, rel(self.log_object),
                               rel(self.indexes_object),
                               None if private_key is not None else self.data_key, private_key)

    # -- names -------------------------------------------------------------------------------
    def path(self, suffix: str) -> str:
        """The virtual path of the segment's file with `suffix` (`.log`, `.index`, ...)."""
        return self.stem + suffix

    @property
    def log_path(self) -> str:
        return self.stem + LOG_SUFFIX

    def join(self, *parts: str) -> str:
        return self.fs.join(*parts)

    def basename(self, path: str) -> str:
        return self.fs.basename(path)

    def dirname(self, path: str) -> str:
        return self.fs.dirname(path)

    def _suffix_of(self, path: str) -> str | None:
        """The suffix `path` names: `<stem><suffix>`, or the broker's own name for it in the
        same directory (`<20-digit base offset><suffix>`), which LogSegment builds by default."""
        if path.startswith(self.stem + "."):
            suffix = path[len(self.stem):]
        elif self.fs.dirname(path) == self.directory:
            name = self.fs.basename(path)
            head = file_name(self.base_offset, "")
            suffix = name[len(head):] if name.startswith(head + ".") else None
        else:
            return None
        return suffix if suffix == LOG_SUFFIX or suffix in _INDEX_OF_SUFFIX else None

    def _index_slice(self, suffix: str):
        return getattr(self.manifest.segment_indexes, _INDEX_OF_SUFFIX[suffix])

    def _known(self, path: str) -> str:
        suffix = self._suffix_of(path)
        if suffix is None or (suffix != LOG_SUFFIX and self._index_slice(suffix) is None):
            raise LogNotFoundError(f"no such file: {path} (remote segment {self.stem} has "
                                   f"{', '.join(self.list_dir(self.directory))})")
        return suffix

    # -- metadata ----------------------------------------------------------------------------
    def exists(self, path: str) -> bool:
        return self.is_file(path) or self.is_dir(path)

    def is_file(self, path: str) -> bool:
        suffix = self._suffix_of(path)
        return suffix is not None and (suffix == LOG_SUFFIX
                                       or self._index_slice(suffix) is not None)

    def is_dir(self, path: str) -> bool:
        return path.rstrip("/") == self.directory

    def list_dir(self, path: str) -> list[str]:
        if not self.is_dir(path):
            return []
        name = self.fs.basename(self.stem)
        return sorted(name + s for s in (LOG_SUFFIX, *_INDEX_OF_SUFFIX)
                      if self.is_file(self.stem + s))

    def size(self, path: str) -> int:
        suffix = self._known(path)
        if suffix == LOG_SUFFIX:
            self._object_size(self.log_object, self.manifest.chunk_index.transformed_size)
            return self.manifest.chunk_index.original_file_size
        return len(self._index_bytes(suffix, None))

    def mtime_ms(self, path: str) -> int:
        self._known(path)
        return self.fs.mtime_ms(self.log_object)

    def with_tree(self, root: str) -> "AivenSegmentFiles":
        return self

    def forget(self, directory: str) -> None:
        """Decoded chunks are bounded already; nothing else is held."""

    def prefetch(self, paths: Iterable[str], head_bytes: int | None = None) -> None:
        """The indexes are small and needed together: read the ones asked for now."""
        for path in paths:
            suffix = self._suffix_of(path)
            if suffix in _INDEX_OF_SUFFIX and self._index_slice(suffix) is not None:
                self._index_bytes(suffix, None)

    # -- the objects -------------------------------------------------------------------------
    def _object_size(self, obj: str, expected: int) -> int:
        """The object's real size, which must be what the manifest says it holds."""
        size = self._object_sizes.get(obj)
        if size is None:
            try:
                size = self.fs.size(obj)
            except FileNotFoundError:
                raise DataLossError(f"remote segment {self.stem} (offsets from "
                                    f"{self.base_offset}): its object {obj} is missing, "
                                    f"though its manifest {self.manifest_path} is there "
                                    f"(deleted, or lost by the store)") from None
            self._object_sizes[obj] = size
        if size != expected:
            raise CorruptDataError(f"the manifest {self.manifest_path} says this object holds "
                                   f"{expected} bytes, but it has {size}: the manifest and "
                                   f"the object are not of one upload, or one was damaged",
                                   obj)
        return size

    def _index_bytes(self, suffix: str, stats: IOStats | None) -> bytes:
        data = self._indexes.get(suffix)
        if data is not None:
            return data
        part = self._index_slice(suffix)
        self._object_size(self.indexes_object, self.manifest.segment_indexes.end)
        stored = self.fs.read_range(self.indexes_object, part.position, part.size,
                                    self._stats(stats)) if part.size else b""
        if len(stored) != part.size:
            raise CorruptDataError(f"the {_INDEX_OF_SUFFIX[suffix]} index at bytes "
                                   f"[{part.position}, {part.end}) was cut short ("
                                   f"{len(stored)} bytes read): the object changed",
                                   self.indexes_object, part.position)
        data = stored
        if self.manifest.encryption is not None and part.size:
            data = decrypt(stored, self.data_key, self.manifest.encryption.aad,
                           path=self.indexes_object, position=part.position,
                           what=f"the {_INDEX_OF_SUFFIX[suffix]} index (bytes "
                                f"[{part.position}, {part.end}))")
        self._indexes[suffix] = data = bytes(data)
        return data

    def _decode_chunk(self, i: int, stored) -> bytes:
        index = self.manifest.chunk_index
        at, end = int(index.transformed[i]), int(index.transformed[i + 1])
        plain = int(index.original[i + 1] - index.original[i])
        what = f"chunk {i} (bytes [{at}, {end}) of the object, [{int(index.original[i])}, " \
               f"{int(index.original[i + 1])}) of the segment)"
        data = stored
        if self.manifest.encryption is not None:
            data = decrypt(data, self.data_key, self.manifest.encryption.aad,
                           path=self.log_object, what=what, position=at)
        if self.manifest.compression:
            try:
                data = bounded_unzstd(data, plain)
            except ValueError as err:
                raise CorruptDataError(f"{what} is not a zstd frame of the chunk's {plain} "
                                       f"bytes ({err})", self.log_object, at) from None
        if len(data) != plain:
            raise CorruptDataError(f"{what} holds {len(data)} bytes once de-transformed, not "
                                   f"{plain}", self.log_object, at)
        return bytes(data)

    def read_log(self, position: int, length: int, stats: IOStats | None = None,
                 backing=None) -> bytes:
        """Bytes [position, position + length) of the plain segment (fewer at its end)."""
        index = self.manifest.chunk_index
        end = min(position + max(length, 0), index.original_file_size)
        if position < 0:
            raise ValueError(f"negative position {position}")
        if position >= end:
            return b""
        self._object_size(self.log_object, index.transformed_size)
        own = backing is None
        backing = backing or self.fs.open_read(self.log_object, self._stats(stats))
        try:
            if self._identity:   # the object is the segment, byte for byte
                return self._read_exact(backing, position, end - position)
            return self._read_chunks(backing, position, end)
        finally:
            if own:
                backing.close()

    def _read_exact(self, backing, at: int, length: int) -> bytes:
        data = backing.read_at(at, length)
        if len(data) != length:
            raise CorruptDataError(f"bytes [{at}, {at + length}) read {len(data)}: the object "
                                   f"is shorter than when it was sized (replaced?)",
                                   self.log_object, at)
        return data

    def _read_chunks(self, backing, start: int, end: int) -> bytes:
        index = self.manifest.chunk_index
        wanted = index.chunks_covering(start, end)
        got: dict[int, bytes] = {}
        with self._lock:
            for i in wanted:
                if i in self._chunks:
                    self._chunks.move_to_end(i)
                    got[i] = self._chunks[i]
        missing = [i for i in wanted if i not in got]
        runs: list[list[int]] = []
        for i in missing:   # consecutive chunks not cached: one ranged read each run
            if runs and runs[-1][-1] == i - 1:
                runs[-1].append(i)
            else:
                runs.append([i])
        for run in runs:
            at = int(index.transformed[run[0]])
            stored = memoryview(self._read_exact(backing, at,
                                                 int(index.transformed[run[-1] + 1]) - at))
            for i in run:
                got[i] = self._decode_chunk(i, stored[int(index.transformed[i]) - at:
                                                      int(index.transformed[i + 1]) - at])
        self._remember(got, missing)
        first = int(index.original[wanted[0]])
        joined = b"".join(got[i] for i in wanted)
        return joined[start - first:end - first]

    def _remember(self, got: dict[int, bytes], new: list[int]) -> None:
        with self._lock:
            for i in new:
                if i not in self._chunks:
                    self._chunks[i] = got[i]
                    self._cached_bytes += len(got[i])
            while self._cached_bytes > self._cache_bytes and len(self._chunks) > 2:
                _, dropped = self._chunks.popitem(last=False)
                self._cached_bytes -= len(dropped)

    # -- reads -------------------------------------------------------------------------------
    def open_read(self, path: str, stats: IOStats | None = None):
        suffix = self._known(path)
        if suffix == LOG_SUFFIX:
            return _SegmentLog(self, path, stats)
        return _Bytes(path, self._index_bytes(suffix, stats))

    def read_all(self, path: str, stats: IOStats | None = None) -> bytes:
        suffix = self._known(path)
        if suffix == LOG_SUFFIX:
            return self.read_log(0, self.manifest.chunk_index.original_file_size, stats)
        return self._index_bytes(suffix, stats)

    def read_range(self, path: str, start: int, length: int,
                   stats: IOStats | None = None) -> bytes:
        suffix = self._known(path)
        if suffix == LOG_SUFFIX:
            return self.read_log(start, length, stats)
        return self._index_bytes(suffix, stats)[start:start + length]

    def map_array(self, path: str, dtype, stats: IOStats | None = None) -> np.ndarray:
        dtype = np.dtype(dtype)
        data = self.read_all(path, stats)
        return np.frombuffer(data, dtype=dtype, count=len(data) // dtype.itemsize)

    # -- writes: refused ---------------------------------------------------------------------
    def ensure_writable(self, path: str) -> None:
        raise ReadOnlyStoreError(f"cannot write to {path}: a remote tier's segment is read "
                                 f"in place, never written")

    def _refuse(self, path: str, *_args, **_kwargs):
        self.ensure_writable(path)

    makedirs = open_append = write_atomic = rename = remove = remove_tree = _refuse
    remove_empty_dir = truncate = fsync_dir = lock = _refuse

    def log_segment(self, stats: IOStats | None = None, **kwargs):
        """A LogSegment over this segment, its files named `<stem><suffix>`."""
        from ..log.log_segment import LogSegment

        return LogSegment(self.directory, self.base_offset, self, files_prefix=self.stem,
                          stats=stats, **kwargs)


class _SegmentLog(ReadHandle):
    """`<stem>.log` opened: positional reads of the plain segment (one backing handle)."""

    def __init__(self, files: AivenSegmentFiles, path: str, stats: IOStats | None):
        self.files, self.path, self._stats = files, path, stats
        self._backing = None

    def size(self) -> int:
        return self.files.size(self.path)

    def read_at(self, position: int, length: int) -> bytes:
        if self._backing is None:
            files = self.files
            files._object_size(files.log_object, files.manifest.chunk_index.transformed_size)
            self._backing = files.fs.open_read(files.log_object, files._stats(self._stats))
        return self.files.read_log(position, length, self._stats, self._backing)

    def close(self) -> None:
        if self._backing is not None:
            self._backing.close()
            self._backing = None


class _Bytes(ReadHandle):
    """A decoded index opened for reading."""

    def __init__(self, path: str, data: bytes):
        self.path, self._data = path, data

    def size(self) -> int:
        return len(self._data)

    def read_at(self, position: int, length: int) -> bytes:
        return self._data[position:position + max(length, 0)]


@dataclass(frozen=True)
class AivenSegmentRef:
    """What an executor needs to rebuild a segment's AivenSegmentFiles: the storage root (path
    or URI), the keys under it, the manifest, and the unwrapped data key or the private-key
    option value (for encrypted segments). The data key is never shown in a repr."""

    root: str
    key: str                       # <prefix><main>: the manifest is key + .rsm-manifest
    manifest: bytes = field(repr=False)
    log_key: str | None = None
    indexes_key: str | None = None
    data_key: bytes | None = field(default=None, repr=False)
    private_key: str | None = None

    def files(self, store_config=None, stats: IOStats | None = None) -> AivenSegmentFiles:
        fs, root = filesystem_for(self.root, store_config)
        return AivenSegmentFiles(
            fs, fs.join(root, self.key), manifest=self.manifest,
            log_object=fs.join(root, self.log_key) if self.log_key else None,
            indexes_object=fs.join(root, self.indexes_key) if self.indexes_key else None,
            data_key=self.data_key, private_key=self.private_key, store_config=store_config,
            stats=stats)


# -- listing ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AivenSegmentListing:
    """One segment whose manifest is in storage. `key` (relative to the root) is
    `<prefix><topic>-<topic id>/<partition>/<offset>-<segment id>`; `log_key` and
    `indexes_key` are where its other objects are (moved when custom metadata says so)."""

    topic: str
    topic_id: str
    partition: int
    start_offset: int
    segment_id: str
    root: str
    key: str
    log_key: str
    indexes_key: str

    @property
    def manifest_key(self) -> str:
        return self.key + MANIFEST_SUFFIX

    def ref(self, fs, *, private_key: str | None = None,
            store_config=None) -> AivenSegmentRef:
        """The segment's ref, its manifest read now (counted in `fs.stats`)."""
        manifest = fs.read_all(fs.join(self.root, self.manifest_key))
        return AivenSegmentRef(self.root, self.key, manifest, self.log_key, self.indexes_key,
                               None, private_key)


def list_aiven_segments(fs, root: str, topic: str | None = None, *, key_prefix: str = "",
                        custom_metadata: Mapping[str, bytes] | None = None
                        ) -> list[AivenSegmentListing]:
    """Every segment with a manifest under `root` + `key_prefix` (the plugin's `key.prefix`,
    which it concatenates without a separator), of `topic` or of all topics, by topic,
    partition, start offset and segment id. `custom_metadata` maps segment ids to the bytes of
    their RemoteLogSegmentMetadata.customMetadata. Names that fit no key are passed over; a
    listing cannot tell a finished upload from one the broker never recorded."""
    root = root.rstrip("/")
    fs = fs.with_tree(root)
    head, _, name_prefix = key_prefix.rpartition("/")
    base = fs.join(root, head) if head else root
    found = []
    if not fs.is_dir(base):
        return found
    for name in fs.list_dir(base):
        parsed = split_topic_dir(name[len(name_prefix):]) if name.startswith(name_prefix) \
            else None
        if parsed is None or (topic is not None and parsed[0] != topic):
            continue
        topic_dir = fs.join(base, name)
        for part in fs.list_dir(topic_dir):
            if not (part.isascii() and part.isdigit()):
                continue
            for file in fs.list_dir(fs.join(topic_dir, part)):
                if not file.endswith(MANIFEST_SUFFIX):
                    continue
                stem = split_segment_stem(file[:-len(MANIFEST_SUFFIX)])
                if stem is None:
                    continue
                main = f"{parsed[0]}-{parsed[1]}/{part}/{file[:-len(MANIFEST_SUFFIX)]}"
                log_key, indexes_key = object_keys(
                    key_prefix, main, (custom_metadata or {}).get(stem[1]))
                found.append(AivenSegmentListing(parsed[0], parsed[1], int(part), stem[0],
                                                 stem[1], root, key_prefix + main, log_key,
                                                 indexes_key))
    return sorted(found, key=lambda s: (s.topic, s.partition, s.start_offset, s.segment_id))
