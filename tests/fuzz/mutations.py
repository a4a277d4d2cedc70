"""Mutation operators: seeded, reproducible damage to a copy of a valid log.

A mutant is `MutantSpec(original, operator, seed)`: the operator, drawing every choice (which
partition, segment, batch, field, position, value) from `random.Random(seed)`, damages a fresh
copy of the original's data directory and returns a `Mutation` that says exactly what it did
(file, byte position, old and new value), so any mutant can be rebuilt and rerun from its spec.

Operators, by group (OPERATORS lists them with their weights):

* log bytes anywhere in a `.log`: bit flip, byte set to a boundary value, insert, delete,
  zero a range, truncate (anywhere, or at a batch boundary), append garbage, duplicate a batch in
  place, swap two adjacent batches;
* v2 batch header fields, targeted: outside the CRC baseOffset (+0), batchLength (+8),
  partitionLeaderEpoch (+12), magic (+16), the CRC itself (+17); inside it attributes (+21),
  lastOffsetDelta (+23), timestamps (+27, +35), producerId (+43), recordsCount (+57). Fields
  inside the CRC are damaged twice over: as is (the CRC no longer matches) and, for the
  structural ones, with the CRC recomputed (`.recrc`: a buggy writer; only changes that make the
  batch inconsistent, never ones that describe another valid log such as a new timestamp, a
  cleared control bit or a larger lastOffsetDelta);
* v2 record structure inside uncompressed batches (length, key/value length, header count),
  with the CRC recomputed;
* legacy (magic 0/1) entries: offset (+0), messageSize (+8), CRC (+12), magic (+16),
  attributes (+17) and key/value lengths (recrc);
* `.index`, `.timeindex`, `.txnindex`: garbage, zeroing, truncation, entries moved, appended,
  file deleted;
* small files: leader-epoch-checkpoint, partition.metadata, producer snapshots and the data
  directory's checkpoints: garbage, non-UTF-8, truncation, deletion, renaming;
* whole files: a `.log` deleted (its indexes kept), a middle or last segment deleted, a segment
  duplicated under another base offset, renamed (all its files, or the `.log` alone), two
  segments' names swapped, a file replaced by a directory, a FIFO, a dangling symlink or nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import os
from pathlib import Path
import random
import re
import shutil
import struct
import zlib

from crc32c import crc32c

INT64_MAX, INT64_MIN = 2**63 - 1, -2**63
INT32_MAX, INT32_MIN = 2**31 - 1, -2**31


@dataclass(frozen=True, order=True)
class MutantSpec:
    original: str
    operator: str
    seed: int

    def __str__(self) -> str:
        return f"{self.original} {self.operator} seed={self.seed}"


@dataclass
class Mutation:
    """What an operator did, in terms a person can redo by hand."""

    spec: MutantSpec
    file: str | None = None          # relative to the data directory
    position: int | None = None      # byte position in `file`
    detail: str = ""
    partition: str | None = None     # the partition directory it touched
    where: str = ""                  # first/middle/last batch or segment, for the tables
    tail_from: int | None = None     # in the partition's last .log: a torn tail from here is ok
    identity: bool = False           # the bytes did not change
    semantic_start: dict | None = None   # a checkpoint that still parses, with new log starts
    unreadable_checkpoint: bool = False  # the log-start checkpoint no longer parses

    def describe(self) -> str:
        at = "" if self.position is None else f" @{self.position}"
        where = f" [{self.where}]" if self.where else ""
        return f"{self.spec}: {self.file or '-'}{at}{where}: {self.detail}"


class NotApplicable(Exception):
    """The operator found nothing to damage in this original (the spec generator avoids it)."""


@dataclass
class Ctx:
    spec: MutantSpec
    original: object      # originals.Original
    data: Path            # the mutant's data directory
    rng: random.Random = field(init=False)

    def __post_init__(self):
        self.rng = random.Random(self.spec.seed)

    def mutation(self, **kw) -> Mutation:
        return Mutation(self.spec, **kw)


# -- small helpers -----------------------------------------------------------------------------

def _rel(ctx: Ctx, path: Path) -> str:
    return str(path.relative_to(ctx.data))


def _read(path: Path) -> bytearray:
    return bytearray(path.read_bytes())


def _varint(value: int) -> bytes:
    """Kafka's zigzag varint."""
    z = (value << 1) ^ (value >> 63)
    z &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _read_varint(buf, pos: int) -> tuple[int, int]:
    """(value, bytes used) of a zigzag varint at pos."""
    z, shift, i = 0, 0, pos
    while True:
        b = buf[i]
        z |= (b & 0x7F) << shift
        i += 1
        if not b & 0x80:
            break
        shift += 7
    return (z >> 1) ^ -(z & 1), i - pos


def _recrc_v2(buf: bytearray, pos: int) -> None:
    size = 12 + struct.unpack_from(">i", buf, pos + 8)[0]
    struct.pack_into(">I", buf, pos + 17, crc32c(bytes(buf[pos + 21:pos + size])))


def _recrc_legacy(buf: bytearray, pos: int) -> None:
    size = 12 + struct.unpack_from(">i", buf, pos + 8)[0]
    struct.pack_into(">I", buf, pos + 12, zlib.crc32(bytes(buf[pos + 16:pos + size])))


def _partitions(ctx: Ctx, pred=lambda p: True):
    parts = [p for p in ctx.original.partitions.values() if pred(p)]
    if not parts:
        raise NotApplicable("no partition fits")
    return parts


def _pick_segment(ctx: Ctx, pred=lambda p, i, s: True):
    choices = [(p, i, s) for p in ctx.original.partitions.values()
               for i, s in enumerate(p.segments) if pred(p, i, s)]
    if not choices:
        raise NotApplicable("no segment fits")
    return ctx.rng.choice(choices)


def _batch_where(part, seg_index: int, batch_index_in_seg: int) -> str:
    seg = part.segments[seg_index]
    last_seg = seg_index == len(part.segments) - 1
    if batch_index_in_seg == len(seg.batches) - 1:
        where = "last batch of the log" if last_seg else "last batch of a segment"
    elif batch_index_in_seg == 0:
        where = "first batch of the log" if seg_index == 0 else "first batch of a segment"
    else:
        where = "middle batch"
    return where


def _pick_batch(ctx: Ctx, pred=lambda b: True):
    """(partition, segment index, batch index in segment, batch), chosen uniformly, but a third
    of the time among the first and last batches of segments (where offsets meet)."""
    choices = [(p, i, j, b) for p in ctx.original.partitions.values()
               for i, s in enumerate(p.segments) for j, b in enumerate(s.batches) if pred(b)]
    if not choices:
        raise NotApplicable("no batch fits")
    edges = [c for c in choices if c[2] in (0, len(c[0].segments[c[1]].batches) - 1)]
    if edges and ctx.rng.random() < 1 / 3:
        return ctx.rng.choice(edges)
    return ctx.rng.choice(choices)


def _log_path(ctx: Ctx, part, seg) -> Path:
    return ctx.data / part.name / seg.log_name


def _tail_from(part, seg_index: int, position: int) -> int | None:
    return position if seg_index == len(part.segments) - 1 else None


def _write_field(ctx: Ctx, part, seg_index: int, seg, batch, offset: int, fmt: str,
                 new_value, name: str, where: str, recrc: str | None = None) -> Mutation:
    path = _log_path(ctx, part, seg)
    buf = _read(path)
    pos = batch.position + offset
    old = struct.unpack_from(fmt, buf, pos)[0]
    struct.pack_into(fmt, buf, pos, new_value)
    if recrc == "v2":
        _recrc_v2(buf, batch.position)
    elif recrc == "legacy":
        _recrc_legacy(buf, batch.position)
    path.write_bytes(buf)
    return ctx.mutation(file=_rel(ctx, path), position=pos, partition=part.name, where=where,
                        detail=f"{name} {old} -> {new_value}" + (" (CRC recomputed)" if recrc
                                                                  else ""),
                        tail_from=_tail_from(part, seg_index, pos), identity=old == new_value)


