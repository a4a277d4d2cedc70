"""Finding partition directories: `<topic>-<partition>` under data directories (spec §1.1).

A path may be a data directory (its `<topic>-<partition>` subdirectories are the partitions) or
one partition directory. Like the broker's loader we skip directories that are being deleted,
moved or are stray (`-delete`, `-future`, `-stray`), the tiered-storage index cache, the KRaft
metadata log and anything that is not a partition (no such name, or no segment in it).
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

from ...errors import BadOptionError, LogNotFoundError
from ..io.filesystem import filesystem_for
from ..log_files import LOG_SUFFIX, SWAP_SUFFIX, kind_of, offset_from_file_name

SKIPPED_DIR_SUFFIXES = ("-delete", "-future", "-stray")
REMOTE_INDEX_CACHE = "remote-log-index-cache"
METADATA_TOPIC = "__cluster_metadata"


class PartitionDir(NamedTuple):
    path: str
    topic: str
    partition: int
    fs: object = None   # the file system (a planner's listing snapshot, for object stores)


def parse_partition_dir_name(name: str) -> tuple[str, int] | None:
    """(topic, partition) of a live partition directory name, or None.

    Topics may contain '-' and '.', so the partition is what follows the *last* '-'.
    """
    if name.endswith(SKIPPED_DIR_SUFFIXES):
        return None
    topic, dash, partition = name.rpartition("-")
    if not dash or not topic or not (partition.isascii() and partition.isdigit()):
        return None
    return topic, int(partition)


def has_segments(fs, path: str) -> bool:
    for name in fs.list_dir(path):
        kind = kind_of(name)
        if kind is not None and kind[1] == LOG_SUFFIX:
            return True
        if name.endswith(LOG_SUFFIX + SWAP_SUFFIX) and offset_from_file_name(name) is not None:
            return True
    return False


def _as_partition(fs, path: str, metadata_log: bool = False) -> PartitionDir | None:
    name = fs.basename(path)
    parsed = parse_partition_dir_name(name)
    if parsed is None or name == REMOTE_INDEX_CACHE:
        return None
    if parsed[0] == METADATA_TOPIC and not metadata_log:
        return None
    if not fs.is_dir(path) or not has_segments(fs, path):
        return None
    return PartitionDir(path, *parsed, fs)


def find_partitions(paths: str | Iterable[str], fs=None, config=None, *,
                    allow_empty: bool = False, metadata_log: bool = False
                    ) -> list[PartitionDir]:
    """Every partition directory under `paths`, sorted by (topic, partition).

    Each path is served by `fs`, or by the file system its scheme names (configured by
    `config`, a StoreConfig); an object store lists each path once, in one listing.

    KRaft's `__cluster_metadata` partition is never found in a data directory; given itself, it
    is found only with `metadata_log` (reads that decode it: the log manager, writers and index
    rebuilds must never touch Kafka's metadata log).

    Raises LogNotFoundError for a missing path or when no partition is found at all (unless
    `allow_empty`: a stream waits for its topics to appear), and
    BadOptionError when one topic-partition appears twice (two replicas of it, say).
    """
    paths = [paths] if isinstance(paths, str) else list(paths)
    found: dict[tuple[str, int], PartitionDir] = {}
    seen_paths = set()
    for given in paths:
        path_fs, path = (fs, given) if fs is not None else filesystem_for(given, config)
        path_fs = path_fs.with_tree(path)
        if not path_fs.exists(path):
            raise LogNotFoundError(f"no such file or directory: {given}")
        if not path_fs.is_dir(path):
            raise LogNotFoundError(f"not a directory (expected a Kafka data or partition "
                                   f"directory): {given}")
        direct = _as_partition(path_fs, path, metadata_log)
        candidates = [direct] if direct is not None else [
            _as_partition(path_fs, path_fs.join(path, name)) for name in path_fs.list_dir(path)]
        for part in candidates:
            if part is None or part.path in seen_paths:
                continue
            seen_paths.add(part.path)
            key = (part.topic, part.partition)
            if key in found:
                raise BadOptionError("path", given, f"partition {part.topic}-{part.partition} is "
                                     f"in both {found[key].path} and {part.path} (two replicas?)")
            found[key] = part
    if not found and not allow_empty:
        raise LogNotFoundError(f"no Kafka partition directories (<topic>-<partition> holding "
                               f"segment .log files) under {', '.join(map(str, paths))}")
    return sorted(found.values(), key=lambda p: (p.topic, p.partition))
