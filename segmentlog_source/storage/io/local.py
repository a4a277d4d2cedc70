"""The local file system behind the I/O seam (filesystem.py says which file system serves a path).

No other module calls `open()` or `os.*` on data files. Reads are positional (`read_at`) so a
scan never depends on a file cursor; every read is counted in an `IOStats` when one is given.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import mmap
import os
import stat
import threading
import time

import numpy as np

from ...errors import CorruptDataError, LogLockedError, LogNotFoundError
from .stats import IOStats


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"))


# Linux's sync_file_range(SYNC_FILE_RANGE_WRITE): start writing a range back to the disk without
# waiting for it. A writer that will fsync calls it after each MiB it writes, so the disk works
# while the writer encodes and copies, and the fsync waits only for the last stretch (64 MB
# written then fsynced here: 0.073 s in the fsync; started as written: 0.006 s). Not a
# durability step: the fsync still decides that. Elsewhere: no such call, nothing started.
_SYNC_FILE_RANGE_WRITE = 2
_PAGE_MASK = mmap.PAGESIZE - 1
_sync_file_range = getattr(ctypes.CDLL(None, use_errno=True), "sync_file_range", None)
if _sync_file_range is not None:
    _sync_file_range.argtypes = (ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint)
    _sync_file_range.restype = ctypes.c_int


def _not_a_file(path: str, mode: int) -> CorruptDataError:
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return CorruptDataError(f"expected a regular file, found {kind}", path)


def _missing(path: str) -> Exception:
    if os.path.islink(path):
        return CorruptDataError(f"a dangling symbolic link (to {os.readlink(path)!r})", path)
    return LogNotFoundError.of_file(f"no such file: {path}", path)


def open_regular(path: str, flags: int) -> int:
    """os.open, for regular files only: a FIFO, socket, device or directory named like a log
    file is an error naming it, never a read that blocks forever (O_NONBLOCK keeps the open of
    a FIFO from waiting for a writer; the fstat then refuses it)."""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK, 0o644)
    except FileNotFoundError:
        raise _missing(path) from None
    except OSError:   # EISDIR, ENXIO (a socket), ...: say what is there instead
        stat_regular(path)
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _not_a_file(path, mode)
    if flags & os.O_NONBLOCK == 0:
        os.set_blocking(fd, True)
    return fd


def stat_regular(path: str) -> os.stat_result:
    """os.stat of a regular file, with open_regular's errors for anything else."""
    try:
        result = os.stat(path)
    except FileNotFoundError:
        raise _missing(path) from None
    if not stat.S_ISREG(result.st_mode):
        raise _not_a_file(path, result.st_mode)
    return result


class _OpenFile:
    """An open file descriptor: closed by `close()`, `with`, or when collected."""

    _fd = -1

    def __init__(self, path: str, flags: int):
        self.path = path
        self._fd = open_regular(path, flags)

    def size(self) -> int:
        return os.fstat(self._fd).st_size

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


class RandomAccessFile(_OpenFile):
    """A file opened for positional reads. Close it (or use `with`)."""

    def __init__(self, path: str, stats: IOStats | None = None):
        super().__init__(path, os.O_RDONLY)
        self._stats = stats

    def read_at(self, position: int, length: int) -> bytes:
        """Up to `length` bytes from `position` (fewer only at the end of the file)."""
        data = os.pread(self._fd, length, position)
        if self._stats is not None:
            self._stats.add(len(data))
        return data

    def read_into(self, position: int, buffer) -> int:
        """Fill the writable `buffer` from `position`; the bytes read (fewer only at the end of
        the file). One request, like read_at, into memory the caller already holds."""
        view = memoryview(buffer).cast("B")
        done = 0
        while done < len(view):
            n = os.preadv(self._fd, [view[done:]], position + done)
            if n == 0:
                break
            done += n
        if self._stats is not None:
            self._stats.add(done)
        return done

    def read_v2_headers(self, position: int, end: int, rows) -> tuple[int, int, int]:
        """The magic-2 batch headers from `position` towards `end`, one read of a header each
        (header_reads.py): (rows filled, where the walk stopped, why)."""
        from .header_reads import V2_HEADER_SIZE, read_v2_headers   # (numba: views only)

        found, stop, why = read_v2_headers(self._fd, position, end, rows)
        if self._stats is not None:
            self._stats.add_reads(found, found * V2_HEADER_SIZE)
        return found, stop, why


