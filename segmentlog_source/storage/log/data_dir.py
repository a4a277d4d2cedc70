"""A data directory as a writer sees it: may we write here, and which topics does it hold?

A writer's path is a Kafka data directory (`log.dirs` entry): `<topic>-<partition>` directories
plus the broker's own small files. A missing or empty directory becomes one. Anything else (a
file, a partition directory itself, a directory of unrelated files) is refused before a task
runs, so a mistyped path cannot scatter segments into someone's home directory.
"""

from __future__ import annotations

import os

from ...errors import LogNotFoundError
from ..io.local import LOCAL
from ..log_files import CLEAN_SHUTDOWN_MARKER, PARTITION_METADATA, STATE_DIR, kind_of
from .checkpoints import read_partition_metadata
from .kraft_snapshot import SNAPSHOT_NAME
from .log_directory import (METADATA_TOPIC, REMOTE_INDEX_CACHE, find_partitions,
                            parse_partition_dir_name)

# Files a broker keeps in a data directory (meta.properties, .lock, the offset checkpoints).
_BROKER_FILES = ("meta.properties", ".lock", CLEAN_SHUTDOWN_MARKER)
_SKIPPED_DIR_MARKERS = ("-delete", "-future", "-stray")


def check_writable(log_dir: str, fs=LOCAL) -> None:
    """Raise LogNotFoundError unless `log_dir` is missing, empty, or a Kafka data directory."""
    if not fs.exists(log_dir):
        return
    if not fs.is_dir(log_dir):
        raise LogNotFoundError(f"cannot write a Kafka log to {log_dir}: it is a file, not a "
                               "data directory")
    names = fs.list_dir(log_dir)
    if _named_metadata(fs, log_dir) or any(SNAPSHOT_NAME.match(n) for n in names):
        raise LogNotFoundError(f"cannot write a Kafka log to {log_dir}: it is KRaft's metadata "
                               "log directory, which only Kafka's controllers write")
    if any(kind_of(n) is not None for n in names):
        raise LogNotFoundError(f"{log_dir} is a partition directory (it holds segment files); "
                               f"write to the data directory that contains it")
    foreign = [n for n in names if not _belongs_to_data_dir(fs, log_dir, n)]
    if foreign:
        shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
        raise LogNotFoundError(f"{log_dir} is not a Kafka data directory: it holds {shown} "
                               "(expected only <topic>-<partition> directories and broker files)")


def _named_metadata(fs, log_dir: str) -> bool:
    """Whether `log_dir` is named as KRaft's metadata partition (a local one by the directory
    it resolves to: `.` inside it, a link to it)."""
    name = fs.basename(log_dir if "://" in log_dir else os.path.realpath(log_dir))
    return name.startswith(METADATA_TOPIC + "-")


def _belongs_to_data_dir(fs, log_dir: str, name: str) -> bool:
    path = fs.join(log_dir, name)
    if fs.is_dir(path):
        return (name in (STATE_DIR, REMOTE_INDEX_CACHE) or name.startswith(METADATA_TOPIC)
                or parse_partition_dir_name(name) is not None
                or any(m in name for m in _SKIPPED_DIR_MARKERS))
    # (a checkpoint's `.tmp` is what a writer killed while replacing it leaves, as a broker's)
    return (name in _BROKER_FILES
            or name.endswith(("-checkpoint", ".checkpoint", "-checkpoint.tmp", ".checkpoint.tmp"))
            or name.startswith("."))


def topic_partition_counts(log_dir: str, fs=LOCAL) -> dict[str, int]:
    """{topic: partition count} of the topics in a data directory.

    The count is the highest partition number + 1: a broker's data directory may hold only some
    partitions of a topic (the others live on other brokers), and every existing partition
    must stay in range for the default partitioner.
    """
    if not fs.is_dir(log_dir):
        return {}
    try:
        found = find_partitions(log_dir, fs)
    except LogNotFoundError:
        return {}
    counts: dict[str, int] = {}
    for part in found:
        if part.path == log_dir:  # check_writable refuses this; never count it as a topic
            continue
        counts[part.topic] = max(counts.get(part.topic, 0), part.partition + 1)
    return counts


def partition_dir(log_dir: str, topic: str, partition: int, fs=LOCAL) -> str:
    return fs.join(log_dir, f"{topic}-{partition}")


def topic_id_of(log_dir: str, topic: str, fs=LOCAL) -> str | None:
    """The topic id in the first `partition.metadata` of the topic's partitions, or None."""
    if not fs.is_dir(log_dir):
        return None
    for name in fs.list_dir(log_dir):
        parsed = parse_partition_dir_name(name)
        if parsed is not None and parsed[0] == topic:
            found = read_partition_metadata(fs.join(log_dir, name, PARTITION_METADATA), fs)
            if found is not None:
                return found
    return None
