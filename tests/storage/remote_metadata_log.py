"""`__remote_log_metadata` for tests: its four record values encoded from kafka-storage's message
definitions (not with segmentlog's decoder's tables), and `__remote_log_metadata-N` partition
directories written as the broker's RLMM producer writes them: one value-only record (null key)
a batch, idempotent (a producer id, sequences counting up), appended with segmentlog's
PartitionLog so the directory is a broker's, indexes and checkpoints included.

    values = copy_events(copy, "t", topic_id, 0, epochs=[(0, 0)])     # STARTED, FINISHED
    write_metadata(data_dir, values)                                   # partition 0 of 1

`copy_events` describes a copy from its files (start from the name, end offset, size and max
timestamp from the .log's batches, read here with struct, not with segmentlog's reader).
"""

from __future__ import annotations

import base64
import struct
from pathlib import Path

from segmentlog_source.format.record_encoder import encode_batch
from segmentlog_source.format.records import Record
from segmentlog_source.storage.log.partition_log import PartitionLog

COPY_SEGMENT_STARTED, COPY_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED, DELETE_SEGMENT_FINISHED = \
    range(4)
TOPIC = "__remote_log_metadata"
RLMM_PRODUCER_ID = 4242


# -- an encoder of the four messages, written from kafka-storage's message definitions ---------
def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def tags(fields: dict[int, bytes] | None = None) -> bytes:
    fields = fields or {}
    return uvarint(len(fields)) + b"".join(uvarint(t) + uvarint(len(v)) + v
                                           for t, v in sorted(fields.items()))


def compact(data: bytes | None) -> bytes:
    return b"\x00" if data is None else uvarint(len(data) + 1) + data


def uuid(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "==")


def tip(topic: str, topic_id: str, partition: int) -> bytes:
    return compact(topic.encode()) + uuid(topic_id) + struct.pack(">i", partition) + tags()


def frame(api_key: int) -> bytes:
    return uvarint(1) + uvarint(api_key) + uvarint(0)


TID = "AAECAwQFBgcICQoLDA0ODw"     # a made-up topic id for the generated histories


def sid(n: int) -> str:
    return base64.urlsafe_b64encode(bytes([n]) * 16).rstrip(b"=").decode()


def seg(n: int, start: int, end: int, epochs, *, state: int = 0, topic: str = "t",
        topic_id: str = TID, partition: int = 0, size: int = 1000, custom: bytes | None = None,
        txn_empty: bool = True, broker: int = 1, max_ts: int = 1000, event_ts: int = 2000,
        segment_id: str | None = None) -> bytes:
    """A RemoteLogSegmentMetadataRecord (apiKey 0)."""
    segment_id = segment_id or sid(n)
    return (frame(0) + tip(topic, topic_id, partition) + uuid(segment_id) + tags()
            + struct.pack(">qqiqq", start, end, broker, max_ts, event_ts)
            + uvarint(len(epochs) + 1)
            + b"".join(struct.pack(">iq", e, o) + tags() for e, o in epochs)
            + struct.pack(">i", size) + compact(custom) + struct.pack(">b", state)
            + tags({0: b"\x01"} if txn_empty else None))


def upd(n: int, state: int, *, topic: str = "t", topic_id: str = TID, partition: int = 0,
        custom: bytes | None = None, broker: int = 1, event_ts: int = 3000,
        segment_id: str | None = None) -> bytes:
    """A RemoteLogSegmentMetadataUpdateRecord (apiKey 1)."""
    return (frame(1) + tip(topic, topic_id, partition) + uuid(segment_id or sid(n)) + tags()
            + struct.pack(">iq", broker, event_ts) + compact(custom) + struct.pack(">b", state)
            + tags())


def part_delete(state: int, *, topic: str = "t", topic_id: str = TID, partition: int = 0
                ) -> bytes:
    """A RemotePartitionDeleteMetadataRecord (apiKey 2)."""
    return frame(2) + tip(topic, topic_id, partition) + struct.pack(">iqb", 1, 4000, state) \
        + tags()