def _wrap(value: int, bits: int) -> int:
    """`value` as a signed integer of `bits` bits (two's complement wrap-around)."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


# -- .log bytes anywhere -----------------------------------------------------------------------

def _any_log_position(ctx: Ctx, inclusive_end: bool = False):
    part, i, seg = _pick_segment(ctx, lambda p, i, s: s.size > 0)
    path = _log_path(ctx, part, seg)
    size = path.stat().st_size
    # a third of the time within the first 61 bytes of a batch (the header), else anywhere
    if seg.batches and ctx.rng.random() < 1 / 3:
        b = ctx.rng.choice(seg.batches)
        pos = b.position + ctx.rng.randrange(min(61, b.size))
    else:
        pos = ctx.rng.randrange(size + (1 if inclusive_end else 0))
    return part, i, seg, path, pos


def _where_in_log(part, seg_index: int, pos: int) -> str:
    seg = part.segments[seg_index]
    for j, b in enumerate(seg.batches):
        if b.position <= pos < b.position + b.size:
            field_name = ""
            rel = pos - b.position
            if b.magic == 2:
                for start, name in ((0, "baseOffset"), (8, "batchLength"), (12, "leaderEpoch"),
                                    (16, "magic"), (17, "crc"), (21, "attributes"),
                                    (23, "lastOffsetDelta"), (27, "baseTimestamp"),
                                    (35, "maxTimestamp"), (43, "producerId"),
                                    (51, "producerEpoch"), (53, "baseSequence"),
                                    (57, "recordsCount"), (61, "records")):
                    if rel >= start:
                        field_name = name
            else:
                for start, name in ((0, "offset"), (8, "messageSize"), (12, "crc"),
                                    (16, "magic"), (17, "attributes"), (18, "body")):
                    if rel >= start:
                        field_name = name
            return f"{_batch_where(part, seg_index, j)}, {field_name}"
    return "after the last batch"


def op_log_flip(ctx):
    part, i, seg, path, pos = _any_log_position(ctx)
    buf = _read(path)
    bit = ctx.rng.randrange(8)
    old = buf[pos]
    buf[pos] ^= 1 << bit
    path.write_bytes(buf)
    return ctx.mutation(file=_rel(ctx, path), position=pos, partition=part.name,
                        where=_where_in_log(part, i, pos),
                        detail=f"bit {bit} flipped: {old:#04x} -> {buf[pos]:#04x}",
                        tail_from=_tail_from(part, i, pos))


def op_log_set(ctx):
    part, i, seg, path, pos = _any_log_position(ctx)
    buf = _read(path)
    old = buf[pos]
    buf[pos] = ctx.rng.choice([0x00, 0xFF, 0x7F, 0x80, 0x01, 0xFE, ctx.rng.randrange(256)])
    path.write_bytes(buf)
    return ctx.mutation(file=_rel(ctx, path), position=pos, partition=part.name,
                        where=_where_in_log(part, i, pos),
                        detail=f"byte {old:#04x} -> {buf[pos]:#04x}",
                        tail_from=_tail_from(part, i, pos), identity=old == buf[pos])


def op_log_insert(ctx):
    part, i, seg, path, pos = _any_log_position(ctx, inclusive_end=True)
    n = ctx.rng.choice([1, 1, 2, 4, 8, 12, ctx.rng.randint(1, 64)])
    kind = ctx.rng.choice(["random", "zeros", "copy"])
    buf = _read(path)
    if kind == "random":
        data = bytes(ctx.rng.randrange(256) for _ in range(n))
    elif kind == "zeros":
        data = bytes(n)
    else:
        start = ctx.rng.randrange(max(1, len(buf) - n))
        data = bytes(buf[start:start + n]) or b"\0"
    buf[pos:pos] = data
    path.write_bytes(buf)
    return ctx.mutation(file=_rel(ctx, path), position=pos, partition=part.name,
                        where=_where_in_log(part, i, pos),
                        detail=f"{len(data)} {kind} bytes inserted ({data[:16].hex()})",
                        tail_from=_tail_from(part, i, pos))


def op_log_delete(ctx):
    part, i, seg, path, pos = _any_log_position(ctx)
    buf = _read(path)
    n = min(ctx.rng.choice([1, 1, 2, 4, 8, 12, ctx.rng.randint(1, 64)]), len(buf) - pos)
    gone = bytes(buf[pos:pos + n])
    del buf[pos:pos + n]
    path.write_bytes(buf)
    return ctx.mutation(file=_rel(ctx, path), position=pos, partition=part.name,
                        where=_where_in_log(part, i, pos),
                        detail=f"{n} bytes deleted ({gone[:16].hex()})",
                        tail_from=_tail_from(part, i, pos))


def op_log_zero_range(ctx):
    part, i, seg, path, pos = _any_log_position(ctx)
    buf = _read(path)
    n = min(ctx.rng.choice([4, 8, 16, 61, ctx.rng.randint(1, 512)]), len(buf) - pos)
    old = bytes(buf[pos:pos + n])
    buf[pos:pos + n] = bytes(n)
    path.write_bytes(buf)
    return ctx.mutation(file=_rel(ctx, path), position=pos, partition=part.name,
                        where=_where_in_log(part, i, pos), detail=f"{n} bytes zeroed",
                        tail_from=_tail_from(part, i, pos), identity=old == bytes(n))


def op_log_truncate(ctx):
    part, i, seg, path, pos = _any_log_position(ctx)
    os.truncate(path, pos)
    return ctx.mutation(file=_rel(ctx, path), position=pos, partition=part.name,
                        where=("last segment" if i == len(part.segments) - 1
                               else "earlier segment") + ", " + _where_in_log(part, i, pos),
                        detail=f"truncated to {pos} of {seg.size} bytes",
                        tail_from=_tail_from(part, i, pos))


def op_log_truncate_at_batch(ctx):
    part, i, seg = _pick_segment(ctx, lambda p, i, s: len(s.batches) >= 2)
    path = _log_path(ctx, part, seg)
    j = ctx.rng.randrange(1, len(seg.batches))
    pos = seg.batches[j].position
    os.truncate(path, pos)
    return ctx.mutation(file=_rel(ctx, path), position=pos, partition=part.name,
                        where="last segment" if i == len(part.segments) - 1 else "earlier segment",
                        detail=f"truncated at the start of batch {j} (byte {pos} of {seg.size})",
                        tail_from=_tail_from(part, i, pos))


def op_log_append(ctx):
    part, i, seg = _pick_segment(ctx)
    path = _log_path(ctx, part, seg)
    n = ctx.rng.choice([1, 11, 12, 17, 18, 61, ctx.rng.randint(1, 300)])
    kind = ctx.rng.choice(["zeros", "random", "header"])
    if kind == "zeros":
        data = bytes(n)
    elif kind == "random":
        data = bytes(ctx.rng.randrange(256) for _ in range(n))
    else:   # the start of a copy of the segment's last batch: a torn write
        buf = path.read_bytes()
        last = seg.batches[-1] if seg.batches else None
        data = buf[last.position:last.position + min(n, last.size - 1)] if last else bytes(n)
        data = data or b"\0"
    pos = path.stat().st_size
    with open(path, "ab") as f:
        f.write(data)
    return ctx.mutation(file=_rel(ctx, path), position=pos, partition=part.name,
                        where="last segment" if i == len(part.segments) - 1 else "earlier segment",
                        detail=f"{len(data)} {kind} bytes appended",
                        tail_from=_tail_from(part, i, pos))


def op_log_dup_batch(ctx):
    part, i, j, b = _pick_batch(ctx)
    seg = part.segments[i]
    path = _log_path(ctx, part, seg)
    buf = _read(path)
    buf[b.position + b.size:b.position + b.size] = buf[b.position:b.position + b.size]
    path.write_bytes(buf)
    return ctx.mutation(file=_rel(ctx, path), position=b.position + b.size, partition=part.name,
                        where=_batch_where(part, i, j),
                        detail=f"batch at {b.position} (offsets {b.first_offset}..{b.last_offset})"
                               " written twice in a row",
                        tail_from=_tail_from(part, i, b.position + b.size))


def op_log_swap_batches(ctx):
    part, i, seg = _pick_segment(ctx, lambda p, i, s: len(s.batches) >= 2)
    path = _log_path(ctx, part, seg)
    j = ctx.rng.randrange(len(seg.batches) - 1)
    a, b = seg.batches[j], seg.batches[j + 1]
    buf = _read(path)
    first, second = bytes(buf[a.position:a.position + a.size]), bytes(
        buf[b.position:b.position + b.size])
    buf[a.position:b.position + b.size] = second + first
    path.write_bytes(buf)
    return ctx.mutation(file=_rel(ctx, path), position=a.position, partition=part.name,
                        where=_batch_where(part, i, j),
                        detail=f"batches {a.first_offset}..{a.last_offset} and "
                               f"{b.first_offset}..{b.last_offset} swapped",
                        tail_from=_tail_from(part, i, a.position))


# -- v2 header fields ----------------------------------------------------------------------------

def _v2(b):
    return b.magic == 2


def _offset_value(ctx: Ctx, old: int, base_offset: int) -> int:
    k = ctx.rng.randint(3, 5000)
    choice = ctx.rng.choice(["+1", "-1", "+2", "-2", "+k", "-k", "+2^31", "0", "-1v",
                             "max", "min", "2^31", "2^32", "seg+2^31"])
    value = {"+1": old + 1, "-1": old - 1, "+2": old + 2, "-2": old - 2, "+k": old + k,
             "-k": old - k, "+2^31": old + 2**31, "0": 0, "-1v": -1, "max": INT64_MAX,
             "min": INT64_MIN, "2^31": 2**31, "2^32": 2**32,
             "seg+2^31": base_offset + 2**31}[choice]
    return _wrap(value, 64)


def _length_value(ctx: Ctx, old: int, remaining: int) -> int:
    k = ctx.rng.randint(2, 4096)
    choice = ctx.rng.choice(["+1", "-1", "+k", "-k", "0", "-1v", "int32max", "int32min", "48",
                             "49", "13", "to-end", "2^28", "2^24"])
    value = {"+1": old + 1, "-1": old - 1, "+k": old + k, "-k": old - k, "0": 0, "-1v": -1,
             "int32max": INT32_MAX, "int32min": INT32_MIN, "48": 48, "49": 49, "13": 13,
             "to-end": old + remaining, "2^28": 2**28, "2^24": 2**24}[choice]
    return _wrap(value, 32)


def op_v2_base_offset(ctx):
    part, i, j, b = _pick_batch(ctx, _v2)
    seg = part.segments[i]
    buf = _log_path(ctx, part, seg).read_bytes()
    old = struct.unpack_from(">q", buf, b.position)[0]
    return _write_field(ctx, part, i, seg, b, 0, ">q", _offset_value(ctx, old, seg.base_offset),
                        "baseOffset", _batch_where(part, i, j))


def op_v2_batch_length(ctx):
    part, i, j, b = _pick_batch(ctx, _v2)
    seg = part.segments[i]
    path = _log_path(ctx, part, seg)
    size = path.stat().st_size
    old = struct.unpack_from(">i", path.read_bytes(), b.position + 8)[0]
    return _write_field(ctx, part, i, seg, b, 8, ">i",
                        _length_value(ctx, old, size - b.position - b.size), "batchLength",
                        _batch_where(part, i, j))


def op_v2_leader_epoch(ctx):
    part, i, j, b = _pick_batch(ctx, _v2)
    value = ctx.rng.choice([-1, 0, 1, INT32_MAX, INT32_MIN, ctx.rng.randint(0, 1000)])
    return _write_field(ctx, part, i, part.segments[i], b, 12, ">i", value,
                        "partitionLeaderEpoch", _batch_where(part, i, j))


def op_v2_magic(ctx):
    part, i, j, b = _pick_batch(ctx, _v2)
    value = ctx.rng.choice([0, 1, 3, 127, -1, -128])
    return _write_field(ctx, part, i, part.segments[i], b, 16, ">b", value, "magic",
                        _batch_where(part, i, j))


def op_v2_crc(ctx):
    part, i, j, b = _pick_batch(ctx, _v2)
    seg = part.segments[i]
    old = struct.unpack_from(">I", _log_path(ctx, part, seg).read_bytes(), b.position + 17)[0]
    return _write_field(ctx, part, i, seg, b, 17, ">I", old ^ (1 << ctx.rng.randrange(32)),
                        "crc", _batch_where(part, i, j))


# fields inside the CRC: (offset, struct format, name)
V2_CRC_FIELDS = [(21, ">h", "attributes"), (23, ">i", "lastOffsetDelta"),
                 (27, ">q", "baseTimestamp"), (35, ">q", "maxTimestamp"),
                 (43, ">q", "producerId"), (51, ">h", "producerEpoch"),
                 (53, ">i", "baseSequence"), (57, ">i", "recordsCount")]


def op_v2_crc_field(ctx):
    """A field inside the CRC changed, the CRC left alone: must be a CRC error."""
    part, i, j, b = _pick_batch(ctx, _v2)
    seg = part.segments[i]
    offset, fmt, name = ctx.rng.choice(V2_CRC_FIELDS)
    old = struct.unpack_from(fmt, _log_path(ctx, part, seg).read_bytes(), b.position + offset)[0]
    bits = struct.calcsize(fmt) * 8
    new = _wrap(old ^ (1 << ctx.rng.randrange(bits)), bits)
    return _write_field(ctx, part, i, seg, b, offset, fmt, new, name, _batch_where(part, i, j))


def op_v2_attributes_recrc(ctx):
    """Codec changed (to another codec, or an undefined one), or the control bit set on a data
    batch, with a matching CRC."""
    part, i, j, b = _pick_batch(ctx, _v2)
    seg = part.segments[i]
    old = struct.unpack_from(">h", _log_path(ctx, part, seg).read_bytes(), b.position + 21)[0]
    # Setting the control bit on a data batch makes records that are no control records; the
    # reverse (a marker turned into a data record) describes another valid log, so it is not done.
    kinds = ["codec", "codec", "bad-codec"] + ([] if b.is_control else ["control"])
    kind = ctx.rng.choice(kinds)
    if kind == "codec":
        new = (old & ~0x07) | ctx.rng.choice([c for c in range(5) if c != (old & 7)])
    elif kind == "bad-codec":
        new = (old & ~0x07) | ctx.rng.choice([5, 6, 7])
    else:
        new = old ^ 0x20
    return _write_field(ctx, part, i, seg, b, 21, ">h", new, "attributes",
                        _batch_where(part, i, j), recrc="v2")


def op_v2_last_offset_delta_recrc(ctx):
    """lastOffsetDelta below the last record's offset delta (or absurd), with a matching CRC.
    (A larger one is a legitimate compacted batch, so it is not generated here.)"""
    part, i, j, b = _pick_batch(ctx, _v2)
    seg = part.segments[i]
    old = struct.unpack_from(">i", _log_path(ctx, part, seg).read_bytes(), b.position + 23)[0]
    k = ctx.rng.randint(2, 100)
    choices = [-1, INT32_MIN, old - 1, old - k]
    if b.records > 1 and not b.is_control:
        choices.append(0)
    new = ctx.rng.choice(choices)
    if new == old or (new >= old):
        new = -1
    return _write_field(ctx, part, i, seg, b, 23, ">i", new, "lastOffsetDelta",
                        _batch_where(part, i, j), recrc="v2")


def op_v2_records_count_recrc(ctx):
    part, i, j, b = _pick_batch(ctx, _v2)
    seg = part.segments[i]
    old = struct.unpack_from(">i", _log_path(ctx, part, seg).read_bytes(), b.position + 57)[0]
    new = ctx.rng.choice([old + 1, old - 1, 0, -1, INT32_MAX, INT32_MIN, old + 1000, 2**24])
    if new == old:
        new = old + 1
    return _write_field(ctx, part, i, seg, b, 57, ">i", _wrap(new, 32), "recordsCount",
                        _batch_where(part, i, j), recrc="v2")


def _v2_records(buf, b) -> list[dict]:
    """Field positions of the records of an uncompressed v2 batch (independent parse)."""
    pos, end = b.position + 61, b.position + b.size
    records = []
    while pos < end:
        rec = {"start": pos}
        length, n = _read_varint(buf, pos)
        rec["length"] = (pos, n, length)
        body = pos + n
        p = body + 1                                           # attributes
        _, n2 = _read_varint(buf, p); p += n2                  # timestampDelta
        _, n3 = _read_varint(buf, p); p += n3                  # offsetDelta
        key_len, n4 = _read_varint(buf, p)
        rec["keyLength"] = (p, n4, key_len); p += n4 + max(key_len, 0)
        value_len, n5 = _read_varint(buf, p)
        rec["valueLength"] = (p, n5, value_len); p += n5 + max(value_len, 0)
        count, n6 = _read_varint(buf, p)
        rec["headersCount"] = (p, n6, count); p += n6
        for h in range(count):
            hk, n7 = _read_varint(buf, p)
            rec.setdefault("headerKeyLength", (p, n7, hk)); p += n7 + max(hk, 0)
            hv, n8 = _read_varint(buf, p)
            rec.setdefault("headerValueLength", (p, n8, hv)); p += n8 + max(hv, 0)
        if p != body + length:
            raise NotApplicable("the independent record parse disagrees with the batch")
        records.append(rec)
        pos = p
    return records


def op_v2_record_recrc(ctx):
    """A length inside a record (record, key, value, header count or lengths) changed so that the
    record no longer parses as it did, batchLength and CRC made to match the new bytes."""
    part, i, j, b = _pick_batch(ctx, lambda b: b.magic == 2 and b.codec == 0 and not b.is_control
                                and b.records > 0)
    seg = part.segments[i]
    path = _log_path(ctx, part, seg)
    buf = _read(path)
    records = _v2_records(buf, b)
    rec = ctx.rng.choice(records)
    name = ctx.rng.choice([k for k in ("length", "keyLength", "valueLength", "headersCount",
                                       "headerKeyLength", "headerValueLength") if k in rec])
    pos, n, old = rec[name]
    used = max(old, 0)
    k = ctx.rng.randint(2, 40)
    candidates = [old + 1, old - 1, old + k, old - k, -1, 0, INT32_MAX, -2]
    consumed = (lambda v: max(v, 0)) if name != "headersCount" else (lambda v: v)
    # Only values that change how many bytes the field takes: -2 is as null as -1 to Kafka.
    candidates = [c for c in candidates if c != old and consumed(c) != used]
    new = ctx.rng.choice(candidates)
    encoded = _varint(new)
    buf[pos:pos + n] = encoded
    delta = len(encoded) - n
    if delta:
        old_len = struct.unpack_from(">i", buf, b.position + 8)[0]
        struct.pack_into(">i", buf, b.position + 8, old_len + delta)
    _recrc_v2(buf, b.position)
    path.write_bytes(buf)
    return ctx.mutation(file=_rel(ctx, path), position=pos, partition=part.name,
                        where=_batch_where(part, i, j) + f", record {name}",
                        detail=f"record at {rec['start']}: {name} {old} -> {new} (batchLength "
                               "and CRC made to match)",
                        tail_from=_tail_from(part, i, pos))


# -- legacy (magic 0/1) entries ---------------------------------------------------------------

def _legacy(b):
    return b.magic in (0, 1)


def op_legacy_offset(ctx):
    part, i, j, b = _pick_batch(ctx, _legacy)
    seg = part.segments[i]
    old = struct.unpack_from(">q", _log_path(ctx, part, seg).read_bytes(), b.position)[0]
    return _write_field(ctx, part, i, seg, b, 0, ">q", _offset_value(ctx, old, seg.base_offset),
                        "offset", _batch_where(part, i, j))


def op_legacy_message_size(ctx):
    part, i, j, b = _pick_batch(ctx, _legacy)
    seg = part.segments[i]
    path = _log_path(ctx, part, seg)
    old = struct.unpack_from(">i", path.read_bytes(), b.position + 8)[0]
    return _write_field(ctx, part, i, seg, b, 8, ">i",
                        _length_value(ctx, old, path.stat().st_size - b.position - b.size),
                        "messageSize", _batch_where(part, i, j))


def op_legacy_header(ctx):
    """CRC, magic or attributes of a legacy entry changed, the CRC left alone."""
    part, i, j, b = _pick_batch(ctx, _legacy)
    seg = part.segments[i]
    buf = _log_path(ctx, part, seg).read_bytes()
    name = ctx.rng.choice(["crc", "magic", "attributes"])
    if name == "crc":
        old = struct.unpack_from(">I", buf, b.position + 12)[0]
        return _write_field(ctx, part, i, seg, b, 12, ">I", old ^ (1 << ctx.rng.randrange(32)),
                            "crc", _batch_where(part, i, j))
    if name == "magic":
        new = ctx.rng.choice([x for x in (0, 1, 2, 3, -1) if x != b.magic])
        return _write_field(ctx, part, i, seg, b, 16, ">b", new, "magic",
                            _batch_where(part, i, j))
    old = buf[b.position + 17]
    return _write_field(ctx, part, i, seg, b, 17, ">B", old ^ (1 << ctx.rng.randrange(8)),
                        "attributes", _batch_where(part, i, j))


def op_legacy_recrc(ctx):
    """Codec (attributes) or key/value length of a legacy entry changed, with a matching CRC."""
    part, i, j, b = _pick_batch(ctx, _legacy)
    seg = part.segments[i]
    path = _log_path(ctx, part, seg)
    buf = _read(path)
    what = ctx.rng.choice(["codec", "keyLength", "valueLength"])
    if what == "codec":
        old = buf[b.position + 17]
        new = (old & ~0x07) | ctx.rng.choice([c for c in range(8) if c != (old & 7)])
        return _write_field(ctx, part, i, seg, b, 17, ">B", new, "attributes",
                            _batch_where(part, i, j), recrc="legacy")
    key_at = b.position + (18 if b.magic == 0 else 26)
    key_len = struct.unpack_from(">i", buf, key_at)[0]
    at = key_at if what == "keyLength" else key_at + 4 + max(key_len, 0)
    old = struct.unpack_from(">i", buf, at)[0]
    k = ctx.rng.randint(2, 50)
    # Only values that change how many bytes the key or value takes (any negative is null).
    new = ctx.rng.choice([c for c in (old + 1, old - 1, old + k, old - k, INT32_MAX, -2, -1)
                          if max(c, 0) != max(old, 0)])
    struct.pack_into(">i", buf, at, new)
    _recrc_legacy(buf, b.position)
    path.write_bytes(buf)
    return ctx.mutation(file=_rel(ctx, path), position=at, partition=part.name,
                        where=_batch_where(part, i, j),
                        detail=f"{what} {old} -> {new} (CRC recomputed)",
                        tail_from=_tail_from(part, i, at))


# -- index files ----------------------------------------------------------------------------------

def _pick_index_file(ctx: Ctx, suffix: str, min_size: int = 0):
    choices = []
    for p in ctx.original.partitions.values():
        for i, s in enumerate(p.segments):
            name = f"{s.base_offset:020d}{suffix}"
            if name in s.files and (ctx.data / p.name / name).stat().st_size >= min_size:
                choices.append((p, i, s, ctx.data / p.name / name))
    if not choices:
        raise NotApplicable(f"no {suffix} file")
    return ctx.rng.choice(choices)


def _index_garbage(ctx, suffix: str):
    part, i, seg, path = _pick_index_file(ctx, suffix, 1)
    buf = _read(path)
    pos = ctx.rng.randrange(len(buf))
    n = min(ctx.rng.choice([1, 2, 4, 8, 12, ctx.rng.randint(1, 64)]), len(buf) - pos)
    old = bytes(buf[pos:pos + n])
    buf[pos:pos + n] = bytes(ctx.rng.randrange(256) for _ in range(n))
    path.write_bytes(buf)
    return ctx.mutation(file=_rel(ctx, path), position=pos, partition=part.name,
                        where=f"segment {i + 1}/{len(part.segments)}",
                        detail=f"{n} random bytes ({old.hex()} -> {bytes(buf[pos:pos + n]).hex()})",
                        identity=old == bytes(buf[pos:pos + n]))


def _index_zero(ctx, suffix: str):
    part, i, seg, path = _pick_index_file(ctx, suffix, 1)
    buf = _read(path)
    if ctx.rng.random() < 0.5:
        pos, n = 0, len(buf)
    else:
        pos = ctx.rng.randrange(len(buf))
        n = ctx.rng.randint(1, len(buf) - pos)
    old = bytes(buf[pos:pos + n])
    buf[pos:pos + n] = bytes(n)
    path.write_bytes(buf)
    return ctx.mutation(file=_rel(ctx, path), position=pos, partition=part.name,
                        where=f"segment {i + 1}/{len(part.segments)}",
                        detail=f"{n} bytes zeroed", identity=old == bytes(n))


def _index_truncate(ctx, suffix: str):
    part, i, seg, path = _pick_index_file(ctx, suffix, 1)
    size = path.stat().st_size
    new = ctx.rng.randrange(size)
    os.truncate(path, new)
    return ctx.mutation(file=_rel(ctx, path), position=new, partition=part.name,
                        where=f"segment {i + 1}/{len(part.segments)}",
                        detail=f"truncated from {size} to {new} bytes")


def _index_append(ctx, suffix: str, entry_size: int):
    part, i, seg, path = _pick_index_file(ctx, suffix)
    buf = path.read_bytes()
    kind = ctx.rng.choice(["random", "zeros", "repeat", "partial"])
    if kind == "random":
        data = bytes(ctx.rng.randrange(256) for _ in range(entry_size))
    elif kind == "zeros":
        data = bytes(entry_size)
    elif kind == "repeat" and len(buf) >= entry_size:
        data = buf[-entry_size:]
    else:
        data = bytes(ctx.rng.randrange(256) for _ in range(ctx.rng.randint(1, entry_size - 1)))
    with open(path, "ab") as f:
        f.write(data)
    return ctx.mutation(file=_rel(ctx, path), position=len(buf), partition=part.name,
                        where=f"segment {i + 1}/{len(part.segments)}",
                        detail=f"{len(data)} bytes appended ({kind}: {data.hex()})")


def _delete_file(ctx, suffix: str):
    part, i, seg, path = _pick_index_file(ctx, suffix)
    path.unlink()
    return ctx.mutation(file=_rel(ctx, path), partition=part.name,
                        where=f"segment {i + 1}/{len(part.segments)}", detail="file deleted")


def op_index_garbage(ctx):
    return _index_garbage(ctx, ".index")


def op_index_zero(ctx):
    return _index_zero(ctx, ".index")


def op_index_truncate(ctx):
    return _index_truncate(ctx, ".index")


def op_index_append(ctx):
    return _index_append(ctx, ".index", 8)


def op_index_delete(ctx):
    return _delete_file(ctx, ".index")


def op_index_entry(ctx):
    """One entry's relative offset or position moved: a well-formed index that lies."""
    part, i, seg, path = _pick_index_file(ctx, ".index", 8)
    buf = _read(path)
    before = bytes(buf)
    n = len(buf) // 8
    e = ctx.rng.randrange(n)
    rel, position = struct.unpack_from(">ii", buf, e * 8)
    positions = [b.position for b in seg.batches]
    if ctx.rng.random() < 0.5:
        k = ctx.rng.randint(2, 50)
        new = _wrap(ctx.rng.choice([rel + 1, rel - 1, rel + k, rel - k, 0, -1, INT32_MAX]), 32)
        struct.pack_into(">i", buf, e * 8, new)
        detail = f"entry {e}: relative offset {rel} -> {new}"
    else:
        other = [p for p in positions if p != position] or [0]
        new = _wrap(ctx.rng.choice([position + 1, position - 1, ctx.rng.choice(other), 0,
                                    seg.size, seg.size + 1000, INT32_MAX, -1]), 32)
        struct.pack_into(">i", buf, e * 8 + 4, new)
        detail = f"entry {e}: position {position} -> {new}"
    path.write_bytes(buf)
    return ctx.mutation(file=_rel(ctx, path), position=e * 8, partition=part.name,
                        where=f"segment {i + 1}/{len(part.segments)}", detail=detail,
                        identity=before == bytes(buf))


