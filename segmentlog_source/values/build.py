"""From the decoding options to the decoders of one read, on the driver, at load time.

For `confluent-avro` the reader schema is the newest version of the subjects of the topics
read (`<topic>-value`, `<topic>-key`), or the one `readerSchemaId` names. All topics of a read
share one decoded column, so their newest schemas must be the same schema; each version of those
subjects must resolve to the reader schema, which is checked here, before any task runs (with
`readerSchemaId` the user has picked the reader: payloads that do not resolve to it are
malformed rows).
"""

from __future__ import annotations

import json
import logging
from typing import Sequence

from ..errors import BadOptionError, MalformedValueError, NeedsNewerPySparkError
from ..format.record_decoder import ColumnarDecoder
from ..storage.io.filesystem import filesystem_for
from ..storage.log.log_directory import find_partitions
from ..storage.log.partition_log import PartitionLog
from .avro_types import spark_type
from .column_decoders import AvroColumn, ConfluentColumn, JsonColumn, StringColumn
from .ddl import DDLError, parse_schema
from .json_values import infer_type, json_schema_type
from .decoding_spec import (AVRO, CONFLUENT_AVRO, JSON, KAFKA_INTERNAL, STRING, DecodingSpec,
                            SideSpec)
from .record_decoding import RecordDecoding
from .registry_sources import load_registry
from .schema_registry import AVRO as AVRO_SCHEMA
from .schema_registry import JSON_SCHEMA, PROTOBUF, SchemaRegistry

log = logging.getLogger("segmentlog")

INFERENCE_SAMPLE = 1000       # values read to infer a JSON type when no schema is given
_FORMAT_OPTION = {"key": "keyFormat", "value": "valueFormat"}
_SCHEMA_OPTION = {"key": "keySchema", "value": "valueSchema"}
_READER_OPTION = {"key": "keyReaderSchemaId", "value": "readerSchemaId"}


def build_decoding(spec: DecodingSpec, topics: Sequence[str], paths: Sequence[str],
                   config=None) -> RecordDecoding | None:
    """The decoders for a read of `topics` (those selected under `paths`)."""
    if not spec.active():
        return None
    if spec.value.format == KAFKA_INTERNAL:
        return RecordDecoding(spec.mode, {}, internal=True)
    registry: list[SchemaRegistry] = []      # loaded once, when a side needs it
    decoders = {}
    for side in ("key", "value"):
        side_spec = spec.side(side)
        if side_spec.format == STRING:
            decoders[side] = StringColumn()
        elif side_spec.format == JSON:
            decoders[side] = JsonColumn(_json_type(side, side_spec, topics, paths, config))
        elif side_spec.format == AVRO:
            decoders[side] = AvroColumn(_avro_schema(side, side_spec, config))
        elif side_spec.format == CONFLUENT_AVRO:
            if not registry:
                registry.append(load_registry(spec.registry, paths, config))
            decoders[side] = _confluent(side, side_spec, topics, registry[0])
    return RecordDecoding(spec.mode, decoders)


def _json_type(side: str, spec: SideSpec, topics, paths, config):
    if spec.schema is not None:
        try:
            return parse_schema(spec.schema)
        except DDLError as err:
            raise BadOptionError(_SCHEMA_OPTION[side], spec.schema, f"not a Spark DDL "
                                 f"schema: {err}") from None
    samples = sample_payloads(paths, topics, side, INFERENCE_SAMPLE, config)
    inferred = infer_type(samples)
    log.warning("segmentlog: %s inferred from %d %ss (give it with option %s to skip the "
                "sampling): %s", _FORMAT_OPTION[side], len(samples), side,
                _SCHEMA_OPTION[side], inferred.simpleString())
    return inferred


def _avro_schema(side: str, spec: SideSpec, config) -> str:
    option = _SCHEMA_OPTION[side]
    if spec.schema is None:
        raise BadOptionError(_FORMAT_OPTION[side], "avro", f"needs the Avro schema in option "
                             f"{option} (its JSON, or the path of an .avsc file)")
    text = spec.schema
    if not text.lstrip().startswith(("{", "[", '"')):
        fs, path = filesystem_for(text, config)
        if not fs.exists(path):
            raise BadOptionError(option, text, "neither Avro schema JSON nor an existing "
                                 ".avsc file")
        text = fs.read_all(path).decode("utf-8")
    try:
        spark_type(text)
        AvroColumn(text)
    except NeedsNewerPySparkError as err:   # (a type this PySpark lacks: compat.py)
        raise NeedsNewerPySparkError(err.feature, err.release, err.installed, option) from None
    except (ValueError, KeyError, TypeError, MalformedValueError) as err:
        raise BadOptionError(option, spec.schema, f"not a usable Avro schema: {err}") from None
    return text


