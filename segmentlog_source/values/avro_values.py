"""Avro payloads -> one Arrow array of Spark's type for the reader schema, with fastavro.

Each payload is decoded with its writer schema and resolved to the reader schema (Avro's
reader-schema resolution: defaults fill added fields, promotions widen numbers). A payload that
does not decode, or decodes leaving bytes over (so it was not written with that schema), is
malformed: its row gets a reason instead of a value. The versions of the reader's own subject
are checked at load time (check_resolvable): one that cannot be resolved to the reader schema is
an error naming both schema ids; a payload of another subject's schema that cannot be resolved is
a malformed row.
"""

from __future__ import annotations

import gc
import io
import json
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import fastavro
import pyarrow as pa
from fastavro.read import SchemaResolutionError
from fastavro.utils import generate_many

from ..errors import MalformedValueError
from .avro_reading import converter, fastavro_schema, needs_conversion, prepared
from .avro_types import _parsed, arrow_types, named_types, spark_type

RESOLUTION_SAMPLES = 16     # generated records per writer schema in the load-time check
RAW_BYTES = "raw bytes"     # the writer "schema" of Confluent's unframed top-level bytes


class SchemaMismatchError(MalformedValueError):
    """A writer schema that cannot be resolved to the reader schema."""


@dataclass
class Decoded:
    """Decoded rows: `array` (the final Arrow type; null where a row has no value) and one
    error reason per row (None when the row decoded, or had no payload)."""

    array: pa.Array
    errors: list[str | None]


class AvroDecoder:
    """Decodes payloads written with the schemas of `writers` (schema id -> schema text; the
    key None for plain Avro, whose payloads carry no id) into values of `reader`."""

    def __init__(self, reader: str, writers: Mapping[int | None, str],
                 reader_id: int | None = None, raw_bytes: bool = False):
        self.raw_bytes = raw_bytes      # Confluent writes a top-level bytes value unframed
        self.unparsable: dict[int | None, str] = {}
        self.reader_text = reader
        self.reader_id = reader_id
        self.reader = fastavro_schema(reader)
        self.spark_type = spark_type(reader)
        self.build_type, self.final_type = arrow_types(reader)
        self.writer_texts = dict(writers)
        self.writers: dict[int | None, dict] = {}
        self.defaults: dict[int | None, dict] = {}     # writers read without resolution
        converts = needs_conversion(_parsed(reader))
        self.convert: Callable | None = converter(_parsed(reader)) if converts else None

    def __getstate__(self):
        return (self.reader_text, self.writer_texts, self.reader_id, self.raw_bytes)

    def __setstate__(self, state):
        self.__init__(*state)

    def writer(self, schema_id: int | None) -> dict | str | None:
        """The parsed writer schema of `schema_id`; None for an unknown id (a schema that does
        not parse is in `unparsable`, with why)."""
        parsed = self.writers.get(schema_id)
        if parsed is None and schema_id in self.writer_texts and \
                schema_id not in self.unparsable:
            text = self.writer_texts[schema_id]
            if self.raw_bytes and _parsed(text) in ("bytes", {"type": "bytes"}):
                self.writers[schema_id] = RAW_BYTES
                return RAW_BYTES
            try:
                parsed = self.reader if text == self.reader_text else fastavro_schema(text)
            except (ValueError, KeyError, TypeError, MalformedValueError) as err:
                self.unparsable[schema_id] = f"{type(err).__name__}: {err}"
                return None
            if parsed is not self.reader:
                defaults = defaults_only(_parsed(text), _parsed(self.reader_text))
                if defaults is not None:
                    self.defaults[schema_id] = defaults
            self.writers[schema_id] = parsed
        return parsed

    def check_resolvable(self, schema_id: int | None) -> None:
        """Raise SchemaMismatchError when generated records of writer `schema_id` do not
        resolve to the reader schema (at load time, before any task runs)."""
        writer = self.writer(schema_id)
        if schema_id in self.unparsable:
            raise SchemaMismatchError(f"schema id {schema_id} does not parse: "
                                      f"{self.unparsable[schema_id]}")
        if writer is None or writer is self.reader or writer is RAW_BYTES:
            return
        plain = fastavro_schema(self.writer_texts[schema_id], traps=False)
        for record in generate_many(plain, RESOLUTION_SAMPLES):
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, plain, record)
            buf.seek(0)
            try:
                fastavro.schemaless_reader(buf, writer, self.reader)
            except SchemaResolutionError as err:
                raise self._mismatch(schema_id, err) from None

    def _mismatch(self, schema_id, err) -> SchemaMismatchError:
        reader = "the reader schema" if self.reader_id is None else \
            f"reader schema id {self.reader_id}"
        return SchemaMismatchError(
            f"values written with schema id {schema_id} cannot be resolved to {reader}: {err}; "
            f"option readerSchemaId picks another reader schema")

    def decode(self, data: bytes, starts: Sequence[int], ends: Sequence[int],
               schema_ids: Sequence[int | None], errors: list[str | None]) -> Decoded:
        """Decode the bodies `data[starts[i]:ends[i]]` with writer `schema_ids[i]`. A row whose
        start is negative stays null: a null payload, or one the caller found malformed (its
        reason already in `errors`, which this completes)."""
        n = len(starts)
        values: list = [None] * n
        kwargs = {"return_named_type": True} if self.convert is not None else {}
        reader, convert, read = self.reader, self.convert, fastavro.schemaless_reader
        buf = io.BytesIO(data)      # one buffer for the batch: no copy per payload
        # The loop makes no reference cycles, but its many new dicts and lists keep waking the
        # cycle collector: ~25% of the time for records holding lists or records.
        collecting = gc.isenabled()
        gc.disable()
        try:
            self._loop(data, starts, ends, schema_ids, errors, values, buf, reader, convert,
                       read, kwargs)
        finally:
            if collecting:
                gc.enable()
        return Decoded(self._to_arrow(values, errors), errors)

    def _loop(self, data, starts, ends, schema_ids, errors, values, buf, reader, convert, read,
              kwargs) -> None:
        n = len(starts)
        defaults = self.defaults
        for i in range(n):
            start = starts[i]
            if start < 0:
                continue
            end = ends[i]
            writer = self.writers.get(schema_ids[i]) or self.writer(schema_ids[i])
            if writer is None:
                why = self.unparsable.get(schema_ids[i])
                errors[i] = f"unknown schema id {schema_ids[i]}" if why is None else \
                    f"schema id {schema_ids[i]} does not parse: {why}"
                continue
            if writer is RAW_BYTES:
                values[i] = data[start:end]
                continue
            buf.seek(start)
            try:
                shortcut = defaults.get(schema_ids[i])
                if shortcut is None:
                    value = read(buf, writer, None if writer is reader else reader, **kwargs)
                else:
                    value = read(buf, writer, None, **kwargs)
                    value.update(shortcut)
                if buf.tell() != end:
                    raise EOFError
                if convert is not None:
                    value = convert(value)
            except Exception:
                # Bodies lie back to back in `data`, so a short one reads on into the next:
                # decoded again alone, it says what it is.
                values[i], errors[i] = self._isolated(data[start:end], schema_ids[i], writer,
                                                      kwargs)
                continue
            values[i] = value

    def _isolated(self, body: bytes, schema_id, writer, kwargs) -> tuple[object, str | None]:
        """One body decoded on its own: (value, None), or (None, why it does not decode)."""
        buf = io.BytesIO(body)
        try:
            value = fastavro.schemaless_reader(
                buf, writer, None if writer is self.reader else self.reader, **kwargs)
        except SchemaResolutionError as err:     # a writer of another subject
            return None, str(self._mismatch(schema_id, err))
        except (EOFError, StopIteration):    # fastavro read past the end
            return None, f"truncated: the body ends before the record does ({len(body)} bytes)"
        except IndexError:      # past the end, or a union or enum index (the traps)
            return None, (f"truncated, or a union or enum index out of range ({len(body)} "
                          f"bytes)")
        except Exception as err:    # fastavro's other complaints (bad varint, UTF-8...)
            return None, f"not a value of its schema: {type(err).__name__}: {err}"
        left = len(body) - buf.tell()
        if left:
            return None, (f"{left} bytes left after the record: not written with schema id "
                          f"{schema_id}")
        if self.convert is not None:
            try:
                value = self.convert(value)
            except MalformedValueError as err:
                return None, str(err)
        return value, None

    def _to_arrow(self, values: list, errors: list[str | None]) -> pa.Array:
        """One Arrow array of the final type; a value Arrow refuses (a timestamp beyond
        Spark's range) makes its row malformed, found row by row after a bulk failure."""
        try:
            return self._cast(pa.array(values, type=self.build_type))
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
            pass
        for i, value in enumerate(values):
            if value is None:
                continue
            try:
                self._cast(pa.array([value], type=self.build_type))
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError,
                    ValueError) as err:
                errors[i] = f"a value Spark's type {self.spark_type.simpleString()} " \
                            f"cannot hold: {err}"
                values[i] = None
        return self._cast(pa.array(values, type=self.build_type))

    def _cast(self, array: pa.Array) -> pa.Array:
        return array if self.build_type == self.final_type else array.cast(self.final_type)


