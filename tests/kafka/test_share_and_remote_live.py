"""The live Kafka 4.4 scenario of issue #36: the Admin API's changes recorded before the broker
stopped (conftest.py's admin_answers), the share group's `__share_group_state` and the tiered
broker's `__remote_log_metadata`, dumped by DumpLogSegments 4.4 with
--share-group-state-decoder / --remote-log-metadata-decoder and by `segmentlog dump` with the
same flag: the same lines, and the JSON dump's payloads are those lines' payloads.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from segmentlog_source.cli.dump import dump_files
from segmentlog_source.cli.dump_context import DumpOptions
from segmentlog_source.format.remote_log_metadata import decode_value as decode_remote
from segmentlog_source.values.kafka_internal.records import decode_key, decode_value
from segmentlog_source.values.kafka_internal.share_messages import SHARE_GROUP_STATE
from tests.cli.test_dump_vs_kafka import kafka_dump
from tests.kafka.broker_topics import (ADMIN_CONFIGS, ADMIN_CONFIGS_CHANGED,
                                       ADMIN_CONFIGS_DELETED, ADMIN_DELETED, ADMIN_GROWN,
                                       CLUSTER_DEFAULT, SCRAM_CREDENTIALS, SCRAM_USER,
                                       SENSITIVE_CONFIG, SHARE_GROUP, SHARE_RECORDS,
                                       SHARE_TOPIC)
from tests.values.test_kafka_internal import assert_same_lines, decoder_dump, partition_records

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("kafka")]
SHARE_STATE = f"{SHARE_GROUP_STATE}-0"


def test_the_admin_answers_hold_every_change(admin_answers, produced):
    topics = admin_answers["topics"]
    assert {SHARE_GROUP_STATE, "__consumer_offsets", ADMIN_CONFIGS, ADMIN_GROWN} <= set(topics)
    assert topics[SHARE_GROUP_STATE]["internal"] and not topics[ADMIN_GROWN]["internal"]
    for name, answer in topics.items():
        if name in produced.topic_ids:
            assert answer["topicId"] == produced.topic_ids[name], name
    configs = topics[ADMIN_CONFIGS]["configs"]
    for name, value in ADMIN_CONFIGS_CHANGED.items():
        assert configs[name] == {"value": value, "source": "DYNAMIC_TOPIC_CONFIG",
                                 "sensitive": False, "readOnly": False}, name
    assert all(configs[name]["source"] == "DEFAULT_CONFIG" for name in ADMIN_CONFIGS_DELETED)
    (default, value), = CLUSTER_DEFAULT.items()
    assert admin_answers["brokerDefault"][default]["value"] == value
    assert configs[default.removeprefix("log.")] == {
        "value": value, "source": "DYNAMIC_DEFAULT_BROKER_CONFIG", "sensitive": False,
        "readOnly": False}
    assert [p["partition"] for p in topics[ADMIN_GROWN]["partitions"]] == [0, 1, 2]
    assert all(p["leader"] == 1 and p["isr"] == [1] for p in topics[ADMIN_GROWN]["partitions"])
    assert ADMIN_DELETED not in topics
    assert admin_answers["deletedTopics"] == {ADMIN_DELETED: produced.topic_ids[ADMIN_DELETED]}
    resource, name, secret = SENSITIVE_CONFIG
    sensitive = admin_answers["brokers"][resource.split(":")[1]][name]
    assert sensitive["sensitive"] and sensitive["value"] is None   # Admin never shows it
    assert admin_answers["sensitive"] == {"resource": resource, "name": name, "value": secret}
    assert sorted((c["mechanism"], c["iterations"])
                  for c in admin_answers["scramUsers"][SCRAM_USER]) == sorted(SCRAM_CREDENTIALS)
    assert admin_answers["shareGroups"][SHARE_GROUP]["records"] == SHARE_RECORDS


@pytest.fixture(scope="module")
def share_state(broker_reads) -> list[Path]:
    return sorted((broker_reads.files / SHARE_STATE).glob("*.log"))


def test_share_group_state_dump_is_dump_log_segments(share_state):
    flags = ("--share-group-state-decoder",)
    kafka_out, _ = kafka_dump(share_state, flags)
    out, err = decoder_dump(share_state, flags)
    assert_same_lines(kafka_out, out)
    assert err == b""
    assert b'key: {"type":"0","data":{"groupId":"' + SHARE_GROUP.encode() in out
    assert b'key: {"type":"1","data":{"groupId":"' in out
    assert b'"deliveryState":4' in out and b"Error at offset" not in out
    _assert_json_payloads(share_state, SHARE_GROUP_STATE, out)


def test_the_share_group_state_is_what_the_consumer_acknowledged(share_state, admin_answers):
    """Every record of share-in is acknowledged once: accepted (2) or, every 7th, rejected
    (4, archived), in the ShareUpdate records of its share-partition."""
    topic_id = admin_answers["topics"][SHARE_TOPIC]["topicId"]
    topic, records = partition_records(share_state[0].parent)
    states: dict[tuple[int, int], int] = {}
    kinds = set()
    for r in records:
        key = decode_key(topic, r.key)
        value = decode_value(topic, key, r.value)
        kinds.add(key.record_type)
        assert (key.fields["groupId"], key.fields["topicId"]) == (SHARE_GROUP, topic_id)
        if key.record_type == "share_update":
            for b in value.fields["stateBatches"]:
                for offset in range(b["firstOffset"], b["lastOffset"] + 1):
                    states[(key.fields["partition"], offset)] = b["deliveryState"]
    assert kinds == {"share_snapshot", "share_update"}
    assert len(states) == SHARE_RECORDS
    assert sorted(states.values()).count(4) == admin_answers["shareGroups"][SHARE_GROUP][
        "rejected"] > 0
    assert set(states.values()) == {2, 4}


def test_the_share_group_state_as_columns(kafka_spark, share_state, admin_answers):
    """valueFormat=kafka-internal: the same states, as share_state structs."""
    rows = (kafka_spark.read.format("segmentlog").option("valueFormat", "kafka-internal")
            .load(str(share_state[0].parent))
            .select("key_decoded.*", "value_decoded.share_state", "value_error").collect())
    assert rows and all(r.value_error is None for r in rows)
    assert {r.topic_id for r in rows} == {admin_answers["topics"][SHARE_TOPIC]["topicId"]}
    assert {r.record_type for r in rows} == {"share_snapshot", "share_update"}
    archived = sum(b.last_offset - b.first_offset + 1 for r in rows
                   if r.record_type == "share_update" for b in r.share_state.state_batches
                   if b.delivery_state == "Archived")
    assert archived == admin_answers["shareGroups"][SHARE_GROUP]["rejected"]
    snapshots = [r.share_state for r in rows if r.record_type == "share_snapshot"]
    assert all(s.create_timestamp is not None and s.state_epoch >= 0 for s in snapshots)


@pytest.fixture(scope="module")
def remote_metadata(tiered_live) -> list[Path]:
    return sorted(tiered_live.data_dir.glob("__remote_log_metadata-*/*.log"))


def test_remote_log_metadata_dump_is_dump_log_segments(remote_metadata, tiered_live):
    flags = ("--remote-log-metadata-decoder",)
    kafka_out, _ = kafka_dump(remote_metadata, flags)
    out, err = decoder_dump(remote_metadata, flags)
    assert_same_lines(kafka_out, out)
    assert err == b""
    segments = sum(len(p.remote_bases) for p in tiered_live.partitions.values())
    assert out.count(b"payload: RemoteLogSegmentMetadata{") >= segments > 0
    assert out.count(b"state=COPY_SEGMENT_FINISHED") >= segments
    assert b"Error at offset" not in out and b" key: " not in out
    _assert_json_payloads(remote_metadata, "__remote_log_metadata", out)
    for path in remote_metadata:   # the tiered reader's decoding agrees: every value decodes
        for r in partition_records(path.parent)[1]:
            decode_remote(r.value)


def _assert_json_payloads(files: list[Path], topic: str, text_out: bytes) -> None:
    """`--json`: one record object per record line, its payload the text line's payload."""
    out = io.StringIO()
    dump_files([str(f) for f in files], DumpOptions(json=True, decoder=topic), out,
               io.StringIO())
    payloads = [json.loads(line)["payload"] for line in out.getvalue().splitlines()
                if '"kind": "record"' in line]
    lines = [line for line in text_out.decode().split("\n") if line.startswith("| offset: ")
             and "isControl" not in line]
    texts = [line.split(" payload: ", 1)[1] if " payload: " in line else None
             for line in lines]
    assert payloads == texts[:len(payloads)] and len(payloads) == len(texts)
