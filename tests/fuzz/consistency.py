"""Which mutants no reader could ever catch: the damage made another valid log, and nothing else
in the directory remembers the original.

Some mutations turn a log into a different, perfectly valid one: the last batch's offset moved
forward, a compressed legacy wrapper turned into a plain message whose value is the compressed
bytes (CRC recomputed), a log cut at a batch boundary. When the partition directory holds
nothing but `.log` files (no index, time index, snapshot or checkpoint that recorded the
original offsets), no tool can tell the mutant from a log that was written that way, and
demanding an error would be demanding the impossible.

So a SILENT verdict becomes UNDETECTABLE when, and only when, all of this holds:

* every other file of the partition (offset and time indexes, `.txnindex`, producer
  snapshots) and every data-directory checkpoint naming it agrees with the mutant
  (evidence_contradicts): what remembered the original says nothing the mutant breaks;
* the mutant is a valid log (decode_partition): Kafka's framing rules (spec §9.2), every batch
  read by kafka-python's own classes with a valid CRC, every record consuming exactly its bytes
  (legacy key and value lengths included, inner CRCs of compressed wrappers valid), control
  records well-formed, offsets strictly increasing across batches and segments, each segment's
  offsets at or above its base offset and within 2^31 of it;
* the rows the reader returned are exactly what this independent decoder reads from the mutant
  with the same options (expected_rows): the reader read the mutant right, the mutant was just
  not the original any more.

Everywhere else a SILENT verdict stays a failure. build_originals checks this decoder against
the reader on every unmutated log, and only partitions where they agree are ever judged by it.
"""

from __future__ import annotations

import json
import os
import struct
import zlib

INT32_MAX = 2**31 - 1


class Invalid(Exception):
    """The bytes are not a valid log."""


