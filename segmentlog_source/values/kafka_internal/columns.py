"""The `key_decoded` and `value_decoded` columns of an internal topic's records, as Arrow arrays
(records.py and format/remote_log_metadata.py decode; this module lays the results out as
Spark's types declare them).

    key_decoded    record_type, version (the key's int16 record type), group, topic,
                   partition, member_id, transactional_id, topic_id (a share-partition's), json;
                   null for `__remote_log_metadata`, whose records have no key
    value_decoded  version, and one struct per kind of value (the others null):
                   offset_commit   the committed offset of an offset commit (types 0 and 1)
                   group_metadata  a classic group, its members with their subscribed topics
                                   and assigned partitions (from the consumer protocol's bytes
                                   when protocol_type is "consumer")
                   transaction     a transactional id's state in __transaction_state
                   metadata        a KRaft cluster metadata record (__cluster_metadata)
                   share_state     a share-partition's state in __share_group_state: a
                                   snapshot's whole state or an update's changed batches, each
                                   batch's offsets, delivery state and count
                   remote_log_metadata  a __remote_log_metadata record: a remote segment (its
                                   offsets, epochs, size, state), a later state of it, or a
                                   partition's delete state; record_type says which
                   json            Kafka's JSON of the value, for every record type

`__cluster_metadata` records have no key: key_decoded holds the record type (record_type, e.g.
TOPIC_RECORD, and version: its api key), value_decoded the record's version, `metadata` (the
ids most queries want: topic, partition, broker, a config's resource and value, which fields
were redacted) and `json`, DumpLogSegments' payload JSON of the whole record. Secrets are
redacted in both (metadata_records.py says which), and the raw `value` of a record that holds
a secret, or does not decode, is null: its bytes would show what the columns hide.

A field the record's version lacks is null, and so are "no value" markers: a -1 timestamp, a
zero topic id. A timestamp too large for microseconds is null (json keeps the number). A
tombstone's value_decoded is null; a row that does not decode gets null for both and a reason.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.types import (ArrayType, BinaryType, BooleanType, IntegerType, LongType,
                               ShortType, StringType, StructField, StructType, TimestampType)

from .kafka_json import struct_json
from .messages import ASSIGNMENT, SUBSCRIPTION, TRANSACTION_STATES
from .share_messages import DELIVERY_STATES
from ...format.message_protocol import ZERO_UUID
from .metadata_records import MetadataRecordError, decode_metadata, redact
from ...format.remote_log_metadata import (PARTITION_DELETE_STATES, SEGMENT_STATES,
                                           TOPIC as REMOTE_LOG_METADATA, RemoteLogMetadataError,
                                           metadata_value, read_metadata_message)
from .records import InternalRecordError, consumer_protocol, decode_key, decode_value


def _struct(*fields: tuple) -> StructType:
    return StructType([StructField(name, type_, True) for name, type_ in fields])


_TOPIC_PARTITIONS = ArrayType(_struct(("topic", StringType()),
                                      ("partitions", ArrayType(IntegerType()))))

KEY_TYPE = _struct(
    ("record_type", StringType()), ("version", ShortType()), ("group", StringType()),
    ("topic", StringType()), ("partition", IntegerType()), ("member_id", StringType()),
    ("transactional_id", StringType()), ("topic_id", StringType()), ("json", StringType()))

OFFSET_COMMIT_TYPE = _struct(
    ("offset", LongType()), ("leader_epoch", IntegerType()), ("metadata", StringType()),
    ("commit_timestamp", TimestampType()), ("expire_timestamp", TimestampType()),
    ("topic_id", StringType()))

MEMBER_TYPE = _struct(
    ("member_id", StringType()), ("group_instance_id", StringType()),
    ("client_id", StringType()), ("client_host", StringType()),
    ("rebalance_timeout", IntegerType()), ("session_timeout", IntegerType()),
    ("subscription", BinaryType()), ("assignment", BinaryType()),
    ("subscribed_topics", ArrayType(StringType())), ("assigned_partitions", _TOPIC_PARTITIONS))

GROUP_METADATA_TYPE = _struct(
    ("protocol_type", StringType()), ("generation", IntegerType()),
    ("protocol", StringType()), ("leader", StringType()),
    ("current_state_timestamp", TimestampType()), ("members", ArrayType(MEMBER_TYPE)))

TRANSACTION_TYPE = _struct(
    ("producer_id", LongType()), ("producer_epoch", ShortType()),
    ("previous_producer_id", LongType()), ("next_producer_id", LongType()),
    ("next_producer_epoch", ShortType()), ("transaction_timeout_ms", IntegerType()),
    ("state", StringType()), ("partitions", _TOPIC_PARTITIONS),
    ("last_update_timestamp", TimestampType()), ("start_timestamp", TimestampType()),
    ("client_transaction_version", ShortType()))

METADATA_TYPE = _struct(
    ("record_type", StringType()), ("api_key", ShortType()), ("topic_id", StringType()),
    ("topic_name", StringType()), ("partition", IntegerType()), ("broker_id", IntegerType()),
    ("config", _struct(("resource_type", StringType()), ("resource_name", StringType()),
                       ("name", StringType()), ("value", StringType()))),
    ("redacted", ArrayType(StringType())))

SHARE_STATE_TYPE = _struct(
    ("snapshot_epoch", IntegerType()), ("state_epoch", IntegerType()),
    ("leader_epoch", IntegerType()), ("start_offset", LongType()),
    ("delivery_complete_count", IntegerType()), ("create_timestamp", TimestampType()),
    ("write_timestamp", TimestampType()),
    ("state_batches", ArrayType(_struct(
        ("first_offset", LongType()), ("last_offset", LongType()),
        ("delivery_state", StringType()), ("delivery_count", ShortType())))))

REMOTE_LOG_METADATA_TYPE = _struct(
    ("record_type", StringType()), ("topic_id", StringType()), ("topic", StringType()),
    ("partition", IntegerType()), ("segment_id", StringType()), ("start_offset", LongType()),
    ("end_offset", LongType()), ("broker_id", IntegerType()),
    ("max_timestamp", TimestampType()), ("event_timestamp", TimestampType()),
    ("segment_leader_epochs", ArrayType(_struct(("leader_epoch", IntegerType()),
                                                ("start_offset", LongType())))),
    ("segment_size", IntegerType()), ("custom_metadata", BinaryType()),
    ("state", StringType()), ("txn_index_empty", BooleanType()))

VALUE_TYPE = _struct(
    ("version", ShortType()), ("offset_commit", OFFSET_COMMIT_TYPE),
    ("group_metadata", GROUP_METADATA_TYPE), ("transaction", TRANSACTION_TYPE),
    ("metadata", METADATA_TYPE), ("share_state", SHARE_STATE_TYPE),
    ("remote_log_metadata", REMOTE_LOG_METADATA_TYPE), ("json", StringType()))

_ARROW_ATOMS = {ShortType: pa.int16(), IntegerType: pa.int32(), LongType: pa.int64(),
                StringType: pa.string(), BinaryType: pa.binary(), BooleanType: pa.bool_(),
                TimestampType: pa.timestamp("us", tz="UTC")}


def arrow_type(spark_type) -> pa.DataType:
    """The Arrow type Spark's to_arrow_type gives for these types (UTC timestamps)."""
    if isinstance(spark_type, StructType):
        return pa.struct([pa.field(f.name, arrow_type(f.dataType), f.nullable)
                          for f in spark_type.fields])
    if isinstance(spark_type, ArrayType):
        return pa.list_(pa.field("element", arrow_type(spark_type.elementType),
                                 spark_type.containsNull))
    return _ARROW_ATOMS[type(spark_type)]


