"""Remote tiers for tests, laid out as Kafka's LocalTieredStorage lays them out (the layout the
real-broker test checks: tests/kafka/test_tiered_live.py), made from a generated partition:
each closed segment copied as `<20-digit offset>-<segment id>.<suffix>` under
`kafka-tiered-storage/<topic>-<partition>-<topic id>/`, with the two files a finished copy
also holds (leader-epoch checkpoint, producer snapshot). Written with plain file operations,
not segmentlog's code."""

from __future__ import annotations

import base64
import json
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


def copy_to_aiven_tier(partition_dir: Path, root: Path, *, chunk_size: int, seed: int = 0,
                       key_prefix: str = "") -> list[tuple[int, str]]:
    """The closed segments of `partition_dir` as Aiven's plugin uploads them without
    compression or encryption (the layout of tests/fixtures/tiered/aiven/plain, which the
    real plugin wrote): `<prefix><topic>-<topic id>/<partition>/<offset>-<segment id>` with the
    `.log` as it is, `.indexes` (offset, time, producer snapshot, leader epoch, transaction
    indexes back to back) and an `.rsm-manifest` with a fixed chunk index."""
    rng = random.Random(seed)
    topic, _, partition = partition_dir.name.rpartition("-")
    topic_id = topic_id_of(partition_dir)
    logs = sorted(partition_dir.glob("*.log"))
    target = root / f"{key_prefix}{topic}-{topic_id}" / partition
    target.mkdir(parents=True, exist_ok=True)
    copied = []
    for log, following in zip(logs, logs[1:]):
        base, size = int(log.stem), log.stat().st_size
        segment_id = kafka_uuid(rng)
        stem = target / f"{base:020d}-{segment_id}"
        shutil.copyfile(log, str(stem) + ".log")
        parts = {"offset": log.with_suffix(".index").read_bytes(),
                 "timestamp": log.with_suffix(".timeindex").read_bytes(),
                 "producerSnapshot": empty_producer_snapshot(),
                 "leaderEpoch": b"0\n1\n0 0\n"}
        txn = log.with_suffix(".txnindex")
        if txn.exists() and txn.stat().st_size:
            parts["transaction"] = txn.read_bytes()
        indexes, where = b"", {}
        for name, data in parts.items():
            where[name] = {"position": len(indexes), "size": len(data)}
            indexes += data
        where.setdefault("transaction", None)
        Path(str(stem) + ".indexes").write_bytes(indexes)
        chunks = max(1, -(-size // chunk_size))
        manifest = {
            "version": "1",
            "chunkIndex": {"type": "fixed", "originalChunkSize": chunk_size,
                           "originalFileSize": size, "transformedChunkSize": chunk_size,
                           "finalTransformedChunkSize": size - chunk_size * (chunks - 1)},
            "segmentIndexes": where, "compression": False,
            "remoteLogSegmentMetadata": {
                "remoteLogSegmentId": {"topicIdPartition": {
                    "topicId": topic_id,
                    "topicPartition": {"topic": topic, "partition": int(partition)}},
                    "id": segment_id},
                "startOffset": base, "endOffset": int(following.stem) - 1,
                "maxTimestampMs": 0, "brokerId": 1, "eventTimestampMs": 0,
                "segmentLeaderEpochs": {"0": base}, "txnIdxEmpty": "transaction" not in parts}}
        Path(str(stem) + ".rsm-manifest").write_text(json.dumps(manifest,
                                                                separators=(",", ":")))
        copied.append((base, segment_id))
    return copied