def snapshot(n: int, start: int, end: int, epochs, *, state: int = 1, size: int = 1000,
             custom: bytes | None = None, txn_empty: bool = False) -> bytes:
    """A RemoteLogSegmentMetadataSnapshotRecord (apiKey 3; the serde reads it, no broker
    writes it to the topic)."""
    return (frame(3) + uuid(sid(n)) + struct.pack(">qqiqq", start, end, 1, 1000, 2000)
            + uvarint(len(epochs) + 1)
            + b"".join(struct.pack(">iq", e, o) + tags() for e, o in epochs)
            + struct.pack(">i", size) + compact(custom) + struct.pack(">b", state)
            + tags({0: b"\x01"} if txn_empty else None))


def finished(n: int, start: int, end: int, epochs, **kw) -> list[bytes]:
    return [seg(n, start, end, epochs, **kw), upd(n, 1, **{k: v for k, v in kw.items()
                                                           if k in ("topic", "partition")})]


# -- copies described from their files ---------------------------------------------------------
def log_batches(log: Path) -> list[tuple[int, int, int, int]]:
    """(position, base offset, last offset, max timestamp) of each v2 batch of a .log, from
    the header's fixed fields; a batch cut short by the file's end is left out."""
    data = log.read_bytes()
    out, position = [], 0
    while position + 61 <= len(data):
        base, length = struct.unpack_from(">qi", data, position)
        if position + 12 + length > len(data):
            break
        last_delta, = struct.unpack_from(">i", data, position + 23)
        max_ts, = struct.unpack_from(">q", data, position + 35)
        out.append((position, base, base + last_delta, max_ts))
        position += 12 + length
    return out


def copy_events(prefix: Path, topic: str, topic_id: str, partition: int, *,
                epochs=((0, 0),), states=(COPY_SEGMENT_STARTED, COPY_SEGMENT_FINISHED),
                end_offset: int | None = None, event_ts: int = 2000, broker: int = 1
                ) -> list[bytes]:
    """The events of one copy at `prefix` (`<20-digit offset>-<segment id>`): its
    RemoteLogSegmentMetadataRecord (COPY_SEGMENT_STARTED), then an update per later state.
    `epochs`: the lineage's (epoch, start offset) entries; those the copy holds are its
    SegmentLeaderEpochs, the first clipped to its start. `end_offset` overrides the file's."""
    start, segment_id = int(prefix.name[:20]), prefix.name[21:]
    log = Path(str(prefix) + ".log")
    found = log_batches(log)
    end = found[-1][2] if end_offset is None else end_offset
    own = [(e, max(s, start)) for k, (e, s) in enumerate(epochs)
           if s <= end and (k + 1 == len(epochs) or epochs[k + 1][1] > start)]
    first = seg(0, start, end, own, topic=topic, topic_id=topic_id, partition=partition,
                size=log.stat().st_size, max_ts=max(b[3] for b in found), event_ts=event_ts,
                broker=broker, segment_id=segment_id,
                txn_empty=not Path(str(prefix) + ".txnindex").exists())
    assert states[0] == COPY_SEGMENT_STARTED
    return [first] + [upd(0, s, topic=topic, topic_id=topic_id, partition=partition,
                          event_ts=event_ts + 1 + i, broker=broker, segment_id=segment_id)
                      for i, s in enumerate(states[1:])]


# -- metadata partitions -------------------------------------------------------------------------
def write_metadata(root: Path, values: list[bytes | None], partition: int = 0, *,
                   partitions: int = 1, leader_epoch: int = 0) -> Path:
    """Append `values` to `<root>/__remote_log_metadata-<partition>` (created, with its
    `partitions` - 1 siblings empty), one null-key record a batch as the RLMM's idempotent
    producer sends them; the partition's first .log is returned."""
    for n in range(partitions):
        directory = root / f"{TOPIC}-{n}"
        log = PartitionLog.open_for_append(str(directory))
        try:
            if n != partition:
                continue
            sequence = log.log_end_offset
            for value in values:
                batch = encode_batch([Record(0, 1_700_000_000_000 + sequence, None, value)],
                                     producer_id=RLMM_PRODUCER_ID, producer_epoch=0,
                                     base_sequence=sequence)
                log.append(batch, leader_epoch=leader_epoch)
                sequence += 1
        finally:
            log.close()
    return root / f"{TOPIC}-{partition}" / "00000000000000000000.log"
