"""Readers for the fixtures' inspect.txt files: what an independent decoder saw in each log.

Two dialects, both tab-separated with `#` comments:

kafka-clients (written by Kafka's own Java reader; see fixtures/kafka-clients/README.md)::

    batch   position baseOffset lastOffset magic codec recordCount|- isTransactional isControl
            producerId producerEpoch baseSequence partitionLeaderEpoch timestampType
            maxTimestamp checksum sizeInBytes
    record  offset timestamp keyHex|- valueHex|-|sha256:<hex>:len=N headersJSON
    control offset type coordinatorEpoch|-

kafka-real (written by kafka-python through fixtures/make_inspect.py)::

    segment   file size
    batch     file position baseOffset lastOffset magic codec recordCount isTransactional
              isControl producerId timestampType(0|1|-) maxTimestamp crc
    record    offset timestamp key value headersJSON
    index     file relativeOffset position
    timeindex file timestamp relativeOffset
    error     file position message

`-` is null, an empty field an empty key/value; values over 256 bytes are printed as digests.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

TIMESTAMP_TYPES = {"CreateTime": 0, "LogAppendTime": 1, "NoTimestampType": -1,
                   "0": 0, "1": 1, "-": -1}


class Digest(NamedTuple):
    """A key or value printed as `sha256:<hex>:len=N` because it was too long to print."""

    sha256: str
    length: int


class InspectRecord(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | Digest | None
    value: bytes | Digest | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp_type: int = 0     # of its batch: 0 CreateTime, 1 LogAppendTime, -1 none
    is_control: bool = False    # of its batch


class InspectControl(NamedTuple):
    offset: int
    type: str
    coordinator_epoch: int | None


class InspectBatch(NamedTuple):
    position: int
    base_offset: int
    last_offset: int
    magic: int
    codec: str
    record_count: int | None
    is_transactional: bool
    is_control: bool
    producer_id: int
    producer_epoch: int           # -1 where the dialect does not say
    base_sequence: int            # -1 where the dialect does not say
    partition_leader_epoch: int   # -1 where the dialect does not say
    timestamp_type: str
    max_timestamp: int
    checksum: int
    size: int | None              # None where the dialect does not say
    records: list[InspectRecord]
    controls: list[InspectControl]
    file: str | None = None       # the segment file (kafka-real dialect)


@dataclass
class Inspect:
    batches: list[InspectBatch] = field(default_factory=list)
    segments: dict[str, int] = field(default_factory=dict)          # file -> size (real)
    index: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    timeindex: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def same_bytes(expected: bytes | Digest | None, actual: bytes | None) -> bool:
    """Whether `actual` is what inspect.txt printed (hashing it when only a digest was printed)."""
    if isinstance(expected, Digest):
        return (actual is not None and len(actual) == expected.length
                and hashlib.sha256(actual).hexdigest() == expected.sha256)
    return expected == (None if actual is None else bytes(actual))


def _blob(text: str) -> bytes | Digest | None:
    if text == "-":
        return None
    if text.startswith("sha256:"):
        _, digest, length = text.split(":")
        if not length.startswith("len="):
            raise ValueError(f"bad digest field {text!r}")
        return Digest(digest, int(length[4:]))
    return bytes.fromhex(text)


def _optional_int(text: str) -> int | None:
    return None if text == "-" else int(text)


def _headers(text: str) -> tuple[tuple[str, bytes | None], ...]:
    return tuple((name, None if hexed is None else bytes.fromhex(hexed))
                 for name, hexed in json.loads(text))


def _batch(kind_fields: list[str], real: bool) -> InspectBatch:
    f = kind_fields
    if real:
        (file, position, base, last, magic, codec, count, txn, control, pid, ts_type, max_ts,
         crc) = f
        return InspectBatch(int(position), int(base), int(last), int(magic), codec,
                            _optional_int(count), txn == "1", control == "1", int(pid), -1, -1,
                            -1, ts_type, int(max_ts), int(crc), None, [], [], file)
    (position, base, last, magic, codec, count, txn, control, pid, epoch, seq, ple, ts_type,
     max_ts, checksum, size) = f
    return InspectBatch(int(position), int(base), int(last), int(magic), codec,
                        _optional_int(count), txn == "1", control == "1", int(pid), int(epoch),
                        int(seq), int(ple), ts_type, int(max_ts), int(checksum), int(size), [],
                        [])


def parse_inspect(path: Path) -> Inspect:
    """Parse either dialect (kafka-real files have `segment` lines)."""
    text = Path(path).read_text(encoding="utf-8")
    real = "\nsegment\t" in text or text.startswith("segment\t")
    out = Inspect()
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("# MISSING "):
            out.missing.append(line.split()[2].rstrip(":"))
        if not line or line.startswith("#"):
            continue
        kind, *f = line.split("\t")
        try:
            if kind == "batch":
                out.batches.append(_batch(f, real))
            elif kind == "record":
                b = out.batches[-1]
                b.records.append(InspectRecord(int(f[0]), int(f[1]), _blob(f[2]), _blob(f[3]),
                                               _headers(f[4]), TIMESTAMP_TYPES[b.timestamp_type],
                                               b.is_control))
            elif kind == "control":
                out.batches[-1].controls.append(
                    InspectControl(int(f[0]), f[1], _optional_int(f[2])))
            elif kind == "segment":
                out.segments[f[0]] = int(f[1])
            elif kind == "index":
                out.index.setdefault(f[0], []).append((int(f[1]), int(f[2])))
            elif kind == "timeindex":
                out.timeindex.setdefault(f[0], []).append((int(f[1]), int(f[2])))
            elif kind == "error":
                out.errors.append(line)
            else:
                raise ValueError(f"unknown line kind {kind!r}")
        except (ValueError, IndexError, KeyError) as exc:
            raise ValueError(f"{path}:{number}: cannot parse {line[:80]!r}: {exc}") from exc
    return out


def expected_records(case_dir: Path) -> list[InspectRecord]:
    """Every record of the case's `.log` segments, in offset order (KRaft .checkpoint excluded)."""
    inspect = parse_inspect(Path(case_dir) / "inspect.txt")
    return [r for b in inspect.batches if b.file is None or b.file.endswith(".log")
            for r in b.records]


def expected_counts(data_dir: Path) -> dict[tuple[str, int], int]:
    """(topic, partition) -> how many data records (control records left out) each partition
    of a fixture data directory holds, by its inspect.txt; partitions with none left out."""
    expected = {}
    for pdir in data_dir.iterdir():
        if (pdir / "inspect.txt").exists():
            topic, _, partition = pdir.name.rpartition("-")
            n = sum(1 for r in expected_records(pdir) if not r.is_control)
            if n:
                expected[(topic, int(partition))] = n
    return expected
