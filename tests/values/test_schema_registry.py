"""Schema Registry snapshots without Spark: the `_schemas` replay (soft and hard deletes, NOOP,
DELETE_SUBJECT, CLEAR_SUBJECT, references), a directory of `.avsc` files, a registry's REST API
(a real HTTP server on loopback), and the errors for what none of them can be."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlparse

import pytest

from segmentlog_source.errors import BadOptionError, CorruptDataError
from segmentlog_source.values.avro_types import AvroSchemaError, spark_type
from segmentlog_source.values.registry_sources import load_registry
from tests.values.logs import noop, schema_record, write_partition, write_registry

A1 = {"type": "record", "name": "A", "fields": [{"name": "x", "type": "int"}]}
A2 = {"type": "record", "name": "A", "fields": [{"name": "x", "type": "int"},
                                                {"name": "y", "type": "string", "default": ""}]}


def _json(obj) -> bytes:
    return json.dumps(obj).encode()


def test_replay_follows_the_registry(tmp_path):
    write_registry(tmp_path, [
        noop(),
        schema_record("a-value", 1, 1, A1),
        schema_record("a-value", 2, 2, A2),
        schema_record("a-value", 2, 2, A2, deleted=True),          # soft delete of version 2
        schema_record("b-value", 1, 3, A1),
        schema_record("b-value", 2, 4, A2),
        (_json({"keytype": "DELETE_SUBJECT", "subject": "b-value", "magic": 0}),
         _json({"subject": "b-value", "version": 2})),             # both versions soft-deleted
        schema_record("c-value", 1, 5, A1),
        schema_record("c-value", 2, 6, A2),
        (_json({"keytype": "SCHEMA", "subject": "c-value", "version": 2, "magic": 1}), None),
        (_json({"keytype": "CONFIG", "subject": None, "magic": 0}),
         _json({"compatibilityLevel": "NONE"})),
        schema_record("d-value", 1, 7, A1, deleted=True),
        (_json({"keytype": "CLEAR_SUBJECT", "subject": "d-value", "magic": 0}),
         _json({"subject": "d-value"})),
    ])
    registry = load_registry(None, [str(tmp_path)])
    assert registry.latest_id("a-value") == 1          # version 2 is soft-deleted
    assert registry.schema(2) is not None              # ...but its id still decodes
    assert registry.latest_id("b-value") is None
    assert [v.deleted for v in registry.subject_versions("b-value")] == [True, True]
    assert registry.latest_id("c-value") == 5          # version 2 hard-deleted
    assert [v.version for v in registry.subject_versions("c-value")] == [1]
    assert registry.subject_versions("d-value") == []  # cleared
    assert registry.subjects() == ["a-value", "c-value"]


def test_references_are_written_into_the_schema(tmp_path):
    inner = {"type": "record", "name": "Inner", "namespace": "n", "fields": [
        {"name": "v", "type": "long"}]}
    outer = {"type": "record", "name": "Outer", "namespace": "n", "fields": [
        {"name": "first", "type": "n.Inner"}, {"name": "second", "type": "Inner"}]}
    write_registry(tmp_path, [
        schema_record("inner", 1, 1, inner),
        schema_record("o-value", 1, 2, outer,
                      references=[{"name": "n.Inner", "subject": "inner", "version": 1}])])
    registry = load_registry(str(tmp_path / "_schemas-0"), [])
    text = registry.self_contained(2)
    assert spark_type(text).simpleString() == \
        "struct<first:struct<v:bigint>,second:struct<v:bigint>>"


def test_a_corrupt_registry_record_names_its_offset(tmp_path):
    write_registry(tmp_path, [schema_record("a-value", 1, 1, A1),
                              (b'{"keytype": "SCHEMA"', b"{}")])
    with pytest.raises(CorruptDataError, match="offset 1 is not one the registry writes"):
        load_registry(None, [str(tmp_path)])


def test_an_avsc_directory_has_every_id_as_a_version(tmp_path):
    (tmp_path / "3.avsc").write_text(json.dumps(A1))
    (tmp_path / "12.avsc").write_text(json.dumps(A2))
    registry = load_registry(str(tmp_path), [])
    assert registry.latest_id("anything-value") == 12
    assert sorted(registry.schemas) == [3, 12]


def test_no_registry_anywhere_says_which_option(tmp_path):
    write_partition(tmp_path, "t", [(None, b"x")])
    with pytest.raises(BadOptionError, match="option schemaRegistry: no _schemas topic"):
        load_registry(None, [str(tmp_path)])
    (tmp_path / "empty").mkdir()
    with pytest.raises(BadOptionError, match="neither a _schemas partition directory"):
        load_registry(str(tmp_path / "empty"), [])


class _Registry(BaseHTTPRequestHandler):
    """The read endpoints of a registry holding a-value versions 1 and 2 (2 soft-deleted)."""

    versions = {1: (10, A1, False), 2: (11, A2, True)}

    def do_GET(self):
        url = urlparse(self.path)
        deleted = "deleted=true" in url.query
        parts = [unquote(p) for p in url.path.strip("/").split("/")]
        live = [v for v, (_, _, gone) in self.versions.items() if deleted or not gone]
        if parts == ["subjects"]:
            body = ["a-value"]
        elif parts == ["subjects", "a-value", "versions"]:
            body = live
        elif parts[:3] == ["subjects", "a-value", "versions"] and int(parts[3]) in live:
            schema_id, schema, _ = self.versions[int(parts[3])]
            body = {"subject": "a-value", "version": int(parts[3]), "id": schema_id,
                    "schema": json.dumps(schema)}
        else:
            self.send_response(404)
            self.end_headers()
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_a_registry_url_is_read_through_its_rest_api():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Registry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        registry = load_registry(url, [])
        assert registry.latest_id("a-value") == 10
        assert [(v.version, v.schema_id, v.deleted)
                for v in registry.subject_versions("a-value")] == [(1, 10, False),
                                                                   (2, 11, True)]
        with pytest.raises(BadOptionError, match="GET /subjects failed"):
            load_registry(url + "/nowhere", [])
    finally:
        server.shutdown()


def test_schemas_spark_cannot_hold_are_refused():
    recursive = {"type": "record", "name": "Node", "fields": [
        {"name": "next", "type": ["null", "Node"]}]}
    with pytest.raises(AvroSchemaError, match="recursive"):
        spark_type(recursive)
    with pytest.raises(AvroSchemaError, match="decimal"):
        spark_type({"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 2})


def test_contexts_and_global_clears(tmp_path):
    other = {"type": "record", "name": "Other", "fields": [{"name": "z", "type": "string"}]}
    write_registry(tmp_path, [
        schema_record("a-value", 1, 1, A1),
        schema_record(":.ctx:a-value", 1, 1, other),      # ids are per context
        schema_record("b-value", 1, 2, A2),
        schema_record("b-value", 1, 2, A2, deleted=True),
        (_json({"keytype": "SCHEMA", "subject": "b-value", "version": 1, "magic": 1}), None),
        schema_record("c-value", 1, 3, A1, deleted=True),
        schema_record(":.ctx:c-value", 1, 3, other, deleted=True),
        (_json({"keytype": "CLEAR_SUBJECT", "magic": 0}), _json({})),   # a global IMPORT
    ])
    registry = load_registry(None, [str(tmp_path)])
    assert json.loads(registry.schema(1).text) == A1
    assert registry.latest_id(":.ctx:a-value") == 1
    assert registry.schema(2) is None                  # hard-deleted, used nowhere else
    assert registry.subject_versions("c-value") == []
    assert registry.subject_versions(":.ctx:c-value") == []


def test_references_with_one_short_name_in_two_namespaces(tmp_path):
    item_a = {"type": "record", "name": "Item", "namespace": "com.a",
              "fields": [{"name": "a", "type": "int"}]}
    item_b = {"type": "record", "name": "Item", "namespace": "com.b",
              "fields": [{"name": "b", "type": "string"}]}
    main = {"type": "record", "name": "Main", "namespace": "com.b", "fields": [
        {"name": "mine", "type": "Item"}, {"name": "theirs", "type": "com.a.Item"}]}
    write_registry(tmp_path, [
        schema_record("a", 1, 1, item_a), schema_record("b", 1, 2, item_b),
        schema_record("m-value", 1, 3, main, references=[
            {"name": "com.a.Item", "subject": "a", "version": 1},
            {"name": "com.b.Item", "subject": "b", "version": 1}])])
    text = load_registry(None, [str(tmp_path)]).self_contained(3)
    assert spark_type(text).simpleString() == \
        "struct<mine:struct<b:string>,theirs:struct<a:int>>"
