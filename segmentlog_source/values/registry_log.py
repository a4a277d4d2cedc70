"""The Schema Registry's own topic (`_schemas`, one compacted partition) replayed into a
SchemaRegistry, in offset order, the way the registry's store reader applies it.

    key {"keytype": "SCHEMA", "subject", "version", "magic"}
        value {"subject", "version", "id", "schema", "schemaType"?, "references"?, "deleted"}
        value null: the version is hard-deleted (gone from its subject)
    key {"keytype": "DELETE_SUBJECT", "subject", ...}
        value {"subject", "version"}: every version up to `version` is soft-deleted
    key {"keytype": "CLEAR_SUBJECT", "subject"?, ...}: the soft-deleted versions are removed,
        of the subject, of every subject of a context (":.ctx:"), or of all (no subject)
    NOOP (the registry's own writes to find the log end), CONFIG, MODE, CONTEXT and others:
        no schema changes

A hard-deleted version's schema id is forgotten once no subject version uses it, as the
registry forgets it (its values no longer decode there either). Subjects of a non-default
context (":.ctx:subject") keep their versions but give no ids: ids are numbered per context,
and payloads name none, so only the default context's ids are the ones payloads carry.

A record that is not JSON, or a SCHEMA value without its fields, is corrupt data: the snapshot
would otherwise lack a schema silently.
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
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as err:
            raise CorruptDataError(f"the Schema Registry record at offset {offset} is not one "
                                   f"the registry writes ({type(err).__name__}: {err}): "
                                   f"key {key[:200]!r}", where) from None
    return registry


def _apply(registry: SchemaRegistry, key: dict, value: dict | None) -> None:
    keytype = key["keytype"]
    if keytype == "SCHEMA":
        subject, version = key["subject"], int(key["version"])
        if value is None:
            gone = registry.versions.get(subject, {}).pop(version, None)
            if gone is not None and not _context(subject) and not any(
                    v.schema_id == gone.schema_id for s, vs in registry.versions.items()
                    if not _context(s) for v in vs.values()):
                registry.schemas.pop(gone.schema_id, None)
            return
        schema_id = int(value["id"])
        refs = tuple(Reference(r["name"], r["subject"], int(r["version"]))
                     for r in value.get("references") or ())
        if not _context(subject):
            registry.schemas[schema_id] = Schema(schema_id, value["schema"],
                                                 value.get("schemaType") or AVRO, refs)
        registry.versions.setdefault(subject, {})[version] = SubjectVersion(
            subject, version, schema_id, value.get("deleted") is True)
    elif keytype == "DELETE_SUBJECT":
        if value is None:
            return
        subject, upto = value["subject"], int(value["version"])
        versions = registry.versions.get(subject, {})
        for v, sv in list(versions.items()):
            if v <= upto:
                versions[v] = SubjectVersion(sv.subject, sv.version, sv.schema_id, True)
    elif keytype == "CLEAR_SUBJECT":
        target = key.get("subject")
        for subject, versions in registry.versions.items():
            if _matches(target, subject):
                for v, sv in list(versions.items()):
                    if sv.deleted:
                        del versions[v]
    elif keytype not in IGNORED_KEYTYPES:
        return      # a newer registry's record kind: it carries no schema


def _context(subject: str) -> str:
    """The context of a qualified subject (":.ctx:name" -> ".ctx"), "" for the default."""
    if subject.startswith(":.") and ":" in subject[2:]:
        context = subject[1:subject.index(":", 2)]
        return "" if context == "." else context
    return ""


def _matches(target: str | None, subject: str) -> bool:
    """CLEAR_SUBJECT's reach: everything, a whole context (":.ctx:"), or one subject."""
    if target is None or target == ":.__GLOBAL:":
        return True
    if target.startswith(":.") and target.endswith(":") and target.count(":") == 2:
        return _context(subject) == _context(target + "x") or (
            target == ":.:" and not _context(subject))
    return subject == target