class AppendFile(_OpenFile):
    """A file opened for appending and truncating (segments and indexes being written)."""

    def __init__(self, path: str, create: bool = True):
        super().__init__(path, os.O_RDWR | (os.O_CREAT if create else 0))

    def write_at(self, position: int, data) -> None:
        view = memoryview(data)
        while view:
            n = os.pwrite(self._fd, view, position)
            view = view[n:]
            position += n

    def append(self, data) -> int:
        """Write `data` at the current end; return the position it starts at."""
        position = self.size()
        self.write_at(position, data)
        return position

    def truncate(self, size: int) -> None:
        os.ftruncate(self._fd, size)

    def fsync(self) -> None:
        os.fsync(self._fd)

    def start_writeback(self, position: int, length: int) -> None:
        """Have the kernel start writing these bytes to the disk, not waiting (see
        _sync_file_range); the fsync that follows waits for less. Best effort: a failure (a
        file system without it) leaves everything to the fsync. Whole pages only: a page
        under writeback may make the next write into it wait (stable pages), so the partial
        last page is left to the next call or the fsync."""
        start, end = position & ~_PAGE_MASK, (position + length) & ~_PAGE_MASK
        if _sync_file_range is not None and end > start:
            _sync_file_range(self._fd, start, end - start, _SYNC_FILE_RANGE_WRITE)


class FileLock:
    """An exclusive advisory lock on a file, held until `release()`.

    Two kinds of lock are taken, because Linux keeps them apart: `flock` (what other segmentlog
    writers take) and a POSIX record lock (`lockf`: what a Kafka broker's FileChannel.tryLock
    takes on its data directory's `.lock`). Either one held elsewhere is a clear
    LogLockedError instead of waiting or corrupting the log.
    """

    def __init__(self, path: str, what: str):
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        for lock, holder in ((fcntl.flock, "another writer"),
                             (fcntl.lockf, "another process (a running Kafka broker?)")):
            try:
                lock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(self._fd)   # (closing drops the flock too)
                self._fd = -1
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise LogLockedError(
                        f"{what} is locked by {holder} (lock file {path})") from None
                raise

    def release(self) -> None:
        if self._fd >= 0:
            fcntl.lockf(self._fd, fcntl.LOCK_UN)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = -1

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


LOCK_POLL_S = 0.05


def retry_while_locked(open_locked, timeout_ms: int, waited_for: str):
    """Call `open_locked` until it stops raising LogLockedError, for at most `timeout_ms`; the
    final error says how long it waited and `waited_for` what."""
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        try:
            return open_locked()
        except LogLockedError as err:
            if time.monotonic() >= deadline:
                raise LogLockedError(f"{err}; waited {timeout_ms} ms {waited_for}") from None
            time.sleep(LOCK_POLL_S)


