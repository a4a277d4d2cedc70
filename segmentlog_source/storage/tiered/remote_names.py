"""The names remote tiers give a partition's directory and a segment copy's files, which both
plugins build from Kafka's own: `<topic>-<topic id>` and `<20-digit start offset>-<segment
id>`. The ids are Kafka Uuids as Uuid.toString prints them, 22 characters of URL-safe base64
that may hold '-' and '_' themselves, so names are split by length, from the right.
"""

from __future__ import annotations

import re

# A copy's two files beside the segment's own (.log, indexes: log_files.py)
LEADER_EPOCH_SUFFIX = ".leader_epoch_checkpoint"   # the leader-epoch lineage up to its end

UUID_CHARS = 22   # Kafka's Uuid.toString(): URL-safe base64 without padding
_UUID = re.compile(r"[A-Za-z0-9_-]{22}")


def split_topic_dir(name: str) -> tuple[str, str] | None:
    """`<topic>-<topic id>` -> (topic, topic id): by length, since both may hold '-'."""
    if len(name) < UUID_CHARS + 2 or name[-UUID_CHARS - 1] != "-":
        return None
    topic, topic_id = name[:-UUID_CHARS - 1], name[-UUID_CHARS:]
    return (topic, topic_id) if _UUID.fullmatch(topic_id) else None


def split_segment_stem(stem: str) -> tuple[int, str] | None:
    """`<20-digit start offset>-<segment id>` -> (start offset, segment id)."""
    if len(stem) != 20 + 1 + UUID_CHARS or stem[20] != "-":
        return None
    digits, segment_id = stem[:20], stem[21:]
    if not (digits.isascii() and digits.isdigit() and _UUID.fullmatch(segment_id)):
        return None
    return int(digits), segment_id
