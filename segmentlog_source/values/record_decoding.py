"""Decoded columns added to a read's Arrow batches, under the `mode` of Spark's JSON reader.

    <side>_decoded  the key's or value's decoded struct (or string), one per decoded side
    <side>_error    PERMISSIVE only: why that row's payload did not decode (else null)

    PERMISSIVE      a malformed payload leaves <side>_decoded null and says why in <side>_error
    FAILFAST        the first malformed payload fails the task, naming topic, partition,
                    offset and schema id
    DROPMALFORMED   rows with a malformed payload are left out, and counted in the log

`kafka-internal` decodes a record's key and value together (the value's layout depends on the
key): key_decoded, value_decoded and one value_error. On `__cluster_metadata` it also nulls the
raw value of a record that holds a secret or does not decode (kafka_internal/columns.py).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark.sql.types import StringType, StructField

from ..errors import MalformedValueError
from .decoding_spec import DROPMALFORMED, FAILFAST, PERMISSIVE, SIDES
from .kafka_internal.columns import (KEY_TYPE, VALUE_TYPE, decode_internal,
                                     decode_metadata_columns)
from .kafka_internal.metadata_messages import CLUSTER_METADATA

PIECE_BYTES = 1 << 20        # payload bytes decoded into Python values at a time


class RecordDecoding:
    """The built decoders of a read (see values/build.py), applied batch by batch."""

    def __init__(self, mode: str, decoders: dict, internal: bool = False):
        self.mode = mode
        self.decoders = decoders          # side -> column decoder
        self.internal = internal

    def decoded_sides(self) -> list[str]:
        return list(SIDES) if self.internal else [s for s in SIDES if s in self.decoders]

    def error_sides(self) -> list[str]:
        if self.mode != PERMISSIVE:
            return []
        return ["value"] if self.internal else self.decoded_sides()

    def fields(self) -> list[StructField]:
        """The Spark columns this decoding adds, after the source's own."""
        out = [StructField(f"{side}_decoded", self._spark_type(side), True)
               for side in self.decoded_sides()]
        return out + [StructField(f"{side}_error", StringType(), True)
                      for side in self.error_sides()]

    def _spark_type(self, side: str):
        if self.internal:
            return KEY_TYPE if side == "key" else VALUE_TYPE
        return self.decoders[side].spark_type

    def apply(self, batch: pa.RecordBatch, topic: str, partition: int
              ) -> tuple[pa.RecordBatch, int]:
        """`batch` with the decoded columns, and how many malformed rows were dropped."""
        arrays, errors, ids = self._decode(batch, topic)
        if "raw_value" in arrays:     # __cluster_metadata: values that hold secrets hidden
            columns = list(batch.columns)
            columns[batch.schema.get_field_index("value")] = arrays.pop("raw_value")
            batch = pa.RecordBatch.from_arrays(columns, schema=batch.schema)
        bad = np.zeros(batch.num_rows, dtype=bool)
        for side, reasons in errors.items():
            bad |= np.fromiter((r is not None for r in reasons), bool, batch.num_rows)
        if bad.any() and self.mode == FAILFAST:
            row = int(np.flatnonzero(bad)[0])
            raise self._failure(batch, topic, partition, row, errors, ids)
        names = batch.schema.names + [f"{s}_decoded" for s in self.decoded_sides()]
        columns = batch.columns + [arrays[s] for s in self.decoded_sides()]
        for side in self.error_sides():
            names.append(f"{side}_error")
            columns.append(pa.array(errors.get(side, [None] * batch.num_rows), pa.string()))
        out = pa.RecordBatch.from_arrays(columns, names=names)
        dropped = 0
        if self.mode == DROPMALFORMED and bad.any():
            dropped = int(bad.sum())
            out = out.filter(pa.array(~bad))
        return out, dropped

    def _decode(self, batch: pa.RecordBatch, topic: str) -> tuple[dict, dict, dict]:
        """Per side: the decoded array, the reasons and the schema ids. Decoded Python values
        can take a hundred times their encoded bytes (arrays of small records), so the batch
        is decoded PIECE_BYTES of payload at a time, each piece into Arrow before the next."""
        pieces = [self._decode_piece(batch.slice(start, length), topic)
                  for start, length in _pieces(batch)]
        if len(pieces) == 1:
            return pieces[0]
        arrays = {side: pa.concat_arrays([p[0][side] for p in pieces]) for side in pieces[0][0]}
        errors = {side: [r for p in pieces for r in p[1][side]] for side in pieces[0][1]}
        ids = {side: (None if pieces[0][2][side] is None else
                      [x for p in pieces for x in p[2][side]]) for side in pieces[0][2]}
        return arrays, errors, ids

    def _decode_piece(self, batch: pa.RecordBatch, topic: str) -> tuple[dict, dict, dict]:
        arrays, errors, ids = {}, {}, {}
        if self.internal and topic == CLUSTER_METADATA:
            key, value, reasons, raw = decode_metadata_columns(batch.column("value"))
            arrays["key"], arrays["value"], errors["value"] = key, value, reasons
            arrays["raw_value"] = raw
        elif self.internal:
            key, value, reasons = decode_internal(topic, batch.column("key"),
                                                  batch.column("value"))
            arrays["key"], arrays["value"], errors["value"] = key, value, reasons
        else:
            for side, decoder in self.decoders.items():
                decoded, ids[side] = decoder.decode(batch.column(side))
                arrays[side], errors[side] = decoded.array, decoded.errors
        return arrays, errors, ids

    def _failure(self, batch, topic, partition, row, errors, ids) -> MalformedValueError:
        offset = batch.column("offset")[row].as_py()
        for side, reasons in errors.items():
            if reasons[row] is not None:
                schema_id = (ids.get(side) or [None] * batch.num_rows)[row]
                sid = "" if schema_id is None else f", schema id {schema_id}"
                return MalformedValueError(
                    f"topic {topic} partition {partition} offset {offset}{sid}: the {side} "
                    f"does not decode: {reasons[row]} (mode FAILFAST; mode PERMISSIVE keeps "
                    f"the row with the reason in {side}_error, DROPMALFORMED drops it)")
        raise AssertionError("no malformed side in a malformed row")


def _pieces(batch: pa.RecordBatch) -> list[tuple[int, int]]:
    """(start, length) row ranges of at most PIECE_BYTES of key and value bytes (and at least
    one row)."""
    n = batch.num_rows
    sizes = np.zeros(n, np.int64)
    for name in SIDES:
        column = batch.column(name)
        if n and column.buffers()[1] is not None:
            offsets = np.frombuffer(column.buffers()[1], np.int32, n + 1, column.offset * 4)
            sizes += np.diff(offsets.astype(np.int64))
    if int(sizes.sum()) <= PIECE_BYTES:
        return [(0, n)]
    out, start, total = [], 0, 0
    for i, size in enumerate(sizes.tolist()):
        if total + size > PIECE_BYTES and i > start:
            out.append((start, i - start))
            start, total = i, 0
        total += size
    out.append((start, n - start))
    return out