class LocalFileSystem:
    """Local files. Paths are plain strings; `join` builds them."""

    scheme = "file"
    immutable_objects = False   # a file may legitimately grow while a writer appends
    read_ahead_bytes = 2 * 1024 * 1024   # bytes per read of a segment scan (measured, bench/)
    # Each read is a system call, not a request: a planner reads what it needs where it needs it
    # (object_store.py's `warms_ranges`), plans partitions one by one (`parallelism`), and has
    # no listing answered beforehand to vouch for the store (`listed`).
    warms_ranges = False
    parallelism = 1
    listed = False

    def __init__(self):
        self.stats = IOStats()
        self._lock = threading.Lock()

    # -- names ---------------------------------------------------------------------------
    @staticmethod
    def join(*parts: str) -> str:
        return os.path.join(*parts)

    @staticmethod
    def basename(path: str) -> str:
        return os.path.basename(os.path.normpath(path))

    @staticmethod
    def dirname(path: str) -> str:
        return os.path.dirname(os.path.normpath(path))

    # -- metadata ------------------------------------------------------------------------
    def exists(self, path: str) -> bool:
        """Whether anything has this name, a dangling symbolic link included (opening it then
        fails with an error naming it, rather than the file being silently taken as absent)."""
        return os.path.lexists(path)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def is_file(self, path: str) -> bool:
        return os.path.isfile(path)

    def list_dir(self, path: str) -> list[str]:
        """Names (not paths) in a directory, sorted."""
        return sorted(os.listdir(path))

    def size(self, path: str) -> int:
        return stat_regular(path).st_size

    def mtime_ms(self, path: str) -> int:
        try:
            return int(os.stat(path).st_mtime * 1000)
        except FileNotFoundError:
            raise _missing(path) from None

    def with_tree(self, root: str) -> "LocalFileSystem":
        """Object stores snapshot a listing here; local metadata is cheap to ask each time."""
        return self

    # -- reads ---------------------------------------------------------------------------
    def prefetch(self, paths, head_bytes: int | None = None) -> None:
        """Object stores read small files in parallel here; local reads need no help."""

    def forget(self, directory: str) -> None:
        """Object stores drop what a planner's view cached under `directory`; nothing here."""

    def open_read(self, path: str, stats: IOStats | None = None) -> RandomAccessFile:
        return RandomAccessFile(path, stats)

    def read_all(self, path: str, stats: IOStats | None = None) -> bytes:
        with RandomAccessFile(path, stats) as f:
            return f.read_at(0, f.size())

    def read_range(self, path: str, start: int, length: int,
                   stats: IOStats | None = None) -> bytes:
        with RandomAccessFile(path, stats) as f:
            return f.read_at(start, length)

    def map_array(self, path: str, dtype: np.dtype, stats: IOStats | None = None) -> np.ndarray:
        """The file as a read-only numpy array of whole `dtype` items (memory-mapped).

        A trailing partial item is left out. Index files are read this way, so a 10 MiB
        preallocated index costs only the pages a lookup touches.
        """
        dtype = np.dtype(dtype)
        size = self.size(path)
        count = size // dtype.itemsize
        if count == 0:
            return np.empty(0, dtype=dtype)
        fd = open_regular(path, os.O_RDONLY)  # the seam itself is the one place that opens files
        try:
            mapped = mmap.mmap(fd, count * dtype.itemsize, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
        if stats is not None:
            stats.add(count * dtype.itemsize)
        return np.frombuffer(mapped, dtype=dtype, count=count)

    # -- writes --------------------------------------------------------------------------
    def ensure_writable(self, path: str) -> None:
        """Object stores refuse writes here, before anything is written; local files take them."""

    def makedirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def open_append(self, path: str, create: bool = True) -> AppendFile:
        return AppendFile(path, create)

    def write_atomic(self, path: str, data: bytes, fsync: bool = True) -> None:
        """Replace `path` with `data` all at once: temp file, fsync, rename (as Kafka does)."""
        tmp = path + ".tmp"
        with AppendFile(tmp) as f:
            f.truncate(0)
            f.write_at(0, data)
            if fsync:
                f.fsync()
        os.replace(tmp, path)
        if fsync:
            self.fsync_dir(os.path.dirname(path) or ".")

    def rename(self, src: str, dst: str) -> None:
        os.replace(src, dst)

    def remove(self, path: str) -> None:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass

    def remove_tree(self, path: str) -> None:
        import shutil

        shutil.rmtree(path, ignore_errors=True)

    def remove_empty_dir(self, path: str) -> bool:
        """Remove `path` if it is an empty directory; True if it is gone. Never removes content,
        so it is safe while another process may be creating files in it."""
        try:
            os.rmdir(path)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return True

    def truncate(self, path: str, size: int) -> None:
        os.truncate(path, size)

    def set_mtime_ms(self, path: str, mtime_ms: int) -> None:
        """The cleaner gives a cleaned segment its source's mtime (retention and legacy delete
        horizons read it)."""
        os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))

    def fsync_dir(self, path: str) -> None:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def lock(self, path: str, what: str) -> FileLock:
        return FileLock(path, what)


LOCAL = LocalFileSystem()
