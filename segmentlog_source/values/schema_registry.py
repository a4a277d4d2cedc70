"""A snapshot of a Schema Registry: every schema by id, and every subject's versions.

It is built from the registry's own compacted topic (`_schemas`, registry_log.py), a directory
of `<id>.avsc` files, or a registry's REST API (registry_sources.py), on the driver, and then
travels to the executors as plain data.

Subjects follow the registry's TopicNameStrategy: `<topic>-value` and `<topic>-key`. A subject's
newest schema is its highest version not deleted; soft-deleted versions keep their schema id
(values written with it still decode), as the registry's `/schemas/ids/<id>` still serves them.
A directory of `.avsc` files has no subjects: there every id is a version of every subject, and
the newest is the highest id (the registry hands out ids in increasing order).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .avro_types import named_types

AVRO, JSON_SCHEMA, PROTOBUF = "AVRO", "JSON", "PROTOBUF"


@dataclass(frozen=True)
class Reference:
    """A schema reference: the named type `name` is defined by `subject` at `version`."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class Schema:
    schema_id: int
    text: str
    schema_type: str = AVRO
    references: tuple[Reference, ...] = ()


@dataclass(frozen=True)
class SubjectVersion:
    subject: str
    version: int
    schema_id: int
    deleted: bool = False


@dataclass
class SchemaRegistry:
    source: str                                   # where it was read, for messages
    schemas: dict[int, Schema] = field(default_factory=dict)
    versions: dict[str, dict[int, SubjectVersion]] = field(default_factory=dict)
    subjectless: bool = False                     # a directory of <id>.avsc files

    def subject_versions(self, subject: str) -> list[SubjectVersion]:
        if self.subjectless:
            return [SubjectVersion(subject, i, i) for i in sorted(self.schemas)]
        return sorted(self.versions.get(subject, {}).values(), key=lambda v: v.version)

    def latest_id(self, subject: str) -> int | None:
        live = [v for v in self.subject_versions(subject) if not v.deleted]
        return live[-1].schema_id if live else None

    def schema(self, schema_id: int) -> Schema | None:
        return self.schemas.get(schema_id)

    def subjects(self) -> list[str]:
        return sorted(s for s, vs in self.versions.items() if any(not v.deleted
                                                                  for v in vs.values()))

    def self_contained(self, schema_id: int) -> str | None:
        """The Avro schema text of `schema_id` with its references' named types written in
        where they are first used (so it parses on its own), or None for an unknown id."""
        schema = self.schemas.get(schema_id)
        if schema is None:
            return None
        if not schema.references:
            return schema.text
        definitions: dict[str, object] = {}
        self._collect(schema, definitions, set())
        return json.dumps(_inline(json.loads(schema.text), definitions, set()))

    def _collect(self, schema: Schema, out: dict, seen: set) -> None:
        for ref in schema.references:
            version = self.versions.get(ref.subject, {}).get(ref.version)
            target = None if version is None else self.schemas.get(version.schema_id)
            if target is None:
                raise KeyError(f"schema id {schema.schema_id} references {ref.name} in "
                               f"{ref.subject} version {ref.version}, which {self.source} "
                               f"does not hold")
            if target.schema_id in seen:
                continue
            seen.add(target.schema_id)
            self._collect(target, out, seen)
            for name, definition in named_types(json.loads(target.text)).items():
                out.setdefault(name, definition)


def _qualified(name: str, namespace: str | None) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _inline(schema, definitions: dict, written: set, namespace: str | None = None):
    """`schema` with each referenced named type replaced by its definition at first use. A
    short name means the type of that name in the enclosing namespace, else in none (Avro's
    rule, which the registry's Java parser follows)."""
    if isinstance(schema, str):
        full = next((n for n in (_qualified(schema, namespace), schema) if n in definitions),
                    None)
        if full is None or full in written:
            return schema if full is None else full
        written.add(full)
        target = definitions[full]
        return _inline(target, definitions, written,
                       full.rsplit(".", 1)[0] if "." in full else None) | {"name": full}
    if isinstance(schema, list):
        return [_inline(s, definitions, written, namespace) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if out.get("type") in ("record", "enum", "fixed"):
        full = _qualified(out["name"], out.get("namespace", namespace))
        written.add(full)
        namespace = full.rsplit(".", 1)[0] if "." in full else None
    if "fields" in out:
        out["fields"] = [dict(f, type=_inline(f["type"], definitions, written, namespace))
                         for f in out["fields"]]
    for key in ("items", "values"):
        if key in out:
            out[key] = _inline(out[key], definitions, written, namespace)
    if isinstance(out.get("type"), (dict, list)) or (
            isinstance(out.get("type"), str) and out["type"] not in _PRIMITIVE_NAMES
            and out["type"] not in ("record", "enum", "fixed", "array", "map")):
        out["type"] = _inline(out["type"], definitions, written, namespace)
    return out


_PRIMITIVE_NAMES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
