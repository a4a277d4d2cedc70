"""Object stores and HDFS behind the same small FileSystem interface as local files.

`pyarrow.fs` does the talking (S3 and S3-compatible servers, Google Cloud Storage, Azure Data
Lake / Blob, HDFS). This module adds what a log reader needs on top of it:

- paths stay URIs (`s3://bucket/logs/orders-0/00000000000000000000.log`) everywhere above this
  layer, so errors and plans name the object a user can find;
- every request is retried with exponential backoff when the failure may pass (throttling, 5xx,
  a dropped connection), then fails with an error naming the object and byte range;
- a planner lists a whole log tree at once (`with_tree`: a listing per directory, in parallel)
  and answers every later "exists / is it a directory / how big" from it, instead of one
  request per question;
- small files (indexes, checkpoints) are read in parallel (`prefetch`);
- writing is refused before anything is written: objects cannot be appended to, truncated or
  renamed atomically, which the writer's exactly-once commit relies on (README, "Object stores").

Credentials and endpoints come from `StoreConfig` (store_config.py: the `fs.*` options) or the
store's standard environment variables and config files.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
import logging
import posixpath
import random
import threading
import time
from typing import Callable, Iterable, TypeVar
from urllib.parse import urlsplit

import numpy as np
import pyarrow.fs as pafs

from ...errors import (BadOptionError, LogNotFoundError, ReadOnlyStoreError, StorageAccessError,
                       StorageRequestError)
from .stats import IOStats
from .store_config import (DEFAULT_CONFIG, STORE_OF_SCHEME, StoreConfig, arrow_filesystem,
                           native_path)

log = logging.getLogger("segmentlog")

T = TypeVar("T")


# -- errors -------------------------------------------------------------------------------------

_FOREVER = ("ACCESS_DENIED", "AccessDenied", "INVALID_ACCESS_KEY", "InvalidAccessKeyId",
            "SIGNATURE_DOES_NOT_MATCH", "SignatureDoesNotMatch", "Forbidden", "HTTP status 403",
            "PermissionDenied", "AuthorizationFailure")
_MISSING = ("NO_SUCH_BUCKET", "NoSuchBucket", "NO_SUCH_KEY", "NoSuchKey", "Path does not exist",
            "HTTP status 404", "does not exist")


def _kind(exc: BaseException) -> str:
    """'denied', 'missing' or 'transient' (worth retrying)."""
    if isinstance(exc, PermissionError):
        return "denied"
    if isinstance(exc, FileNotFoundError):
        return "missing"
    text = str(exc)
    if any(s in text for s in _FOREVER):
        return "denied"
    if any(s in text for s in _MISSING):
        return "missing"
    return "transient"


# -- the file system ---------------------------------------------------------------------------

@dataclass
class _Tree:
    """One recursive listing: every file's size, and each directory's children."""

    root: str
    sizes: dict[str, int] = field(default_factory=dict)
    children: dict[str, set[str]] = field(default_factory=dict)
    ranges: dict[str, list[tuple[int, bytes]]] = field(default_factory=dict)  # bytes read
    handles: dict[str, object] = field(default_factory=dict)   # objects opened (one HEAD each)

    def covers(self, path: str) -> bool:
        return path == self.root or path.startswith(self.root + "/")

    def has_read(self, path: str, length: int | None = None) -> bool:
        """Whether the whole file (or its first `length` bytes) is in `ranges` already."""
        wanted = self.sizes[path] if length is None else min(length, self.sizes[path])
        return any(start == 0 and len(data) >= wanted for start, data in self.ranges.get(path, ()))


class ObjectStoreFileSystem:
    """A store reached through pyarrow.fs, addressed by URIs. Read-only (see module doc)."""

    immutable_objects = True   # an object never grows: a changed size means it was replaced
    # Every read is a request: `prefetch_range` reads a range of a listed file in one request
    # and this view keeps it, so a planner reads a small segment whole at once rather than
    # header by header (log_segment.py, segment_order.py).
    warms_ranges = True

    def __init__(self, store: str, arrow_fs: pafs.FileSystem, config: StoreConfig,
                 tree: _Tree | None = None):
        self.store, self.arrow_fs, self.config = store, arrow_fs, config
        self.stats = IOStats()
        self._tree = tree

    @property
    def read_ahead_bytes(self) -> int:
        return self.config.read_ahead_bytes

    @property
    def parallelism(self) -> int:
        """How many requests this store is sent at once (the `fs.parallelism` option)."""
        return self.config.parallelism

    def __repr__(self) -> str:
        return f"ObjectStoreFileSystem({self.store}, {self.config!r})"

    # -- requests ------------------------------------------------------------------------------
    def request(self, what: str, uri: str, call: Callable[[], T], byte_range=None) -> T:
        """Run one store request, retrying transient failures with exponential backoff."""
        where = uri if byte_range is None else f"{uri} bytes [{byte_range[0]}, {byte_range[1]})"
        attempt = 0
        while True:
            try:
                return call()
            except OSError as exc:
                kind = _kind(exc)
                if kind == "missing":
                    raise LogNotFoundError(f"{what}: no such object or bucket: {where}") from None
                if kind == "denied":
                    raise StorageAccessError(
                        f"{what}: access denied to {where} ({_first_line(exc)}); check the "
                        f"credentials (fs.{self.store}.* options or the store's standard "
                        f"environment variables and config files)") from None
                if attempt >= self.config.retries:
                    raise StorageRequestError(
                        f"{what}: {where} failed after {attempt + 1} attempts: "
                        f"{_first_line(exc)}") from None
                pause = self.config.retry_backoff_ms / 1000 * 2 ** attempt
                log.info("segmentlog: %s of %s failed (%s); retry %d in %.2fs", what, where,
                         _first_line(exc), attempt + 1, pause)
                time.sleep(pause * (0.5 + random.random()))
                attempt += 1

    # -- names ---------------------------------------------------------------------------------
    @staticmethod
    def join(*parts: str) -> str:
        return posixpath.join(*parts)

    @staticmethod
    def basename(path: str) -> str:
        return posixpath.basename(path.rstrip("/"))

    @staticmethod
    def dirname(path: str) -> str:
        return posixpath.dirname(path.rstrip("/"))

    # -- listing -------------------------------------------------------------------------------
    def with_tree(self, root: str) -> "ObjectStoreFileSystem":
        """A view of this store that lists everything under `root` now (_list_tree) and
        answers metadata questions under `root` from it (a planner's snapshot of the log)."""
        root = root.rstrip("/")
        infos, listings = self._list_tree(root)
        tree = _Tree(root)
        base = native_path(root)
        for info in infos:
            if info.type != pafs.FileType.File:
                continue
            uri = root + info.path[len(base):]
            tree.sizes[uri] = info.size
            child, parent = uri, posixpath.dirname(uri)
            while tree.covers(parent) and child != parent:
                tree.children.setdefault(parent, set()).add(posixpath.basename(child))
                child, parent = parent, posixpath.dirname(parent)
        view = ObjectStoreFileSystem(self.store, self.arrow_fs, self.config, tree)
        for _ in range(listings):   # (one request per 1000 keys; each listing counted as one)
            view.stats.add(0)
        return view

    def _list_tree(self, root: str) -> tuple[list[pafs.FileInfo], int]:
        """Every file and directory under `root`, and how many listings that took: `root`'s
        own entries, then each directory below it listed whole, `parallelism` at once. (One
        listing of the whole tree pages through it 1000 keys a request, one after the other:
        1.5-2 s of a 20-partition data directory on moto, before any partition is planned.)"""
        def listing(path: str, recursive: bool) -> list[pafs.FileInfo]:
            return self.request("listing", path, lambda: self.arrow_fs.get_file_info(
                pafs.FileSelector(native_path(path), recursive=recursive,
                                  allow_not_found=True)))

        top = listing(root, False)
        base = native_path(root)
        below = [root + i.path[len(base):] for i in top if i.type == pafs.FileType.Directory]
        if not below:
            return top, 1
        with ThreadPoolExecutor(max_workers=min(self.parallelism, len(below))) as pool:
            found = list(pool.map(lambda path: listing(path, True), below))
        return top + [i for infos in found for i in infos], 1 + len(below)

    @property
    def listed(self) -> bool:
        """Whether this view's listing was answered (with_tree): the store is there and takes
        these credentials, so requests in parallel will not all be refused alike."""
        return self._tree is not None

    def _info(self, path: str) -> pafs.FileInfo:
        info = self.request("metadata", path,
                            lambda: self.arrow_fs.get_file_info(native_path(path)))
        self.stats.add(0)
        return info

    def exists(self, path: str) -> bool:
        return self.is_file(path) or self.is_dir(path)

    def _listed(self, path: str) -> bool:
        """Whether the listing snapshot answers for `path` (no request needed)."""
        return self._tree is not None and self._tree.covers(path)

    def is_dir(self, path: str) -> bool:
        path = path.rstrip("/")
        if self._listed(path):
            return path in self._tree.children
        return self._info(path).type == pafs.FileType.Directory

    def is_file(self, path: str) -> bool:
        if self._listed(path):
            return path in self._tree.sizes
        return self._info(path).type == pafs.FileType.File

    def list_dir(self, path: str) -> list[str]:
        path = path.rstrip("/")
        if self._listed(path):
            return sorted(self._tree.children.get(path, ()))
        infos = self.request("listing", path, lambda: self.arrow_fs.get_file_info(
            pafs.FileSelector(native_path(path), allow_not_found=True)))
        self.stats.add(0)
        return sorted(posixpath.basename(i.path) for i in infos)

    def size(self, path: str) -> int:
        if self._tree is not None and path in self._tree.sizes:
            return self._tree.sizes[path]
        info = self._info(path)
        if info.type != pafs.FileType.File:
            raise LogNotFoundError.of_file(f"no such object: {path}", path)
        return info.size

    def mtime_ms(self, path: str) -> int:
        info = self._info(path)
        return int(info.mtime.timestamp() * 1000) if info.mtime else 0

    # -- reads ---------------------------------------------------------------------------------
    def open_read(self, path: str, stats: IOStats | None = None) -> "ObjectFile":
        if self._tree is not None and path in self._tree.sizes:
            # A planner reads indexes it prefetched and hops headers near the same index entries
            # more than once (a range's start and end, the log end): within one listing
            # snapshot, bytes are read once.
            return ObjectFile(self, path, stats, self._tree.sizes[path],
                              self._tree.ranges.setdefault(path, []), self._tree.handles)
        return ObjectFile(self, path, stats)

    def read_all(self, path: str, stats: IOStats | None = None) -> bytes:
        with self.open_read(path, stats) as f:   # free if `prefetch` read it
            return f.read_at(0, f.size())

    def read_range(self, path: str, start: int, length: int,
                   stats: IOStats | None = None) -> bytes:
        with self.open_read(path, stats) as f:
            return f.read_at(start, length)

    def map_array(self, path: str, dtype, stats: IOStats | None = None) -> np.ndarray:
        """The object as a numpy array of whole `dtype` items (read in full: it is an index)."""
        dtype = np.dtype(dtype)
        data = self.read_all(path, stats)
        count = len(data) // dtype.itemsize
        return np.frombuffer(data, dtype=dtype, count=count)

    def prefetch(self, paths: Iterable[str], head_bytes: int | None = None) -> None:
        """Read small files of the listed tree in parallel, so later `read_all` / `map_array`
        calls on them cost no request (an index per touched segment, say); with `head_bytes`,
        only the first so many bytes of each (a segment's first batch header)."""
        if self._tree is None:
            return
        wanted = [p for p in dict.fromkeys(paths)
                  if p in self._tree.sizes and not self._tree.has_read(p, head_bytes)]
        if not wanted:
            return

        def fetch(path: str) -> IOStats:   # the file lands in the snapshot's byte cache
            stats = IOStats()               # one per thread, merged below
            with self.open_read(path, stats) as f:
                f.read_at(0, f.size() if head_bytes is None else head_bytes)
            return stats

        with ThreadPoolExecutor(max_workers=min(self.parallelism, len(wanted))) as pool:
            for stats in pool.map(fetch, wanted):
                self.stats.merge(stats)

    def prefetch_range(self, path: str, start: int, end: int,
                       stats: IOStats | None = None) -> None:
        """Read [start, end) of a listed file in one request, so that the small reads that
        follow within it (a hop over batch headers) cost none."""
        if self._tree is not None and path in self._tree.sizes and end > start:
            with self.open_read(path, stats) as f:
                f.read_at(start, end - start)

    def forget(self, directory: str) -> None:
        """Drop the bytes read and the objects opened under `directory` (a partition a planner
        is done with): a view keeps what it read for as long as it is asked about those files,
        and a tree of tens of thousands of segments must not keep every index it read. What
        is read again later costs a request again; the listing stays."""
        if self._tree is None:
            return
        prefix = directory.rstrip("/") + "/"
        # (list() snapshots a dict that the threads planning other partitions may grow)
        for path in [p for p in list(self._tree.ranges) if p.startswith(prefix)]:
            self._tree.ranges.pop(path, None)
        for path in [p for p in list(self._tree.handles) if p.startswith(prefix)]:
            handle = self._tree.handles.pop(path, None)
            if handle is not None:
                handle.close()

    # -- writes: refused -------------------------------------------------------------------------
    def ensure_writable(self, path: str) -> None:
        """Refuse, before anything is written: every writer calls this first."""
        raise ReadOnlyStoreError(
            f"cannot write to {path}: segmentlog writes only to local or mounted file systems. "
            f"Its exactly-once commit appends to segments, truncates torn tails and renames "
            f"files atomically, which {self.store}:// objects cannot do. Write to a local (or "
            f"NFS/FUSE-mounted) directory and copy the closed segments to the store afterwards")

    def _refuse(self, path: str, *_args, **_kwargs):
        self.ensure_writable(path)

    makedirs = open_append = write_atomic = rename = remove = remove_tree = _refuse
    remove_empty_dir = truncate = fsync_dir = lock = _refuse


class ObjectFile:
    """An object opened for ranged reads.

    pyarrow opens an object with a HEAD request, which is how a reader learns its size now. A
    planner's view already knows the size from its listing and passes `size` and a `cache` of
    ranges it read, so the object is opened only when a read is not in the cache.
    """

    def __init__(self, fs: ObjectStoreFileSystem, path: str, stats: IOStats | None,
                 size: int | None = None, cache: list[tuple[int, bytes]] | None = None,
                 handles: dict | None = None):
        self.fs, self.path, self._stats = fs, path, stats
        self._size, self._cache, self._handles = size, cache, handles
        self._file = None if handles is None else handles.get(path)
        if size is None:
            self._open()

    def _open(self):
        if self._file is None:
            self._file = self.fs.request("open", self.path, lambda: self.fs.arrow_fs
                                         .open_input_file(native_path(self.path)))
            self._count(0)
            if self._handles is not None:   # shared by the planner view; closed with it
                self._handles[self.path] = self._file
        return self._file

    def _count(self, nbytes: int) -> None:
        # Counted once: by the caller's IOStats if it passed one, else by the file system's.
        (self._stats if self._stats is not None else self.fs.stats).add(nbytes)

    def size(self) -> int:
        return self._size if self._size is not None else self._open().size()

    def _cached_prefix(self, position: int, length: int) -> bytes:
        """The longest cached run of bytes starting at `position` (at most `length`)."""
        best = b""
        for start, data in self._cache or ():
            if start <= position < start + len(data):
                run = data[position - start:position - start + length]
                best = run if len(run) > len(best) else best
        return best

    def read_at(self, position: int, length: int) -> bytes:
        length = max(0, min(length, self.size() - position))
        known = self._cached_prefix(position, length)
        if len(known) == length:
            return known
        at, want = position + len(known), length - len(known)
        f = self._open()
        data = self.fs.request("read", self.path, lambda: f.read_at(want, at), (at, at + want))
        self._count(len(data))
        if self._cache is not None:
            self._cache.append((at, data))
        return known + data

    def read_into(self, position: int, buffer) -> int:
        view = memoryview(buffer).cast("B")
        if self._cache is not None:
            data = self.read_at(position, len(view))
            view[:len(data)] = data
            return len(data)
        f = self._open()

        def read() -> int:
            f.seek(position)
            return f.readinto(view)

        done = self.fs.request("read", self.path, read, (position, position + len(view)))
        self._count(done)
        return done

    def close(self) -> None:
        if self._file is not None and self._handles is None:
            self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


# -- one file system per store and configuration, per process ----------------------------------

_instances: dict[tuple, ObjectStoreFileSystem] = {}
_instances_lock = threading.Lock()


def object_store_for(uri: str, config: StoreConfig = DEFAULT_CONFIG) -> ObjectStoreFileSystem:
    parts = urlsplit(uri)
    store = STORE_OF_SCHEME.get(parts.scheme.lower())
    if store is None:
        known = ", ".join(s + "://" for s in STORE_OF_SCHEME)
        raise BadOptionError("path", uri, f"unknown scheme {parts.scheme!r}: segmentlog reads "
                             f"local paths, file://, {known}")
    if not parts.netloc and store != "hdfs":
        raise BadOptionError("path", uri, f"no bucket or container in the URI (expected "
                             f"{parts.scheme}://bucket/prefix)")
    # S3 and GCS reach every bucket with one client; Azure and HDFS need one per account/host.
    scope = parts.netloc if store in ("abfs", "hdfs") else ""
    key = (store, scope, config)
    with _instances_lock:
        fs = _instances.get(key)
        if fs is None:
            arrow_fs = arrow_filesystem(store, config, parts.netloc)
            fs = _instances[key] = ObjectStoreFileSystem(store, arrow_fs, config)
    return fs
