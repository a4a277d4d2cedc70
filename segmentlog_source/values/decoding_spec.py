"""What a read decodes: each side's format and schema, and the mode of Spark's JSON reader.

Plain data, with no Spark types: the options parse into it (plan/value_options.py) on the driver
and in the command line, which run without PySpark; values/record_decoding.py builds the decoding
it asks for.
"""

from __future__ import annotations

from dataclasses import dataclass, field

BINARY, STRING, JSON, AVRO, CONFLUENT_AVRO, KAFKA_INTERNAL = (
    "binary", "string", "json", "avro", "confluent-avro", "kafka-internal")
FORMATS = (BINARY, STRING, JSON, AVRO, CONFLUENT_AVRO, KAFKA_INTERNAL)
KEY_FORMATS = (BINARY, STRING, JSON, AVRO, CONFLUENT_AVRO)
PERMISSIVE, FAILFAST, DROPMALFORMED = "PERMISSIVE", "FAILFAST", "DROPMALFORMED"
MODES = (PERMISSIVE, FAILFAST, DROPMALFORMED)
SIDES = ("key", "value")


@dataclass(frozen=True)
class SideSpec:
    """One side's options: its format, schema (a DDL for json; Avro JSON or an .avsc path for
    avro) and the reader schema id (confluent-avro)."""

    format: str = BINARY
    schema: str | None = None
    reader_schema_id: int | None = None


@dataclass(frozen=True)
class DecodingSpec:
    key: SideSpec = field(default_factory=SideSpec)
    value: SideSpec = field(default_factory=SideSpec)
    registry: str | None = None
    mode: str = PERMISSIVE

    def active(self) -> bool:
        return self.key.format != BINARY or self.value.format != BINARY

    def side(self, name: str) -> SideSpec:
        return self.key if name == "key" else self.value