def _confluent(side: str, spec: SideSpec, topics, registry: SchemaRegistry) -> ConfluentColumn:
    option = _READER_OPTION[side]
    subjects = [f"{t}-{side}" for t in topics]
    newest = {s: registry.latest_id(s) for s in subjects}
    newest = {s: i for s, i in newest.items() if i is not None}
    if spec.reader_schema_id is not None:
        reader_id = spec.reader_schema_id
        if registry.schema(reader_id) is None:
            raise BadOptionError(option, reader_id, f"no schema with this id in "
                                 f"{registry.source}")
    else:
        if not newest:
            raise BadOptionError(_FORMAT_OPTION[side], CONFLUENT_AVRO, f"no subject "
                                 f"{' or '.join(subjects[:5]) or '(no topic)'} in "
                                 f"{registry.source} (subjects there: "
                                 f"{', '.join(registry.subjects()[:10]) or 'none'})")
        texts = {registry.schema(i).text for i in newest.values()}
        if len(texts) > 1:
            listed = ", ".join(f"{s} (newest schema id {i})" for s, i in sorted(newest.items()))
            raise BadOptionError(_FORMAT_OPTION[side], CONFLUENT_AVRO, f"the topics read have "
                                 f"different {side} schemas: {listed}; read one topic per "
                                 f"load (option subscribe), or name one reader schema with "
                                 f"option {option}")
        reader_id = next(iter(newest.values()))
    reader = registry.schema(reader_id)
    if reader.schema_type == PROTOBUF:
        raise BadOptionError(option if spec.reader_schema_id else _FORMAT_OPTION[side],
                             CONFLUENT_AVRO, f"schema id {reader_id} is a Protobuf schema: "
                             f"segmentlog decodes Avro and JSON Schema payloads, not Protobuf "
                             f"(no well-kept Python library compiles .proto text at run time "
                             f"without protoc); read the raw {side} bytes with "
                             f"{_FORMAT_OPTION[side]}=binary")
    types = {i: s.schema_type for i, s in registry.schemas.items()}
    if reader.schema_type == JSON_SCHEMA:
        return ConfluentColumn(JSON_SCHEMA, reader_id, reader.text, {}, types,
                               json_schema_type(json.loads(reader.text)))
    writers = {}
    for schema_id, schema in registry.schemas.items():
        if schema.schema_type == AVRO_SCHEMA:
            try:
                writers[schema_id] = registry.self_contained(schema_id)
            except KeyError:
                continue        # a reference the snapshot lacks: its values are malformed
    try:
        column = ConfluentColumn(AVRO_SCHEMA, reader_id, registry.self_contained(reader_id),
                                 writers, types)
    except (KeyError, MalformedValueError, ValueError) as err:
        raise BadOptionError(option, reader_id, f"the reader schema is not usable: {err}") \
            from None
    if spec.reader_schema_id is not None:
        return column       # the user's pick: what does not resolve to it is malformed rows
    for subject in sorted(newest):
        for version in registry.subject_versions(subject):
            try:
                column.avro.check_resolvable(version.schema_id)
            except (MalformedValueError, ValueError, KeyError, TypeError) as err:
                raise BadOptionError(option, reader_id, f"subject {subject} version "
                                     f"{version.version}: {err}") from None
    return column


def sample_payloads(paths, topics, side: str, limit: int, config=None) -> list[bytes]:
    """Up to `limit` non-null keys or values from the start of the topics read."""
    out: list[bytes] = []
    decoder = ColumnarDecoder(verify_crc=True, fields={side})
    for part in find_partitions(paths, config=config):
        if part.topic not in topics:
            continue
        entries, count = [], len(out)
        for _, header, entry in PartitionLog.open(part.path, part.fs).iter_entries(
                verify_crc=True):
            if not header.is_control:
                entries.append((header, bytes(entry)))
                count += max(header.records_count, 1)
            if count >= limit:
                break
        if entries:
            records = decoder.decode(entries).to_records()
            out += [getattr(r, side) for r in records if getattr(r, side) is not None]
        if len(out) >= limit:
            break
    return out[:limit]
