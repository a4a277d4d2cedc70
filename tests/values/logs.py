"""Partition directories for the value tests, written with kafka-python's batch builder (not
segmentlog's encoder), and Schema Registry payloads framed by hand: magic 0, the schema id as
int32 big-endian, then fastavro's Avro binary."""

from __future__ import annotations

import io
import json
from pathlib import Path

import fastavro
from kafka.record.default_records import DefaultRecordBatchBuilder

BASE_TIMESTAMP = 1_700_000_000_000


def framed(schema_id: int, schema, datum) -> bytes:
    buf = io.BytesIO()
    buf.write(b"\x00" + schema_id.to_bytes(4, "big"))
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), datum)
    return buf.getvalue()


def write_partition(data_dir: Path, topic: str, records, partition: int = 0,
                    per_batch: int = 20) -> Path:
    """`records`: (key, value) pairs, offsets from 0."""
    path = data_dir / f"{topic}-{partition}"
    path.mkdir(parents=True, exist_ok=True)
    out = bytearray()
    records = list(records)
    for start in range(0, len(records), per_batch):
        builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                            producer_id=-1, producer_epoch=-1,
                                            base_sequence=-1, batch_size=1 << 30)
        for i, (key, value) in enumerate(records[start:start + per_batch]):
            builder.append(i, timestamp=BASE_TIMESTAMP + start + i, key=key, value=value,
                           headers=[])
        batch = bytearray(builder.build())
        batch[0:8] = start.to_bytes(8, "big")
        out += batch
    (path / "00000000000000000000.log").write_bytes(bytes(out))
    return path


def schema_record(subject: str, version: int, schema_id: int, schema, *, deleted=False,
                  schema_type: str | None = None, references=None):
    key = {"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}
    value = {"subject": subject, "version": version, "id": schema_id,
             "schema": schema if isinstance(schema, str) else json.dumps(schema),
             "deleted": deleted}
    if schema_type:
        value["schemaType"] = schema_type
    if references:
        value["references"] = references
    return json.dumps(key).encode(), json.dumps(value).encode()


def noop():
    return json.dumps({"keytype": "NOOP", "magic": 0}).encode(), None


def write_registry(data_dir: Path, records) -> Path:
    """A `_schemas-0` partition holding `records` ((key, value) JSON bytes)."""
    return write_partition(data_dir, "_schemas", records)