def op_timeindex_garbage(ctx):
    return _index_garbage(ctx, ".timeindex")


def op_timeindex_zero(ctx):
    return _index_zero(ctx, ".timeindex")


def op_timeindex_truncate(ctx):
    return _index_truncate(ctx, ".timeindex")


def op_timeindex_append(ctx):
    return _index_append(ctx, ".timeindex", 12)


def op_timeindex_delete(ctx):
    return _delete_file(ctx, ".timeindex")


def op_timeindex_entry(ctx):
    part, i, seg, path = _pick_index_file(ctx, ".timeindex", 12)
    buf = _read(path)
    n = len(buf) // 12
    e = ctx.rng.randrange(n)
    ts, rel = struct.unpack_from(">qi", buf, e * 12)
    k = ctx.rng.randint(2, 100000)
    if ctx.rng.random() < 0.5:
        new = _wrap(ctx.rng.choice([ts + 1, ts - 1, ts + k, ts - k, 0, -1, INT64_MAX]), 64)
        struct.pack_into(">q", buf, e * 12, new)
        detail = f"entry {e}: timestamp {ts} -> {new}"
    else:
        new = _wrap(ctx.rng.choice([rel + 1, rel - 1, rel + k % 50, rel - k % 50, 0, -1,
                                    INT32_MAX]), 32)
        struct.pack_into(">i", buf, e * 12 + 8, new)
        detail = f"entry {e}: relative offset {rel} -> {new}"
    path.write_bytes(buf)
    return ctx.mutation(file=_rel(ctx, path), position=e * 12, partition=part.name,
                        where=f"segment {i + 1}/{len(part.segments)}", detail=detail)


