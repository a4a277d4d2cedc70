"""One decoder per `keyFormat`/`valueFormat`: a column of payloads -> (Arrow array, reasons).

    string          UTF-8 text
    json            JSON, into a given or inferred Spark type (json_values.py)
    avro            plain Avro, one schema (avro_values.py)
    confluent-avro  Schema Registry framing (wire_format.py), each payload with its writer
                    schema resolved to the reader schema; a JSON Schema reader decodes JSON

Every decoder is plain data plus parsed schemas rebuilt on unpickling, so it travels to the
executors with the read.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa
from pyspark.sql.types import DataType, StringType

from .avro_values import AvroDecoder, Decoded
from .json_values import JsonDecoder
from .schema_registry import AVRO
from .wire_format import binary_buffers, split_framed


class StringColumn:
    spark_type: DataType = StringType()

    def decode(self, payloads: pa.Array) -> tuple[Decoded, list | None]:
        try:
            return Decoded(payloads.cast(pa.string()), [None] * len(payloads)), None
        except pa.ArrowInvalid:
            pass
        values, errors = [], []
        for i, payload in enumerate(payloads.to_pylist()):
            try:
                values.append(None if payload is None else payload.decode("utf-8"))
                errors.append(None)
            except UnicodeDecodeError as err:
                values.append(None)
                errors.append(f"not UTF-8: {err.reason} at byte {err.start}")
        return Decoded(pa.array(values, pa.string()), errors), None


class JsonColumn:
    def __init__(self, spark_type: DataType):
        self.decoder = JsonDecoder(spark_type)
        self.spark_type = self.decoder.spark_type

    def decode(self, payloads: pa.Array) -> tuple[Decoded, list | None]:
        return self.decoder.decode(payloads.to_pylist()), None


class AvroColumn:
    """Plain Avro: every payload is one datum of `schema`."""

    def __init__(self, schema: str):
        self.decoder = AvroDecoder(schema, {None: schema})
        self.spark_type = self.decoder.spark_type

    def decode(self, payloads: pa.Array) -> tuple[Decoded, list | None]:
        data, offsets, valid = binary_buffers(payloads)
        starts = np.where(valid, offsets[:-1], -1).tolist()
        n = len(starts)
        return self.decoder.decode(data, starts, offsets[1:].tolist(), [None] * n,
                                   [None] * n), None


class ConfluentColumn:
    """Schema Registry framing; `schema_types` says which ids are Avro and which JSON Schema."""

    def __init__(self, reader_type: str, reader_id: int, reader_text: str,
                 writers: dict[int, str], schema_types: dict[int, str], spark_type=None):
        self.reader_type = reader_type
        self.schema_types = schema_types
        self.args = (reader_type, reader_id, reader_text, writers, schema_types, spark_type)
        if reader_type == AVRO:
            self.avro = AvroDecoder(reader_text, writers, reader_id, raw_bytes=True)
            self.spark_type = self.avro.spark_type
        else:
            self.json = JsonDecoder(spark_type)
            self.spark_type = self.json.spark_type

    def __getstate__(self):
        return self.args

    def __setstate__(self, state):
        self.__init__(*state)

    def decode(self, payloads: pa.Array) -> tuple[Decoded, list]:
        data, offsets, valid = binary_buffers(payloads)
        ids, starts, ends, errors = split_framed(data, offsets, valid)
        types = self.schema_types
        for i, schema_id in enumerate(ids):
            if schema_id is None:
                continue
            kind = types.get(schema_id)
            if kind != self.reader_type:
                starts[i] = -1
                errors[i] = f"unknown schema id {schema_id}" if kind is None else (
                    f"schema id {schema_id} is a {kind} schema, the reader schema "
                    f"{self.reader_type}")
        if self.reader_type == AVRO:
            return self.avro.decode(data, starts, ends, ids, errors), ids
        bodies = [None if s < 0 else data[s:e] for s, e in zip(starts, ends)]
        decoded = self.json.decode(bodies)
        return Decoded(decoded.array, _first(errors, decoded.errors)), ids


def _first(a: Sequence[str | None], b: Sequence[str | None]) -> list[str | None]:
    return [x if x is not None else y for x, y in zip(a, b)]