KEY_ARROW_TYPE = arrow_type(KEY_TYPE)
VALUE_ARROW_TYPE = arrow_type(VALUE_TYPE)
_MAX_MILLIS = (2**63 - 1) // 1000


def decode_internal(topic: str, keys: pa.Array, values: pa.Array
                    ) -> tuple[pa.StructArray, pa.StructArray, list[str | None]]:
    """key_decoded and value_decoded of each record of `topic` (__consumer_offsets,
    __transaction_state, __share_group_state or __remote_log_metadata), and per row the reason
    it does not decode (None when it does)."""
    if topic == REMOTE_LOG_METADATA:
        return _remote_log_metadata(values)
    key_rows, value_rows, errors = [], [], []
    for key, value in zip(keys.to_pylist(), values.to_pylist()):
        try:
            key_record = decode_key(topic, key)
            value_record = decode_value(topic, key_record, value)
        except InternalRecordError as err:
            key_rows.append(None)
            value_rows.append(None)
            errors.append(err.reason)
            continue
        key_rows.append(_key_row(key_record))
        value_rows.append(None if value_record is None
                          else _value_row(key_record.record_type, value_record))
        errors.append(None)
    return (pa.array(key_rows, KEY_ARROW_TYPE), pa.array(value_rows, VALUE_ARROW_TYPE), errors)


def _key_row(record) -> dict:
    f = record.fields
    return {"record_type": record.record_type, "version": record.version,
            "group": f.get("group", f.get("groupId")), "topic": f.get("topic"),
            "partition": f.get("partition"), "member_id": f.get("memberId"),
            "transactional_id": f.get("transactionalId"), "topic_id": f.get("topicId"),
            "json": record.json()}


