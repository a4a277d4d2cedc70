"""Remote tiers for tests, laid out as Kafka's LocalTieredStorage lays them out (the layout the
real-broker test checks: tests/kafka/test_tiered_live.py), made from a generated partition:
each closed segment copied as `<20-digit offset>-<segment id>.<suffix>` under
`kafka-tiered-storage/<topic>-<partition>-<topic id>/`, with the two files a finished copy
also holds (leader-epoch checkpoint, producer snapshot). Written with plain file operations,
not segmentlog's code."""

from __future__ import annotations

import base64
import random
import shutil
import struct
from pathlib import Path

import crc32c

SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex")


def kafka_uuid(rng: random.Random) -> str:
    """A Kafka Uuid as Uuid.toString prints it (URL-safe base64, no padding); never one that
    starts with '-', as Uuid.randomUuid never makes one."""
    while True:
        text = base64.urlsafe_b64encode(rng.randbytes(16)).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def empty_producer_snapshot() -> bytes:
    """A producer-state snapshot with no producer: version 1, CRC-32C of what follows."""
    body = struct.pack(">i", 0)
    return struct.pack(">hI", 1, crc32c.crc32c(body)) + body


def topic_id_of(partition_dir: Path) -> str:
    """The topic id a partition's `partition.metadata` holds."""
    for line in (partition_dir / "partition.metadata").read_text().splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "topic_id":
            return value.strip()
    raise AssertionError(f"{partition_dir}: no topic_id in partition.metadata")


def copy_to_tier(partition_dir: Path, root: Path, *, topic_id: str | None = None,
                 seed: int = 0, segments: int | None = None) -> list[tuple[int, str, Path]]:
    """Copy the closed segments of `partition_dir` (the first `segments` of them) into the
    tier at `root`, under the partition's own topic id unless given another:
    [(base offset, segment id, prefix)]."""
    rng = random.Random(seed)
    topic_id = topic_id or topic_id_of(partition_dir)
    topic, _, partition = partition_dir.name.rpartition("-")
    logs = sorted(partition_dir.glob("*.log"))[:-1]       # the active one stays local
    if segments is not None:
        logs = logs[:segments]
    target = root / "kafka-tiered-storage" / f"{topic}-{partition}-{topic_id}"
    target.mkdir(parents=True, exist_ok=True)
    copied = []
    for log in logs:
        base = int(log.stem)
        segment_id = kafka_uuid(rng)
        prefix = target / f"{base:020d}-{segment_id}"
        for suffix in SEGMENT_SUFFIXES:
            source = log.with_suffix(suffix)
            if source.exists():
                shutil.copyfile(source, str(prefix) + suffix)
        Path(str(prefix) + ".leader_epoch_checkpoint").write_text("0\n1\n0 0\n")
        Path(str(prefix) + ".snapshot").write_bytes(empty_producer_snapshot())
        copied.append((base, segment_id, prefix))
    return copied