_PLAIN_DEFAULTS = {"boolean": bool, "int": int, "long": int, "float": (int, float),
                   "double": (int, float), "string": str}


def defaults_only(writer, reader) -> dict | None:
    """The defaults to add when `writer` differs from `reader` only by top-level fields the
    reader adds with a null or plain default (or fields it drops): then a payload is read with
    its writer schema alone and completed, ~1.6-1.9x faster than fastavro's resolution. None
    when resolution is needed (or anything is less simple than that)."""
    if not (isinstance(writer, dict) and isinstance(reader, dict)
            and writer.get("type") == reader.get("type") == "record"
            and writer.get("name") == reader.get("name")
            and writer.get("namespace") == reader.get("namespace")):
        return None
    top = writer.get("name")
    wrote = {k: _canonical(v) for k, v in named_types(writer).items()
             if k.rsplit(".", 1)[-1] != top}
    if any(wrote.get(name) != _canonical(v) for name, v in named_types(reader).items()
           if name.rsplit(".", 1)[-1] != top):
        return None      # a named type used anywhere must mean the same in both
    written = {f["name"]: f for f in writer["fields"]}
    added = {}
    for field in reader["fields"]:
        if field.get("aliases"):
            return None
        if field["name"] in written:
            if _canonical(written[field["name"]]["type"]) != _canonical(field["type"]):
                return None
            continue
        if "default" not in field:
            return None
        kind, default = field["type"], field["default"]
        if isinstance(kind, list):
            kind = kind[0] if kind else None
        if default is None and kind == "null":
            added[field["name"]] = None
        elif isinstance(kind, str) and _fits(kind, default):
            added[field["name"]] = float(default) if kind in ("float", "double") else default
        else:
            return None
    return added


def _fits(kind: str, default) -> bool:
    if kind == "boolean":
        return isinstance(default, bool)
    return (kind in _PLAIN_DEFAULTS and not isinstance(default, bool)
            and isinstance(default, _PLAIN_DEFAULTS[kind]))


def _canonical(schema) -> str:
    return json.dumps(prepared(schema), sort_keys=True)