def _value_row(record_type: str, record) -> dict:
    row = {"version": record.version, "json": record.json()}
    if record_type in ("offset_commit", "legacy_offset_commit"):
        row["offset_commit"] = _offset_commit(record)
    elif record_type == "group_metadata":
        row["group_metadata"] = _group_metadata(record)
    elif record_type == "transaction_log":
        row["transaction"] = _transaction(record)
    elif record_type in ("share_snapshot", "share_update"):
        row["share_state"] = _share_state(record)
    return row


def _timestamp(ms: int | None) -> int | None:
    """Milliseconds as Arrow's microseconds; -1 (no value) and what does not fit are null."""
    if ms is None or ms == -1 or abs(ms) > _MAX_MILLIS:
        return None
    return ms * 1000


def _present(record, name: str, since: int, until: int = 0x7FFF):
    return record.fields[name] if since <= record.version <= until else None


def _offset_commit(record) -> dict:
    f = record.fields
    legacy = record.record_type == "legacy_offset_commit"
    topic_id = None if legacy else _present(record, "topicId", 4)
    return {"offset": f["offset"], "metadata": f["metadata"],
            "leader_epoch": None if legacy else _present(record, "leaderEpoch", 3),
            "commit_timestamp": _timestamp(f["commitTimestamp"]),
            "expire_timestamp": None if legacy
            else _timestamp(_present(record, "expireTimestamp", 1, 1)),
            "topic_id": None if topic_id == ZERO_UUID else topic_id}


def _group_metadata(record) -> dict:
    f = record.fields
    consumer = f["protocolType"] == "consumer"
    members = []
    for m in f["members"]:
        subscription = consumer_protocol(SUBSCRIPTION, m["subscription"]) if consumer else None
        assignment = consumer_protocol(ASSIGNMENT, m["assignment"]) if consumer else None
        members.append({
            "member_id": m["memberId"], "client_id": m["clientId"],
            "group_instance_id": m["groupInstanceId"], "client_host": m["clientHost"],
            "rebalance_timeout": m["rebalanceTimeout"] if record.version >= 1 else None,
            "session_timeout": m["sessionTimeout"], "subscription": m["subscription"],
            "assignment": m["assignment"],
            "subscribed_topics": None if subscription is None else subscription[1]["topics"],
            "assigned_partitions": None if assignment is None else [
                {"topic": tp["topic"], "partitions": tp["partitions"]}
                for tp in assignment[1]["assignedPartitions"]]})
    return {"protocol_type": f["protocolType"], "generation": f["generation"],
            "protocol": f["protocol"], "leader": f["leader"],
            "current_state_timestamp": _timestamp(_present(record, "currentStateTimestamp", 2)),
            "members": members}


def _transaction(record) -> dict:
    f = record.fields
    status = f["transactionStatus"]
    partitions = f["transactionPartitions"]
    return {"producer_id": f["producerId"], "producer_epoch": f["producerEpoch"],
            "previous_producer_id": _present(record, "previousProducerId", 1),
            "next_producer_id": _present(record, "nextProducerId", 1),
            "next_producer_epoch": _present(record, "nextProducerEpoch", 1),
            "transaction_timeout_ms": f["transactionTimeoutMs"],
            "state": TRANSACTION_STATES.get(status, str(status)),
            "partitions": None if partitions is None else [
                {"topic": p["topic"], "partitions": p["partitionIds"]} for p in partitions],
            "last_update_timestamp": _timestamp(f["transactionLastUpdateTimestampMs"]),
            "start_timestamp": _timestamp(f["transactionStartTimestampMs"]),
            "client_transaction_version": _present(record, "clientTransactionVersion", 1)}


# ConfigResource.Type ids, as Kafka names them
CONFIG_RESOURCE_TYPES = {0: "UNKNOWN", 2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER",
                         16: "CLIENT_METRICS", 32: "GROUP"}
_BROKER_ID = {"RegisterBrokerRecord": "brokerId", "UnregisterBrokerRecord": "brokerId",
              "FenceBrokerRecord": "id", "UnfenceBrokerRecord": "id",
              "BrokerRegistrationChangeRecord": "brokerId", "ProducerIdsRecord": "brokerId"}
_TOPIC_NAME = {"TopicRecord": "name", "ClearElrRecord": "topicName"}


