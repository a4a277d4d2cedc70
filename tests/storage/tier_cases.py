"""Remote tiers and brokers' data directories for the tiered storage tests
(test_tiered_damage.py, test_tiered_attacks.py): partitions generated with 300-offset segments
(and another leader's longer ones), their closed segments copied to a tier in Kafka's
LocalTieredStorage layout (tiered_layouts.py) with leader epochs stamped, a data directory
after local retention, and the `__remote_log_metadata` a broker would have written for the
copies (remote_metadata_log.py)."""

from __future__ import annotations

import random
import shutil
import struct
from dataclasses import dataclass, field
from pathlib import Path

from segmentlog_source.cli.generate import generate_log
from tests.storage.remote_metadata_log import (COPY_SEGMENT_FINISHED, COPY_SEGMENT_STARTED,
                                               copy_events, log_batches, write_metadata)
from tests.storage.tiered_layouts import copy_to_tier, kafka_uuid, topic_id_of

RECORDS = 1250                 # offsets 0..1249; closed segments 0, 300, 600, 900; active 1200
PER_BATCH = 50
SEGMENT_300, SEGMENT_350, SEGMENT_750 = 40_000, 45_000, 100_000   # segment_bytes: 6, 7, 15 batches
FILESET = (".log", ".index", ".timeindex", ".leader_epoch_checkpoint", ".snapshot")

def generate_partition(path: Path, seed: int, segment_bytes: int, records: int = RECORDS) -> Path:
    generate_log(str(path), quiet=True, topics=["t"], partitions=1, records=records,
                 value_size=100, segment_bytes=segment_bytes, records_per_batch=PER_BATCH,
                 seed=seed)
    return path / "t-0"


# -- building a tier, a broker's data directory, their metadata ------------------------------
@dataclass
class Copy:
    base: int
    segment_id: str
    prefix: Path

    def file(self, suffix: str = ".log") -> Path:
        return Path(str(self.prefix) + suffix)


@dataclass
class Tier:
    root: Path
    topic_id: str
    copies: list[Copy] = field(default_factory=list)

    def add(self, source: Path, *, seed: int, segments: int | None = None, skip: int = 0,
            epochs=((0, 0),), topic_id: str | None = None) -> list[Copy]:
        """Copy `source`'s closed segments (from the skip-th, `segments` of them) under the
        tier's topic id (or `topic_id`), their batches and checkpoint in `epochs`."""
        made = [Copy(*c) for c in copy_to_tier(source, self.root, seed=seed,
                                               topic_id=topic_id or self.topic_id)]
        for dropped in made[:skip] + (made[skip + segments:] if segments is not None else []):
            for suffix in FILESET + (".txnindex",):
                dropped.file(suffix).unlink(missing_ok=True)
        made = made[skip:] if segments is None else made[skip:skip + segments]
        for copy in made:
            set_epochs(copy.file(), epochs)
            own = [(e, max(s, copy.base)) for e, s in epochs
                   if s <= log_batches(copy.file())[-1][2]]
            copy.file(".leader_epoch_checkpoint").write_text(
                f"0\n{len(own)}\n" + "".join(f"{e} {s}\n" for e, s in own))
        self.copies += made
        return made

    def duplicate(self, copy: Copy, source: Path | None = None, seed: int = 99) -> Copy:
        """Another copy of `copy`'s segment: its files byte for byte, or `source`'s segment at
        the same base offset (other records), under a new segment id."""
        new_id = kafka_uuid(random.Random(seed))
        twin = Copy(copy.base, new_id, copy.prefix.with_name(f"{copy.base:020d}-{new_id}"))
        for suffix in FILESET:
            origin = copy.file(suffix)
            if source is not None and suffix in (".log", ".index", ".timeindex"):
                origin = source / f"{copy.base:020d}{suffix}"
            shutil.copyfile(origin, twin.file(suffix))
        return twin


def set_epochs(log: Path, epochs) -> None:
    """Give each batch of `log` the partitionLeaderEpoch of `epochs` at its base offset (the
    field the CRC does not cover, as a leader stamps it)."""
    data = bytearray(log.read_bytes())
    for position, base, _, _ in log_batches(log):
        epoch = [e for e, s in epochs if s <= base][-1]
        data[position + 12:position + 16] = struct.pack(">i", epoch)
    log.write_bytes(bytes(data))


def events(tier: Tier, copies, *, epochs=((0, 0),), states=None, event_ts: int = 2000,
           topic_id: str | None = None, **kw) -> list[bytes]:
    out = []
    for i, copy in enumerate(copies):
        out += copy_events(copy.prefix, "t", topic_id or tier.topic_id, 0, epochs=epochs,
                           event_ts=event_ts + 10 * i,
                           states=states or (COPY_SEGMENT_STARTED, COPY_SEGMENT_FINISHED), **kw)
    return out


def broker(source: Path, data: Path, *, keep_from: int, log_start: int = 0, epochs=None
           ) -> Path:
    """A broker's data directory after local retention: `source`'s partition with the
    segments below `keep_from` deleted, its log start offset `log_start`."""
    partition = data / "t-0"
    shutil.copytree(source, partition)
    for file in partition.iterdir():
        if file.name[:20].isdigit() and int(file.name[:20]) < keep_from:
            file.unlink()
    (data / "log-start-offset-checkpoint").write_text(f"0\n1\nt 0 {log_start}\n")
    if epochs is not None:
        for log in partition.glob("*.log"):
            set_epochs(log, epochs)
        (partition / "leader-epoch-checkpoint").write_text(
            f"0\n{len(epochs)}\n" + "".join(f"{e} {s}\n" for e, s in epochs))
    return data


def plain(logs: Path, tmp_path: Path, *, keep_from: int = 900, metadata: bool = True
          ) -> tuple[Tier, Path]:
    """Partition a's closed segments (0, 300, 600, 900) copied and finished; its data
    directory keeps the segments from `keep_from`, the metadata inside it."""
    tier = Tier(tmp_path / "tier", topic_id_of(logs / "a" / "t-0"))
    tier.add(logs / "a" / "t-0", seed=1)
    data = broker(logs / "a" / "t-0", tmp_path / "data", keep_from=keep_from)
    if metadata:
        write_metadata(data, events(tier, tier.copies))
    return tier, data


def starts_inside(logs, tmp_path, metadata=True):
    """A copy of 0..349 (350-offset segments), then, in the same epoch, copies of 300..599,
    600..899, 900..1199: the second starts inside the first, which is read up to 299."""
    tier = Tier(tmp_path / "tier", topic_id_of(logs / "a" / "t-0"))
    old = tier.add(logs / "b350" / "t-0", seed=2, segments=1)
    new = tier.add(logs / "a" / "t-0", seed=1, skip=1)
    data = broker(logs / "a" / "t-0", tmp_path / "data", keep_from=900)
    if metadata:
        write_metadata(data, events(tier, old) + events(tier, new, event_ts=5000))
    return tier, data, 1199
