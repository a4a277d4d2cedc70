"""The Schema Registry's own topic (`_schemas`, one compacted partition) replayed into a
SchemaRegistry, in offset order, the way the registry's store reader applies it.

    key {"keytype": "SCHEMA", "subject", "version", "magic"}
        value {"subject", "version", "id", "schema", "schemaType"?, "references"?, "deleted"}
        value null: the version is hard-deleted (gone from its subject)
    key {"keytype": "DELETE_SUBJECT", "subject", ...}
        value {"subject", "version"}: every version up to `version` is soft-deleted
    key {"keytype": "CLEAR_SUBJECT", "subject", ...}: the soft-deleted versions are removed
    NOOP (the registry's own writes to find the log end), CONFIG, MODE, CONTEXT and others:
        no schema changes

A schema's text stays known by its id after its versions go, so values written with it still
decode. A record that is not JSON, or a SCHEMA value without its fields, is corrupt data: the
snapshot would otherwise lack a schema silently.
"""

from __future__ import annotations

import json
from typing import Iterable

from ..errors import CorruptDataError
from .schema_registry import AVRO, Reference, Schema, SchemaRegistry, SubjectVersion

IGNORED_KEYTYPES = ("NOOP", "CONFIG", "MODE", "CONTEXT")


def replay(registry: SchemaRegistry, records: Iterable[tuple[int, bytes | None, bytes | None]],
           where: str) -> SchemaRegistry:
    """Apply `_schemas` records (offset, key, value) to `registry`; `where` names the log."""
    for offset, key, value in records:
        if key is None:
            continue
        try:
            key_json = json.loads(key)
            value_json = None if value is None else json.loads(value)
            _apply(registry, key_json, value_json)
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise CorruptDataError(f"the Schema Registry record at offset {offset} is not one "
                                   f"the registry writes ({type(err).__name__}: {err}): "
                                   f"key {key[:200]!r}", where) from None
    return registry


def _apply(registry: SchemaRegistry, key: dict, value: dict | None) -> None:
    keytype = key["keytype"]
    if keytype == "SCHEMA":
        subject, version = key["subject"], int(key["version"])
        if value is None:
            registry.versions.get(subject, {}).pop(version, None)
            return
        schema_id = int(value["id"])
        refs = tuple(Reference(r["name"], r["subject"], int(r["version"]))
                     for r in value.get("references") or ())
        registry.schemas[schema_id] = Schema(schema_id, value["schema"],
                                             value.get("schemaType") or AVRO, refs)
        registry.versions.setdefault(subject, {})[version] = SubjectVersion(
            subject, version, schema_id, bool(value.get("deleted", False)))
    elif keytype == "DELETE_SUBJECT":
        if value is None:
            return
        subject, upto = value["subject"], int(value["version"])
        versions = registry.versions.get(subject, {})
        for v, sv in list(versions.items()):
            if v <= upto:
                versions[v] = SubjectVersion(sv.subject, sv.version, sv.schema_id, True)
    elif keytype == "CLEAR_SUBJECT":
        versions = registry.versions.get(key["subject"], {})
        for v, sv in list(versions.items()):
            if sv.deleted:
                del versions[v]
    elif keytype not in IGNORED_KEYTYPES:
        return      # a newer registry's record kind: it carries no schema