def op_txnindex_damage(ctx):
    part, i, seg, path = _pick_index_file(ctx, ".txnindex")
    buf = _read(path)
    kind = ctx.rng.choice(["garbage", "truncate", "entry", "delete", "append"])
    if kind == "delete" or not buf:
        path.unlink()
        return ctx.mutation(file=_rel(ctx, path), partition=part.name, detail="file deleted",
                            where=f"segment {i + 1}/{len(part.segments)}")
    if kind == "truncate":
        new = ctx.rng.randrange(len(buf))
        os.truncate(path, new)
        return ctx.mutation(file=_rel(ctx, path), position=new, partition=part.name,
                            where=f"segment {i + 1}/{len(part.segments)}",
                            detail=f"truncated from {len(buf)} to {new} bytes")
    if kind == "append":
        data = bytes(ctx.rng.randrange(256) for _ in range(ctx.rng.choice([1, 17, 34])))
        with open(path, "ab") as f:
            f.write(data)
        return ctx.mutation(file=_rel(ctx, path), position=len(buf), partition=part.name,
                            where=f"segment {i + 1}/{len(part.segments)}",
                            detail=f"{len(data)} bytes appended")
    if kind == "entry" and len(buf) >= 34:
        e = ctx.rng.randrange(len(buf) // 34)
        which, at = ctx.rng.choice([("producerId", 2), ("firstOffset", 10), ("lastOffset", 18),
                                    ("lastStableOffset", 26)])
        old = struct.unpack_from(">q", buf, e * 34 + at)[0]
        new = _wrap(ctx.rng.choice([old + 1, old - 1, old + 7, old - 7, -1, INT64_MAX]), 64)
        struct.pack_into(">q", buf, e * 34 + at, new)
        path.write_bytes(buf)
        return ctx.mutation(file=_rel(ctx, path), position=e * 34 + at, partition=part.name,
                            where=f"segment {i + 1}/{len(part.segments)}",
                            detail=f"entry {e}: {which} {old} -> {new}")
    pos = ctx.rng.randrange(len(buf))
    n = min(ctx.rng.randint(1, 16), len(buf) - pos)
    buf[pos:pos + n] = bytes(ctx.rng.randrange(256) for _ in range(n))
    path.write_bytes(buf)
    return ctx.mutation(file=_rel(ctx, path), position=pos, partition=part.name,
                        where=f"segment {i + 1}/{len(part.segments)}",
                        detail=f"{n} random bytes")


# -- checkpoints and other small files ------------------------------------------------------------

def _text_garbage(ctx: Ctx, path: Path) -> tuple[int | None, str]:
    """Damage a small text file; (position, what was done)."""
    buf = _read(path)
    kind = ctx.rng.choice(["flip", "non-utf8", "truncate", "empty", "insert", "digit",
                           "huge", "negative", "count", "version", "line"])
    if kind == "flip" and buf:
        pos = ctx.rng.randrange(len(buf))
        old = buf[pos]
        buf[pos] ^= 1 << ctx.rng.randrange(8)
        path.write_bytes(buf)
        return pos, f"bit flipped: {old:#04x} -> {buf[pos]:#04x}"
    if kind == "non-utf8":
        pos = ctx.rng.randrange(len(buf) + 1)
        bad = ctx.rng.choice([b"\xff", b"\xc3\x28", b"\xfe\xff", b"\x80"])
        buf[pos:pos] = bad
        path.write_bytes(buf)
        return pos, f"invalid UTF-8 {bad.hex()} inserted"
    if kind == "truncate" and buf:
        pos = ctx.rng.randrange(len(buf))
        os.truncate(path, pos)
        return pos, f"truncated from {len(buf)} to {pos} bytes"
    if kind == "empty":
        path.write_bytes(b"")
        return 0, "emptied"
    if kind == "digit":
        digits = [k for k, c in enumerate(buf) if 0x30 <= c <= 0x39]
        if digits:
            pos = ctx.rng.choice(digits)
            old = buf[pos]
            buf[pos] = 0x30 + (old - 0x30 + ctx.rng.randint(1, 9)) % 10
            path.write_bytes(buf)
            return pos, f"digit {chr(old)} -> {chr(buf[pos])}"
    if kind in ("huge", "negative"):
        lines = buf.decode("utf-8", "replace").split("\n")
        if len(lines) > 2 and lines[2].strip():
            fields = lines[2].split(" ")
            fields[-1] = "99999999999999999999999" if kind == "huge" else "-5"
            lines[2] = " ".join(fields)
            path.write_bytes("\n".join(lines).encode())
            return None, f"last field of the first entry set to {fields[-1]}"
    if kind == "count":
        lines = buf.decode("utf-8", "replace").split("\n")
        if len(lines) > 1 and lines[1].strip().isdigit():
            lines[1] = str(int(lines[1]) + ctx.rng.choice([1, -1, 1000]))
            path.write_bytes("\n".join(lines).encode())
            return None, f"entry count set to {lines[1]}"
    if kind == "version":
        lines = buf.decode("utf-8", "replace").split("\n")
        lines[0] = ctx.rng.choice(["1", "-1", "x", ""])
        path.write_bytes("\n".join(lines).encode())
        return 0, f"version line set to {lines[0]!r}"
    pos = ctx.rng.randrange(len(buf) + 1)
    junk = ctx.rng.choice([b"\n", b" ", b"garbage", b"\x00", b"\n1 2 3\n", b"\t"])
    buf[pos:pos] = junk
    path.write_bytes(buf)
    return pos, f"{junk!r} inserted"


def _partition_file(ctx: Ctx, name: str):
    parts = _partitions(ctx, lambda p: name in p.files)
    part = ctx.rng.choice(parts)
    return part, ctx.data / part.name / name


def op_leader_epoch_checkpoint(ctx):
    part, path = _partition_file(ctx, "leader-epoch-checkpoint")
    if ctx.rng.random() < 0.1:
        path.unlink()
        return ctx.mutation(file=_rel(ctx, path), partition=part.name, detail="file deleted")
    pos, detail = _text_garbage(ctx, path)
    return ctx.mutation(file=_rel(ctx, path), position=pos, partition=part.name, detail=detail)


def op_partition_metadata(ctx):
    part, path = _partition_file(ctx, "partition.metadata")
    if ctx.rng.random() < 0.2:
        path.write_bytes(b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA")
        return ctx.mutation(file=_rel(ctx, path), partition=part.name,
                            detail="topic id set to the all-zero UUID")
    pos, detail = _text_garbage(ctx, path)
    return ctx.mutation(file=_rel(ctx, path), position=pos, partition=part.name, detail=detail)


def op_snapshot(ctx):
    parts = _partitions(ctx, lambda p: p.snapshots)
    part = ctx.rng.choice(parts)
    offset = ctx.rng.choice(part.snapshots)
    path = ctx.data / part.name / f"{offset:020d}.snapshot"
    kind = ctx.rng.choice(["garbage", "truncate", "zero", "delete", "rename", "append"])
    buf = _read(path)
    if kind == "garbage" and buf:
        pos = ctx.rng.randrange(len(buf))
        n = min(ctx.rng.randint(1, 8), len(buf) - pos)
        buf[pos:pos + n] = bytes(ctx.rng.randrange(256) for _ in range(n))
        path.write_bytes(buf)
        return ctx.mutation(file=_rel(ctx, path), position=pos, partition=part.name,
                            detail=f"{n} random bytes")
    if kind == "truncate" and buf:
        pos = ctx.rng.randrange(len(buf))
        os.truncate(path, pos)
        return ctx.mutation(file=_rel(ctx, path), position=pos, partition=part.name,
                            detail=f"truncated from {len(buf)} to {pos} bytes")
    if kind == "zero":
        path.write_bytes(bytes(len(buf)))
        return ctx.mutation(file=_rel(ctx, path), partition=part.name, detail="zeroed")
    if kind == "rename":
        new = ctx.rng.choice([part.log_end_offset + ctx.rng.randint(1, 1000), offset + 1,
                              max(0, offset - 1)])
        target = ctx.data / part.name / f"{new:020d}.snapshot"
        if target.exists():
            new = part.log_end_offset + 5000
            target = ctx.data / part.name / f"{new:020d}.snapshot"
        path.rename(target)
        return ctx.mutation(file=_rel(ctx, path), partition=part.name,
                            detail=f"renamed to {target.name}")
    if kind == "append":
        with open(path, "ab") as f:
            f.write(bytes(ctx.rng.randrange(256) for _ in range(ctx.rng.randint(1, 40))))
        return ctx.mutation(file=_rel(ctx, path), position=len(buf), partition=part.name,
                            detail="random bytes appended")
    path.unlink()
    return ctx.mutation(file=_rel(ctx, path), partition=part.name, detail="file deleted")


_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def parse_offset_checkpoint(data: bytes) -> dict[tuple[str, int], int] | None:
    """Kafka's strict reading of an offset checkpoint (CheckpointFile), or None if it fails.
    Used to know what a damaged log-start-offset-checkpoint still says."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        return {}
    try:
        if not _JAVA_INT.fullmatch(lines[0].strip()) or int(lines[0].strip()) != 0:
            return None
        if len(lines) < 2:
            return {}
        if not _JAVA_INT.fullmatch(lines[1].strip()):
            return None
        count = int(lines[1].strip())
        out = {}
        for line in lines[2:]:
            topic, partition, offset = line.strip().split()
            if not (_JAVA_INT.fullmatch(partition) and _JAVA_INT.fullmatch(offset)):
                return None
            partition, offset = int(partition), int(offset)
            if not (0 <= partition <= INT32_MAX and INT64_MIN <= offset <= INT64_MAX):
                return None       # Java's parseInt / parseLong would fail
            out[(topic, partition)] = offset
        if len(out) != count or len(lines) - 2 != count:
            return None
        return out
    except ValueError:
        return None


def op_data_dir_checkpoint(ctx):
    names = [n for n in ctx.original.data_dir_files]
    if not names:
        raise NotApplicable("no data-directory checkpoint")
    name = ctx.rng.choice(names)
    path = ctx.data / name
    if ctx.rng.random() < 0.1:
        path.unlink()
        pos, detail = None, "file deleted"
    else:
        pos, detail = _text_garbage(ctx, path)
    mutation = ctx.mutation(file=name, position=pos, detail=detail)
    if name == "log-start-offset-checkpoint":
        before = ctx.original.log_start_checkpoint
        after = parse_offset_checkpoint(path.read_bytes()) if path.exists() else {}
        if after is None:
            mutation.unreadable_checkpoint = True
        else:
            known = {(p.topic, p.partition) for p in ctx.original.partitions.values()}
            changed = {k: after.get(k) for k in known if after.get(k) != before.get(k)}
            if changed:
                mutation.semantic_start = {k: after.get(k, 0) for k in known}
    return mutation


# -- whole files ----------------------------------------------------------------------------------

def _segment_files(part, seg) -> list[str]:
    return [n for n in seg.files]


def _rename_segment_files(ctx: Ctx, part, seg, new_base: int, names=None) -> list[str]:
    done = []
    for name in names or _segment_files(part, seg):
        suffix = name[name.index("."):]
        target = ctx.data / part.name / f"{new_base:020d}{suffix}"
        (ctx.data / part.name / name).rename(target)
        done.append(f"{name} -> {target.name}")
    return done


def _free_base(ctx: Ctx, part, choices: list[int]) -> int:
    taken = {s.base_offset for s in part.segments}
    free = [c for c in choices if c >= 0 and c not in taken]
    if not free:
        raise NotApplicable("no free base offset")
    return ctx.rng.choice(free)


def op_delete_log(ctx):
    """A `.log` deleted, its index files kept."""
    part, i, seg = _pick_segment(ctx)
    path = _log_path(ctx, part, seg)
    path.unlink()
    return ctx.mutation(file=_rel(ctx, path), partition=part.name,
                        where=f"segment {i + 1}/{len(part.segments)}",
                        detail=".log deleted (indexes kept)")


def op_delete_middle_segment(ctx):
    part, i, seg = _pick_segment(ctx, lambda p, i, s: 0 < i < len(p.segments) - 1)
    for name in _segment_files(part, seg):
        (ctx.data / part.name / name).unlink()
    return ctx.mutation(file=f"{part.name}/{seg.log_name}", partition=part.name,
                        where=f"segment {i + 1}/{len(part.segments)}",
                        detail=f"segment {seg.base_offset} deleted ({', '.join(seg.files)})")


def _has_evidence_beyond(part, offset: int) -> bool:
    return any(s > offset for s in part.snapshots)


def op_delete_last_segment(ctx):
    """The last segment deleted where the directory still says the log went further (a producer
    snapshot beyond the new end)."""
    def fits(p, i, s):
        return (i == len(p.segments) - 1 and i > 0
                and _has_evidence_beyond(p, p.segments[-1].base_offset))
    part, i, seg = _pick_segment(ctx, fits)
    for name in _segment_files(part, seg):
        (ctx.data / part.name / name).unlink()
    return ctx.mutation(file=f"{part.name}/{seg.log_name}", partition=part.name,
                        where=f"segment {i + 1}/{len(part.segments)}",
                        detail=f"last segment {seg.base_offset} deleted; snapshots at "
                               f"{list(part.snapshots)} remain")


def op_duplicate_segment(ctx):
    part, i, seg = _pick_segment(ctx, lambda p, i, s: s.batches)
    next_base = part.segments[i + 1].base_offset if i + 1 < len(part.segments) else None
    inside = [seg.base_offset + 1] + ([next_base - 1] if next_base else [])
    new = _free_base(ctx, part, ctx.rng.choice([
        [part.log_end_offset + ctx.rng.randint(0, 100)], inside]))
    copied = []
    for name in _segment_files(part, seg):
        suffix = name[name.index("."):]
        target = ctx.data / part.name / f"{new:020d}{suffix}"
        shutil.copy(ctx.data / part.name / name, target)
        copied.append(target.name)
    return ctx.mutation(file=f"{part.name}/{seg.log_name}", partition=part.name,
                        where=f"segment {i + 1}/{len(part.segments)}",
                        detail=f"segment {seg.base_offset} copied as {', '.join(copied)}")


def op_rename_segment(ctx):
    part, i, seg = _pick_segment(ctx, lambda p, i, s: s.batches)
    only_log = ctx.rng.random() < 0.4
    k = ctx.rng.randint(2, 500)
    new = _free_base(ctx, part, [seg.base_offset + 1, seg.base_offset - 1, seg.base_offset + k,
                                 seg.base_offset - k, part.log_end_offset + k, 0,
                                 seg.batches[-1].last_offset + 1])
    names = [seg.log_name] if only_log else None
    done = _rename_segment_files(ctx, part, seg, new, names)
    return ctx.mutation(file=f"{part.name}/{seg.log_name}", partition=part.name,
                        where=f"segment {i + 1}/{len(part.segments)}" + (", .log only"
                                                                          if only_log else ""),
                        detail="renamed: " + "; ".join(done))


def op_swap_segments(ctx):
    parts = _partitions(ctx, lambda p: len(p.segments) >= 2)
    part = ctx.rng.choice(parts)
    i, j = sorted(ctx.rng.sample(range(len(part.segments)), 2))
    a, b = part.segments[i], part.segments[j]
    tmp = 10**18 + ctx.rng.randint(0, 1000)
    _rename_segment_files(ctx, part, a, tmp)
    moved = [f"{tmp:020d}{n[n.index('.'):]}" for n in a.files]
    _rename_segment_files(ctx, part, b, a.base_offset)
    for name in moved:
        suffix = name[name.index("."):]
        (ctx.data / part.name / name).rename(ctx.data / part.name / f"{b.base_offset:020d}{suffix}")
    return ctx.mutation(file=f"{part.name}/{a.log_name}", partition=part.name,
                        where=f"segments {i + 1} and {j + 1} of {len(part.segments)}",
                        detail=f"files of segments {a.base_offset} and {b.base_offset} swap names")


def _any_file(ctx: Ctx):
    choices = [f for f in ctx.original.data_dir_files]
    for p in ctx.original.partitions.values():
        choices += [f"{p.name}/{n}" for n in p.files]
    logs = [c for c in choices if c.endswith(".log")]
    # half of the time a .log, else any file
    return ctx.rng.choice(logs if logs and ctx.rng.random() < 0.5 else choices)


def _replaced(ctx: Ctx, rel: str, what: str) -> Mutation:
    part_name = rel.split("/")[0] if "/" in rel else None
    tail_from = None
    if part_name and rel.endswith(".log") and what == "an empty file":
        part = ctx.original.partitions[part_name]
        if rel.endswith(part.segments[-1].log_name):
            tail_from = 0
    return ctx.mutation(file=rel, partition=part_name, detail=f"replaced by {what}",
                        where=rel.rsplit(".", 1)[-1] if "." in rel else rel.split("/")[-1],
                        tail_from=tail_from)


def op_replace_dir(ctx):
    rel = _any_file(ctx)
    path = ctx.data / rel
    path.unlink()
    path.mkdir()
    return _replaced(ctx, rel, "a directory")


def op_replace_fifo(ctx):
    rel = _any_file(ctx)
    path = ctx.data / rel
    path.unlink()
    os.mkfifo(path)
    return _replaced(ctx, rel, "a FIFO")


def op_replace_symlink(ctx):
    rel = _any_file(ctx)
    path = ctx.data / rel
    path.unlink()
    path.symlink_to(ctx.data / "no-such-dir" / "no-such-file")
    return _replaced(ctx, rel, "a dangling symlink")


def op_replace_empty(ctx):
    rel = _any_file(ctx)
    path = ctx.data / rel
    path.write_bytes(b"")
    return _replaced(ctx, rel, "an empty file")


# -- the catalogue --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Operator:
    name: str
    group: str
    weight: float
    apply: object
    applies: object = None      # Original -> bool (None: always)


def _any_batch(pred):
    return lambda o: any(pred(b) for p in o.partitions.values() for _, b in p.batches)


def _any_segment_file(suffix, min_size=0):
    def check(o):
        for p in o.partitions.values():
            for s in p.segments:
                name = f"{s.base_offset:020d}{suffix}"
                if name in s.files and _size_in_original(o, p, name) >= min_size:
                    return True
        return False
    return check


def _size_in_original(o, p, name) -> int:
    return (Path(o.data) / p.name / name).stat().st_size


_has_v2 = _any_batch(_v2)
_has_batches = _any_batch(lambda b: True)
_has_log_bytes = (lambda o: any(s.size > 0 for p in o.partitions.values() for s in p.segments))
_has_legacy = _any_batch(_legacy)

OPERATORS: dict[str, Operator] = {op.name: op for op in [
    Operator("log.flip", "log bytes", 6, op_log_flip, _has_log_bytes),
    Operator("log.set", "log bytes", 4, op_log_set, _has_log_bytes),
    Operator("log.insert", "log bytes", 4, op_log_insert, _has_log_bytes),
    Operator("log.delete", "log bytes", 4, op_log_delete, _has_log_bytes),
    Operator("log.zero", "log bytes", 2, op_log_zero_range, _has_log_bytes),
    Operator("log.truncate", "log bytes", 4, op_log_truncate, _has_log_bytes),
    Operator("log.truncate_at_batch", "log bytes", 2, op_log_truncate_at_batch,
             lambda o: any(len(s.batches) >= 2 for p in o.partitions.values()
                           for s in p.segments)),
    Operator("log.append", "log bytes", 2, op_log_append),
    Operator("log.dup_batch", "log bytes", 2, op_log_dup_batch, _has_batches),
    Operator("log.swap_batches", "log bytes", 2, op_log_swap_batches,
             lambda o: any(len(s.batches) >= 2 for p in o.partitions.values()
                           for s in p.segments)),
    Operator("v2.baseOffset", "v2 header", 6, op_v2_base_offset, _has_v2),
    Operator("v2.batchLength", "v2 header", 5, op_v2_batch_length, _has_v2),
    Operator("v2.leaderEpoch", "v2 header", 1, op_v2_leader_epoch, _has_v2),
    Operator("v2.magic", "v2 header", 2, op_v2_magic, _has_v2),
    Operator("v2.crc", "v2 header", 1, op_v2_crc, _has_v2),
    Operator("v2.crcField", "v2 header", 3, op_v2_crc_field, _has_v2),
    Operator("v2.attributes.recrc", "v2 header", 3, op_v2_attributes_recrc, _has_v2),
    Operator("v2.lastOffsetDelta.recrc", "v2 header", 3, op_v2_last_offset_delta_recrc,
             _has_v2),
    Operator("v2.recordsCount.recrc", "v2 header", 3, op_v2_records_count_recrc, _has_v2),
    Operator("v2.record.recrc", "v2 records", 4, op_v2_record_recrc,
             _any_batch(lambda b: b.magic == 2 and b.codec == 0 and not b.is_control
                        and b.records > 0)),
    Operator("legacy.offset", "legacy", 4, op_legacy_offset, _has_legacy),
    Operator("legacy.messageSize", "legacy", 4, op_legacy_message_size, _has_legacy),
    Operator("legacy.header", "legacy", 2, op_legacy_header, _has_legacy),
    Operator("legacy.recrc", "legacy", 3, op_legacy_recrc, _has_legacy),
    Operator("index.garbage", "index", 1.5, op_index_garbage, _any_segment_file(".index", 1)),
    Operator("index.zero", "index", 1, op_index_zero, _any_segment_file(".index", 1)),
    Operator("index.truncate", "index", 1, op_index_truncate, _any_segment_file(".index", 1)),
    Operator("index.append", "index", 1, op_index_append, _any_segment_file(".index")),
    Operator("index.entry", "index", 2.5, op_index_entry, _any_segment_file(".index", 8)),
    Operator("index.delete", "index", 0.5, op_index_delete, _any_segment_file(".index")),
    Operator("timeindex.garbage", "index", 1.5, op_timeindex_garbage,
             _any_segment_file(".timeindex", 1)),
    Operator("timeindex.zero", "index", 1, op_timeindex_zero, _any_segment_file(".timeindex", 1)),
    Operator("timeindex.truncate", "index", 1, op_timeindex_truncate,
             _any_segment_file(".timeindex", 1)),
    Operator("timeindex.append", "index", 1, op_timeindex_append, _any_segment_file(".timeindex")),
    Operator("timeindex.entry", "index", 2.5, op_timeindex_entry,
             _any_segment_file(".timeindex", 12)),
    Operator("timeindex.delete", "index", 0.5, op_timeindex_delete,
             _any_segment_file(".timeindex")),
    Operator("txnindex.damage", "index", 2, op_txnindex_damage, _any_segment_file(".txnindex")),
    Operator("checkpoint.leaderEpoch", "small files", 1.5, op_leader_epoch_checkpoint,
             lambda o: any("leader-epoch-checkpoint" in p.files for p in o.partitions.values())),
    Operator("checkpoint.partitionMetadata", "small files", 1, op_partition_metadata,
             lambda o: any("partition.metadata" in p.files for p in o.partitions.values())),
    Operator("checkpoint.snapshot", "small files", 1.5, op_snapshot,
             lambda o: any(p.snapshots for p in o.partitions.values())),
    Operator("checkpoint.dataDir", "small files", 1.5, op_data_dir_checkpoint,
             lambda o: bool(o.data_dir_files)),
    Operator("file.delete_log", "whole files", 1.5, op_delete_log),
    Operator("file.delete_middle_segment", "whole files", 1.5, op_delete_middle_segment,
             lambda o: any(len(p.segments) >= 3 for p in o.partitions.values())),
    Operator("file.delete_last_segment", "whole files", 1.5, op_delete_last_segment,
             lambda o: any(len(p.segments) >= 2 and _has_evidence_beyond(
                 p, p.segments[-1].base_offset) for p in o.partitions.values())),
    Operator("file.duplicate_segment", "whole files", 1.5, op_duplicate_segment, _has_batches),
    Operator("file.rename_segment", "whole files", 2, op_rename_segment, _has_batches),
    Operator("file.swap_segments", "whole files", 1, op_swap_segments,
             lambda o: any(len(p.segments) >= 2 for p in o.partitions.values())),
    Operator("file.as_directory", "whole files", 0.6, op_replace_dir),
    Operator("file.as_fifo", "whole files", 0.3, op_replace_fifo),
    Operator("file.as_dangling_symlink", "whole files", 0.6, op_replace_symlink),
    Operator("file.as_empty", "whole files", 0.6, op_replace_empty),
]}


def applicable(operator: str, original) -> bool:
    op = OPERATORS[operator]
    return op.applies is None or bool(op.applies(original))


def applicable_pairs(originals: dict) -> list[tuple[str, str]]:
    return [(o, op) for op in OPERATORS for o in sorted(originals)
            if applicable(op, originals[o])]


def make_mutant(spec: MutantSpec, original, dest: Path) -> Mutation:
    """Copy the original's data directory to `dest` (which must not exist) and damage it."""
    shutil.copytree(original.data, dest, symlinks=True)
    ctx = Ctx(spec, original, Path(dest))
    return OPERATORS[spec.operator].apply(ctx)


def generate_specs(originals: dict, count: int, seed: int) -> list[MutantSpec]:
    """`count` specs: operators drawn by weight, then an original the operator applies to."""
    rng = random.Random(seed)
    names = list(OPERATORS)
    by_op = {op: [o for o in sorted(originals) if applicable(op, originals[o])] for op in names}
    names = [n for n in names if by_op[n]]
    weights = [OPERATORS[n].weight for n in names]
    specs = []
    # every operator at least once, then by weight
    for i in range(count):
        op = names[i] if i < len(names) else rng.choices(names, weights)[0]
        specs.append(MutantSpec(rng.choice(by_op[op]), op, rng.getrandbits(32)))
    return specs