def decode_metadata_columns(values: pa.Array) -> tuple[pa.StructArray, pa.StructArray,
                                                         list[str | None], pa.Array]:
    """key_decoded, value_decoded and the reasons of `__cluster_metadata` records, and their raw
    values with those of records that hold a secret or do not decode nulled."""
    key_rows, value_rows, errors, raw = [], [], [], []
    for value in values.to_pylist():
        try:
            record = redact(decode_metadata(value))
        except MetadataRecordError as err:
            key_rows.append(None)
            value_rows.append(None)
            errors.append(err.reason)
            raw.append(None)
            continue
        key_rows.append({"record_type": record.record_type, "version": record.api_key})
        value_rows.append({"version": record.version, "metadata": _metadata_row(record),
                           "json": record.json()})
        errors.append(None)
        raw.append(None if record.redacted else value)
    return (pa.array(key_rows, KEY_ARROW_TYPE), pa.array(value_rows, VALUE_ARROW_TYPE), errors,
            pa.array(raw, pa.binary()))


def _metadata_row(record) -> dict:
    f, name = record.fields, record.kind.message.name
    topic_id = f.get("topicId")
    row = {"record_type": record.record_type, "api_key": record.api_key,
           "topic_id": None if topic_id == ZERO_UUID else topic_id,
           "topic_name": f.get(_TOPIC_NAME.get(name, "")),
           "partition": f.get("partitionId"), "broker_id": f.get(_BROKER_ID.get(name, "")),
           "redacted": list(record.redacted)}
    if name == "ConfigRecord":
        rt = f["resourceType"]
        row["config"] = {"resource_type": CONFIG_RESOURCE_TYPES.get(rt, str(rt)),
                         "resource_name": f["resourceName"], "name": f["name"],
                         "value": f["value"]}
    return row


def _share_state(record) -> dict:
    f = record.fields
    snapshot = record.record_type == "share_snapshot"

    def unset(value: int) -> int | None:   # -1: not set (a start offset not being updated)
        return None if value == -1 else value

    return {"snapshot_epoch": f["snapshotEpoch"],
            "state_epoch": f["stateEpoch"] if snapshot else None,
            "leader_epoch": f["leaderEpoch"], "start_offset": unset(f["startOffset"]),
            "delivery_complete_count": unset(f["deliveryCompleteCount"]),
            "create_timestamp": _timestamp(f["createTimestamp"]) if snapshot else None,
            "write_timestamp": _timestamp(f["writeTimestamp"]) if snapshot else None,
            "state_batches": [{"first_offset": b["firstOffset"], "last_offset": b["lastOffset"],
                               "delivery_state": DELIVERY_STATES.get(b["deliveryState"],
                                                                     str(b["deliveryState"])),
                               "delivery_count": b["deliveryCount"]}
                              for b in f["stateBatches"]]}


_REMOTE_RECORD_TYPES = {0: "segment", 1: "segment_update", 2: "partition_delete",
                        3: "segment_snapshot"}


def _remote_log_metadata(values: pa.Array
                         ) -> tuple[pa.StructArray, pa.StructArray, list[str | None]]:
    value_rows, errors = [], []
    for value in values.to_pylist():
        try:
            read = read_metadata_message(value)
            decoded = metadata_value(read)
        except RemoteLogMetadataError as err:
            value_rows.append(None)
            errors.append(str(err))
            continue
        value_rows.append({"version": read.version, "json": struct_json(
            read.message.struct, read.fields, read.version),
            "remote_log_metadata": _remote_row(read.api_key, decoded)})
        errors.append(None)
    keys = pa.nulls(len(values), KEY_ARROW_TYPE)
    return keys, pa.array(value_rows, VALUE_ARROW_TYPE), errors


def _remote_row(api_key: int, v) -> dict:
    states = PARTITION_DELETE_STATES if api_key == 2 else SEGMENT_STATES
    epochs = getattr(v, "segment_leader_epochs", None)
    return {"record_type": _REMOTE_RECORD_TYPES[api_key],
            "topic_id": getattr(v, "topic_id", None), "topic": getattr(v, "topic", None),
            "partition": getattr(v, "partition", None),
            "segment_id": getattr(v, "segment_id", None),
            "start_offset": getattr(v, "start_offset", None),
            "end_offset": getattr(v, "end_offset", None), "broker_id": v.broker_id,
            "max_timestamp": _timestamp(getattr(v, "max_timestamp", None)),
            "event_timestamp": _timestamp(v.event_timestamp),
            "segment_leader_epochs": None if epochs is None else [
                {"leader_epoch": e, "start_offset": o} for e, o in epochs],
            "segment_size": getattr(v, "segment_size", None),
            "custom_metadata": getattr(v, "custom_metadata", None),
            "state": states[v.state], "txn_index_empty": getattr(v, "txn_index_empty", None)}
