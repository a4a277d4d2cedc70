"""Reader for the fixtures' inspect.txt: what Kafka's own reader decoded from each `.log`.

Format (tab-separated; see shared/fixtures/kafka-clients/README.md)::

    batch   position baseOffset lastOffset magic codec recordCount|- isTransactional isControl
            producerId producerEpoch baseSequence partitionLeaderEpoch timestampType
            maxTimestamp checksum sizeInBytes
    record  offset timestamp keyHex|- valueHex|-|sha256:<hex>:len=N headersJSON
    control offset type coordinatorEpoch|-

`-` is null and an empty field is an empty key/value; long values are given by their sha256.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import NamedTuple


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
    producer_epoch: int
    base_sequence: int
    partition_leader_epoch: int
    timestamp_type: str
    max_timestamp: int
    checksum: int
    size: int
    records: list[InspectRecord]
    controls: list[InspectControl]


def same_bytes(expected: bytes | Digest | None, actual: bytes | None) -> bool:
    """Whether `actual` is what inspect.txt printed (hashing it when only a digest was printed)."""
    if isinstance(expected, Digest):
        return (actual is not None and len(actual) == expected.length
                and hashlib.sha256(actual).hexdigest() == expected.sha256)
    return expected == (None if actual is None else bytes(actual))


def _blob(field: str) -> bytes | Digest | None:
    if field == "-":
        return None
    if field.startswith("sha256:"):
        _, digest, length = field.split(":")
        if not length.startswith("len="):
            raise ValueError(f"bad digest field {field!r}")
        return Digest(digest, int(length[4:]))
    return bytes.fromhex(field)


def _optional_int(field: str) -> int | None:
    return None if field == "-" else int(field)


def parse_inspect(path: Path) -> list[InspectBatch]:
    batches: list[InspectBatch] = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        kind, *fields = line.split("\t")
        try:
            if kind == "batch":
                (position, base, last, magic, codec, count, txn, control, pid, epoch, seq, ple,
                 ts_type, max_ts, checksum, size) = fields
                batches.append(InspectBatch(
                    int(position), int(base), int(last), int(magic), codec, _optional_int(count),
                    txn == "1", control == "1", int(pid), int(epoch), int(seq), int(ple), ts_type,
                    int(max_ts), int(checksum), int(size), [], []))
            elif kind == "record":
                offset, timestamp, key, value, headers = fields
                parsed = tuple((name, None if hexed is None else bytes.fromhex(hexed))
                               for name, hexed in json.loads(headers))
                batches[-1].records.append(
                    InspectRecord(int(offset), int(timestamp), _blob(key), _blob(value), parsed))
            elif kind == "control":
                offset, control_type, coordinator_epoch = fields
                batches[-1].controls.append(
                    InspectControl(int(offset), control_type, _optional_int(coordinator_epoch)))
            else:
                raise ValueError(f"unknown line kind {kind!r}")
        except (ValueError, IndexError) as exc:
            raise ValueError(f"{path}:{number}: cannot parse {line[:80]!r}: {exc}") from exc
    return batches
