"""File names inside a data directory and its partition directories (Kafka's `LogFileUtils`).

Segment files are named after their base offset, 20 ASCII digits, zero-padded, plus a suffix
(`00000000000000012345.log`). Marker suffixes (`.deleted`, `.cleaned`, `.swap`) are appended to
the complete name, and the base offset is always the text before the *first* '.'.
"""

from __future__ import annotations

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)

DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
TMP_SUFFIX = ".tmp"

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"
# Our writer's per-partition lock. Brokers ignore files with unknown suffixes in a partition dir.
PARTITION_LOCK = ".segmentlog.lock"
# A cleaning under way (log_cleaner.py): the end offset of the cleaning being swapped in, so
# that readers know the cleaner's reach before the cleaner-offset-checkpoint says it.
CLEANING_INTENT = ".segmentlog.cleaning"
# Our writer's commit state in a data directory (staged files, manifests; storage/commit/):
# log discovery skips it.
STATE_DIR = "_segmentlog"


def file_name(offset: int, suffix: str) -> str:
    """`file_name(12345, ".log")` -> `00000000000000012345.log` (always ASCII digits)."""
    return f"{offset:020d}{suffix}"


def offset_from_file_name(name: str) -> int | None:
    """The base offset a segment-style file name encodes, or None for any other name."""
    head, dot, _ = name.partition(".")
    if not dot or not head.isascii() or not head.isdigit():
        return None
    return int(head)


def kind_of(name: str) -> tuple[int, str] | None:
    """(offset, suffix) for a plain segment-style name (`.log`, `.index`, ..., `.snapshot`).

    Names with a marker suffix (`.deleted`, `.swap`, ...) or anything else give None.
    """
    offset = offset_from_file_name(name)
    if offset is None:
        return None
    suffix = name[name.index("."):]
    if suffix in (LOG_SUFFIX, SNAPSHOT_SUFFIX) or suffix in INDEX_SUFFIXES:
        return offset, suffix
    return None
