"""Where a SchemaRegistry snapshot comes from (option `schemaRegistry`, else the loaded path):

- a `_schemas` partition directory (or a data directory holding `_schemas-0`): the registry's
  own topic, replayed (registry_log.py);
- a directory of `<id>.avsc` files: one Avro schema per id, no subjects;
- an http(s) URL: the registry's REST API, every subject and version (soft-deleted ones too);
- no option: the `_schemas` topic under the paths given to load().
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from typing import Sequence

from ..errors import BadOptionError, LogNotFoundError
from ..format.record_decoder import ColumnarDecoder
from ..storage.io.filesystem import filesystem_for
from ..storage.log.log_directory import find_partitions, has_segments
from ..storage.log.partition_log import PartitionLog
from .registry_log import replay
from .schema_registry import AVRO, Reference, Schema, SchemaRegistry, SubjectVersion

REGISTRY_TOPIC = "_schemas"
OPTION = "schemaRegistry"
HTTP_TIMEOUT_S = 30
_AVSC = re.compile(r"^(\d+)\.avsc$")


def load_registry(location: str | None, paths: Sequence[str], config=None) -> SchemaRegistry:
    """The snapshot at `location` (the option's value), or of the `_schemas` topic under
    `paths`; a BadOptionError names the option when there is none."""
    if location is None:
        found = [p for p in find_partitions(paths, config=config, allow_empty=True)
                 if p.topic == REGISTRY_TOPIC]
        if not found:
            raise BadOptionError(OPTION, None, f"no {REGISTRY_TOPIC} topic under "
                                 f"{', '.join(paths)} to take schemas from: point option "
                                 f"{OPTION} at a _schemas partition directory, a directory "
                                 f"of <id>.avsc files or a registry URL")
        return _from_log(found[0].path, found[0].fs, config)
    if re.match(r"^https?://", location):
        return _from_rest(location.rstrip("/"))
    fs, path = filesystem_for(location, config)
    if not fs.exists(path) or not fs.is_dir(path):
        raise BadOptionError(OPTION, location, "no such directory")
    if has_segments(fs, path):
        return _from_log(path, fs, config)
    names = fs.list_dir(path)
    if f"{REGISTRY_TOPIC}-0" in names:
        return _from_log(fs.join(path, f"{REGISTRY_TOPIC}-0"), fs, config)
    avsc = {int(m.group(1)): name for name in names if (m := _AVSC.match(name))}
    if not avsc:
        raise BadOptionError(OPTION, location, "neither a _schemas partition directory nor a "
                             "directory of <id>.avsc files (1.avsc, 2.avsc, ...)")
    registry = SchemaRegistry(location, subjectless=True)
    for schema_id, name in sorted(avsc.items()):
        text = fs.read_all(fs.join(path, name)).decode("utf-8")
        registry.schemas[schema_id] = Schema(schema_id, text, AVRO)
    return registry


def _from_log(path: str, fs, config) -> SchemaRegistry:
    if fs is None:
        fs, path = filesystem_for(path, config)
    try:
        log = PartitionLog.open(path, fs)
    except LogNotFoundError as err:
        raise BadOptionError(OPTION, path, str(err)) from None
    decoder = ColumnarDecoder(verify_crc=True, fields={"key", "value"})
    registry = SchemaRegistry(path)
    entries = []
    for segment, header, entry in log.iter_entries(verify_crc=True):
        if not header.is_control:
            entries.append((header, bytes(entry)))
    records = decoder.decode(entries).to_records() if entries else []
    return replay(registry, ((r.offset, r.key, r.value) for r in records), path)


def _from_rest(url: str) -> SchemaRegistry:
    registry = SchemaRegistry(url)
    live = set(_get(url, "/subjects"))
    for subject in _get(url, "/subjects?deleted=true"):
        quoted = urllib.parse.quote(subject, safe="")
        live_versions = set(_get(url, f"/subjects/{quoted}/versions")) \
            if subject in live else set()
        for version in _get(url, f"/subjects/{quoted}/versions?deleted=true"):
            body = _get(url, f"/subjects/{quoted}/versions/{version}?deleted=true")
            schema_id = int(body["id"])
            refs = tuple(Reference(r["name"], r["subject"], int(r["version"]))
                         for r in body.get("references") or ())
            registry.schemas[schema_id] = Schema(schema_id, body["schema"],
                                                 body.get("schemaType") or AVRO, refs)
            registry.versions.setdefault(subject, {})[int(version)] = SubjectVersion(
                subject, int(version), schema_id, int(version) not in live_versions)
    return registry


def _get(url: str, path: str):
    request = urllib.request.Request(url + path, headers={
        "Accept": "application/vnd.schemaregistry.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_S) as response:
            return json.loads(response.read())
    except (urllib.error.URLError, OSError, ValueError) as err:
        raise BadOptionError(OPTION, url, f"GET {path} failed: {err}") from None
