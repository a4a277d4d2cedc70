"""The decoding options of a read (keyFormat, valueFormat, keySchema, valueSchema,
schemaRegistry, readerSchemaId, keyReaderSchemaId, mode) -> a DecodingSpec, and at load time
the decoders of the topics the read selects (values/build.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import BadOptionError
from ..storage.log.log_directory import find_partitions
from ..values.decoding_spec import (BINARY, FORMATS, KAFKA_INTERNAL, KEY_FORMATS, MODES,
                                    DecodingSpec, SideSpec)
from .option_values import choice_option, int_option

if TYPE_CHECKING:
    from ..values.record_decoding import RecordDecoding


def parse_decoding(opts: dict) -> DecodingSpec:
    """`opts`: the lower-cased option dict."""
    value_format = choice_option(opts, "valueFormat", FORMATS, BINARY)
    key_format = choice_option(opts, "keyFormat", KEY_FORMATS, BINARY)
    if value_format == KAFKA_INTERNAL and key_format != BINARY:
        raise BadOptionError("keyFormat", key_format, "valueFormat=kafka-internal decodes "
                             "the keys too (into key_decoded): leave keyFormat out")
    mode = choice_option(opts, "mode", tuple(m.lower() for m in MODES), "permissive").upper()
    spec = DecodingSpec(
        key=SideSpec(key_format, opts.get("keyschema"),
                     int_option(opts, "keyReaderSchemaId", None, minimum=0)),
        value=SideSpec(value_format, opts.get("valueschema"),
                       int_option(opts, "readerSchemaId", None, minimum=0)),
        registry=opts.get("schemaregistry"),
        mode=mode)
    for name, side in (("keySchema", spec.key), ("valueSchema", spec.value)):
        if side.schema is not None and side.format not in ("json", "avro"):
            raise BadOptionError(name, None, f"given with {name[:-6]}Format={side.format}: "
                                 f"it is the schema of json and avro {name[:-6]}s")
    return spec


def resolve_decoding(opts) -> RecordDecoding | None:
    """The decoders of a read (`opts`: ReadOptions), or None when nothing is decoded."""
    spec = opts.decoding
    if not spec.active():
        return None
    if not opts.include_payload:
        raise BadOptionError("includePayload", "false", "keyFormat/valueFormat decode the key "
                             "and value columns, which includePayload=false leaves out")
    topics = sorted({p.topic for p in find_partitions(opts.paths, config=opts.store,
                                                      allow_empty=True)
                     if opts.selects_topic(p.topic)})
    # The decoders declare Spark's types: built only for a read that decodes, so that planning
    # (and the command line, which runs without PySpark) never needs pyspark.
    from ..values.build import build_decoding

    return build_decoding(spec, topics, opts.paths, opts.store)