def evidence_contradicts(data: str, partition: str, batches: list[dict]) -> str | None:
    """What, among the partition's other files, contradicts the (valid) mutant `batches`: an
    offset index entry whose position is no batch start or whose offset that batch does not
    end at or before (and the one before it below), a time index entry (T, O) whose batch
    holding O does not have largest timestamp T, a `.txnindex` entry with no ABORT marker of
    its producer at its last offset, a producer snapshot or a data-directory checkpoint
    beyond the log end. None when every file agrees with the mutant: then no reader could
    tell it from a log written that way (the files that remembered the original, if any, no
    longer say anything it contradicts)."""
    path = os.path.join(data, partition)
    by_segment: dict[int, list[dict]] = {}
    for b in batches:
        by_segment.setdefault(b["segment"], []).append(b)
    end = batches[-1]["last"] + 1 if batches else None
    for name in os.listdir(path):
        head, _, suffix = name.partition(".")
        if not head.isdigit():
            continue
        base, file = int(head), os.path.join(path, name)
        with open(file, "rb") as f:
            raw = f.read()
        segment = by_segment.get(base, [])
        at = {b["position"]: i for i, b in enumerate(segment)}
        if suffix == "index":
            for k in range(len(raw) // 8):
                rel, position = struct.unpack_from(">ii", raw, 8 * k)
                if (k == 0 and rel == 0 and position == 0) or (k > 0 and rel == 0):
                    break                       # preallocated fill
                i = at.get(position)
                if i is None or not segment[i]["first"] <= base + rel \
                        or (i > 0 and segment[i - 1]["last"] >= base + rel):
                    return f"{name} entry {k}"
        elif suffix == "timeindex":
            for k in range(len(raw) // 12):
                ts, rel = struct.unpack_from(">qi", raw, 12 * k)
                if k > 0 and ts == 0 and rel == 0:
                    break
                holder = [b for b in segment if b["first"] <= base + rel <= b["last"]]
                if not holder or holder[0]["max_ts"] != ts:
                    return f"{name} entry {k}"
            # a closed segment's index ends with its largest timestamp (written at the roll)
            closed = any(b["segment"] > base for b in batches)
            if closed and len(raw) >= 12 and segment and struct.unpack_from(
                    ">q", raw, 12 * (len(raw) // 12 - 1))[0] < max(b["max_ts"] for b in segment):
                return f"{name} last entry"
        elif suffix == "txnindex":
            for k in range(len(raw) // 34):
                pid, _first, last = struct.unpack_from(">qqq", raw, 34 * k + 2)
                if not any(b["control"] and b["producer"] == pid and b["first"] == last
                           and b["markers"][:1] == [0] for b in segment):
                    return f"{name} entry {k}"
        elif suffix == "snapshot" and end is not None and base > end:
            return name
    topic, _, number = partition.rpartition("-")
    dirty = _cleaner_checkpoint(data, topic, number)
    if dirty is not None:
        # the cleaner removed nothing at or past its checkpoint: no gap may reach past it
        for before, after in zip(batches, batches[1:]):
            if after["first"] > before["last"] + 1 and after["first"] > dirty:
                return (f"cleaner-offset-checkpoint ({dirty}) against the gap before "
                        f"{after['first']}")
    for name in os.listdir(data):
        file = os.path.join(data, name)
        if name.endswith("-checkpoint") and os.path.isfile(file) and end is not None:
            with open(file, "rb") as f:
                for line in f.read().decode("utf-8", "replace").splitlines():
                    fields = line.split()
                    if (len(fields) == 3 and fields[0] == topic and fields[1] == number
                            and fields[2].isdigit() and int(fields[2]) > end
                            and name != "cleaner-offset-checkpoint"):
                        return name
    return None


def _cleaner_checkpoint(data: str, topic: str, number: str) -> int | None:
    """The first dirty offset the data directory's cleaner-offset-checkpoint gives the
    partition (None: not listed, or no such file)."""
    file = os.path.join(data, "cleaner-offset-checkpoint")
    if not os.path.isfile(file):
        return None
    with open(file, "rb") as f:
        for line in f.read().decode("utf-8", "replace").splitlines()[2:]:
            fields = line.split()
            if len(fields) == 3 and fields[:2] == [topic, number] and fields[2].isdigit():
                return int(fields[2])
    return None


# -- decoding ----------------------------------------------------------------------------------

def _legacy_message(buf: bytes, magic: int) -> tuple[int, int, bytes | None, bytes | None]:
    """(attributes, timestamp, key, value) of a legacy message (from its CRC field on),
    requiring a valid CRC and key and value that end exactly where the message does."""
    if len(buf) < (14 if magic == 0 else 22) or buf[4] != magic:
        raise Invalid("short message or wrong magic")
    if struct.unpack_from(">I", buf, 0)[0] != zlib.crc32(buf[4:]):
        raise Invalid("legacy CRC")
    attributes = buf[5]
    pos, timestamp = 6, -1
    if magic == 1:
        timestamp = struct.unpack_from(">q", buf, 6)[0]
        pos = 14
    fields = []
    for _ in range(2):
        if pos + 4 > len(buf):
            raise Invalid("key/value length past the end")
        n = struct.unpack_from(">i", buf, pos)[0]
        pos += 4
        if n < -1 or pos + max(n, 0) > len(buf):
            raise Invalid("key/value past the end")
        fields.append(None if n == -1 else bytes(buf[pos:pos + n]))
        pos += max(n, 0)
    if pos != len(buf):
        raise Invalid("bytes left after the value")
    return attributes, timestamp, fields[0], fields[1]


def _legacy_batch(entry: bytes, magic: int) -> dict:
    from kafka.record.legacy_records import LegacyRecordBatch

    offset = struct.unpack_from(">q", entry, 0)[0]
    attributes, timestamp, key, value = _legacy_message(entry[12:], magic)
    codec = attributes & 7
    log_append = magic == 1 and bool(attributes & 8)
    ts_type = -1 if magic == 0 else (1 if log_append else 0)
    if codec == 0:
        records = [(offset, timestamp, ts_type, key, value)]
    else:
        if codec > 3 or value is None:
            raise Invalid("legacy codec")
        inner = bytes(LegacyRecordBatch(entry, magic)._decompress(
            LegacyRecordBatch.KEY_OFFSET_V1 if magic == 1 else LegacyRecordBatch.KEY_OFFSET_V0))
        pos, parsed = 0, []
        while pos < len(inner):
            if pos + 12 > len(inner):
                raise Invalid("inner message header")
            inner_offset, size = struct.unpack_from(">qi", inner, pos)
            if size < 0 or pos + 12 + size > len(inner):
                raise Invalid("inner message size")
            a, t, k, v = _legacy_message(inner[pos + 12:pos + 12 + size], magic)
            if a & 7:
                raise Invalid("double compression")
            parsed.append((inner_offset, t, k, v))
            pos += 12 + size
        if not parsed:
            raise Invalid("empty wrapper")
        if magic == 1:
            base = offset - parsed[-1][0]
            parsed = [(base + o, t, k, v) for o, t, k, v in parsed]
        elif parsed[-1][0] != offset:
            raise Invalid("wrapper offset is not its last inner offset")
        records = [(o, timestamp if log_append else t, ts_type, k, v) for o, t, k, v in parsed]
    rows = [(o, t, tt, k, v, None) for o, t, tt, k, v in records]   # no headers: NULL
    return dict(first=rows[0][0], last=rows[-1][0], control=False, transactional=False,
                producer=-1, rows=rows, markers=[])


def _v2_batch(entry: bytes) -> dict:
    from kafka.record.default_records import DefaultRecordBatch

    if len(entry) < 61:
        raise Invalid("short v2 batch")
    batch = DefaultRecordBatch(entry)
    if not batch.validate_crc():
        raise Invalid("v2 CRC")
    if batch.compression_type > 4 or batch.records_count < 0:
        raise Invalid("v2 header")
    first, last = batch.base_offset, batch.base_offset + batch.last_offset_delta
    ts_type = 1 if batch.timestamp_type == 1 else 0
    rows, markers = [], []
    for record in batch:
        if not first <= record.offset <= last:
            raise Invalid("record offset outside the batch")
        if rows and record.offset <= rows[-1][0]:
            raise Invalid("record offsets do not increase")
        headers = tuple((k, v) for k, v in record.headers) or None   # none: NULL, as Spark
        rows.append((record.offset, record.timestamp, ts_type, record.key, record.value, headers))
        if batch.is_control_batch:
            key = record.key
            if key is None or len(key) != 4 or key[:2] != b"\0\0" or key[2:] not in (
                    b"\0\0", b"\0\1"):
                raise Invalid("control record key")
            if record.value is None or len(record.value) < 6 or record.value[:2] != b"\0\0":
                raise Invalid("control record value")
            markers.append(key[3])        # 0 ABORT, 1 COMMIT
    if len(rows) != batch.records_count:
        raise Invalid("record count")
    if batch.is_control_batch and len(rows) != 1:
        raise Invalid("control batch with other than one record")
    return dict(first=first, last=last, control=batch.is_control_batch,
                transactional=batch.is_transactional, producer=batch.producer_id, rows=rows,
                markers=markers)


def decode_partition(path: str) -> list[dict] | None:
    """Every batch of the partition's `.log` files, or None when they are not a valid log."""
    logs = []
    for name in os.listdir(path):
        head = name.split(".")[0]
        if name.endswith(".log") and head.isdigit():
            file = os.path.join(path, name)
            if os.path.islink(file) or not os.path.isfile(file):
                return None
            logs.append((int(head), name))
    logs.sort()
    batches, previous = [], None
    try:
        for k, (base, name) in enumerate(logs):
            last_segment = k == len(logs) - 1
            with open(os.path.join(path, name), "rb") as f:
                data = f.read()
            pos = 0
            while pos < len(data):
                if len(data) - pos < 18:
                    if last_segment:
                        break                 # a clean end (§9.2)
                    raise Invalid("tail")
                size = int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
                if size < 14:
                    raise Invalid("size")
                if pos + 12 + size > len(data):
                    if last_segment:
                        break                 # a partial batch at the end (§9.2)
                    raise Invalid("partial batch in an earlier segment")
                entry = data[pos:pos + 12 + size]
                magic = entry[16]
                batch = _v2_batch(entry) if magic == 2 else (
                    _legacy_batch(entry, magic) if magic in (0, 1) else None)
                if batch is None:
                    raise Invalid("magic")
                if batch["first"] < base or batch["last"] - base > INT32_MAX:
                    raise Invalid("offset outside the segment")
                if previous is not None and batch["first"] <= previous:
                    raise Invalid("offsets do not increase")
                previous = batch["last"]
                batch["segment"] = base
                batch["position"] = pos
                batch["max_ts"] = (struct.unpack_from(">q", entry, 35)[0] if magic == 2 else
                                   max((r[1] for r in batch["rows"]), default=-1))
                batches.append(batch)
                pos += 12 + size
    except Invalid:
        return None
    except Exception:                 # noqa: BLE001 - kafka-python could not read it: invalid
        return None
    return batches


# -- what a correct reader returns from a valid log ----------------------------------------------

def _rows_us(rows):
    """The reader's row shape: timestamps in microseconds."""
    return [(o, t * 1000, tt, k, v, h) for o, t, tt, k, v, h in rows]


def expected_rows(batches: list[dict], first_segment: int, topic: str, partition: int,
                  options: dict) -> list[tuple] | None:
    """The rows of one partition for a read variant's options, by the semantics of Spark's
    Kafka source over this log; None where the reader should have failed (an offset outside
    the log)."""
    data = [r for b in batches if not b["control"] for r in b["rows"]]
    everything = [r for b in batches for r in b["rows"]]
    start = first_segment
    end = batches[-1]["last"] + 1 if batches else first_segment
    if "startingOffsets" in options:
        lo = json.loads(options["startingOffsets"]).get(topic, {}).get(str(partition), -2)
        hi = json.loads(options["endingOffsets"]).get(topic, {}).get(str(partition), -1)
        lo = start if lo == -2 else lo
        hi = end if hi == -1 else hi
        if not (start <= lo <= end and start <= hi <= end) or lo > hi:
            return None
        return _rows_us([r for r in data if lo <= r[0] < hi])
    if "startingTimestamp" in options:
        def lookup(ts: int) -> int:
            return next((r[0] for r in everything if r[1] >= ts), end)
        lo, hi = lookup(int(options["startingTimestamp"])), lookup(int(options["endingTimestamp"]))
        return _rows_us([r for r in data if lo <= r[0] < hi])
    if options.get("isolationLevel") == "read_committed":
        aborted, open_batches = set(), {}
        for i, b in enumerate(batches):
            if b["control"]:
                if b["markers"] and b["markers"][0] == 0:
                    aborted.update(open_batches.get(b["producer"], []))
                open_batches.pop(b["producer"], None)
            elif b["transactional"]:
                open_batches.setdefault(b["producer"], []).append(i)
        # a transaction still open at the end holds the last stable offset where it began:
        # a read_committed consumer gets nothing at or past it
        stable = min((batches[ids[0]]["first"] for ids in open_batches.values()), default=None)
        return _rows_us([r for i, b in enumerate(batches) if not b["control"] and i not in aborted
                         for r in b["rows"] if stable is None or r[0] < stable])
    return _rows_us(data)
