"""The records of KRaft's cluster metadata log (`__cluster_metadata`) and its snapshots, as
message definitions: every record type and version of Kafka 4.4's metadata schema.

A metadata record's value is a frame, then the record:

    uvarint frame version (1; Kafka refuses 0, the 2.8 preview's, and any other)
    uvarint api key       the record type (the table below)
    uvarint version       the record's version
    the record            every version is flexible (compact strings and arrays, tagged fields)

    key  record                          versions   key  record                          versions
     0   RegisterBrokerRecord            0-4        15   ProducerIdsRecord               0
     1   UnregisterBrokerRecord          0          17   BrokerRegistrationChangeRecord  0-3
     2   TopicRecord                     0          18   AccessControlEntryRecord        0
     3   PartitionRecord                 0-2        19   RemoveAccessControlEntryRecord  0
     4   ConfigRecord                    0          20   NoOpRecord                      0
     5   PartitionChangeRecord           0-2        21   ZkMigrationStateRecord          0
     7   FenceBrokerRecord               0          22   RemoveUserScramCredentialRecord 0
     8   UnfenceBrokerRecord             0          23   BeginTransactionRecord          0
     9   RemoveTopicRecord               0          24   EndTransactionRecord            0
    10   DelegationTokenRecord           0          25   AbortTransactionRecord          0
    11   UserScramCredentialRecord       0          26   RemoveDelegationTokenRecord     0
    12   FeatureLevelRecord              0          27   RegisterControllerRecord        0
    14   ClientQuotaRecord               0          28   ClearElrRecord                  0
                                                    29   UnregisterControllerRecord      0

Keys 6, 13 and 16 are unassigned. Kafka names a type by its constant (TOPIC_RECORD for
TopicRecord); field names are those Kafka's JSON converters print (camelCase).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...format.message_protocol import (BOOL, BYTES, FLOAT64, INT8, INT16, INT32, INT64, STRING,
                                        UINT16, UUID, Array, Message, Struct, field, message)

CLUSTER_METADATA = "__cluster_metadata"


def _metadata(name: str, valid: str, *fields) -> Message:
    return message(name, valid, "0+", *fields)


def _endpoints(name: str):
    return field("endPoints", Array(Struct(name, (
        field("name", STRING), field("host", STRING), field("port", UINT16),
        field("securityProtocol", INT16)))))


def _features(name: str):
    return field("features", Array(Struct(name, (
        field("name", STRING), field("minSupportedVersion", INT16),
        field("maxSupportedVersion", INT16)))))


def _tagged_ints(name: str, tag: int, since: str = "0+"):
    """A nullable int32 array tagged from `since`, null by default."""
    return field(name, Array(INT32), since, nullable=since, tagged=since, tag=tag, default=None)


_MESSAGES: dict[int, Message] = {
    0: _metadata(
        "RegisterBrokerRecord", "0-4",
        field("brokerId", INT32),
        field("isMigratingZkBroker", BOOL, "2+", default=False),
        field("incarnationId", UUID),
        field("brokerEpoch", INT64),
        _endpoints("BrokerEndpoint"),
        _features("BrokerFeature"),
        field("rack", STRING, nullable="0+"),
        field("fenced", BOOL, default=True),
        field("inControlledShutdown", BOOL, "1+", default=False),
        field("logDirs", Array(UUID), "3+", tagged="3+", tag=0),
        field("cordonedLogDirs", Array(UUID), "4+", nullable="4+", tagged="4+", tag=1,
              default=None)),
    1: _metadata("UnregisterBrokerRecord", "0",
                 field("brokerId", INT32), field("brokerEpoch", INT64)),
    2: _metadata("TopicRecord", "0", field("name", STRING), field("topicId", UUID)),
    3: _metadata(
        "PartitionRecord", "0-2",
        field("partitionId", INT32, default=-1),
        field("topicId", UUID),
        field("replicas", Array(INT32)),
        field("isr", Array(INT32)),
        field("removingReplicas", Array(INT32)),
        field("addingReplicas", Array(INT32)),
        field("leader", INT32, default=-1),
        field("leaderRecoveryState", INT8, "0+", tagged="0+", tag=0, default=0),
        field("leaderEpoch", INT32, default=-1),
        field("partitionEpoch", INT32, default=-1),
        field("directories", Array(UUID), "1+"),
        _tagged_ints("eligibleLeaderReplicas", 1, "2+"),
        _tagged_ints("lastKnownElr", 2, "2+")),
    4: _metadata(
        "ConfigRecord", "0",
        field("resourceType", INT8),
        field("resourceName", STRING),
        field("name", STRING),
        field("value", STRING, nullable="0+")),
    5: _metadata(
        "PartitionChangeRecord", "0-2",
        field("partitionId", INT32, default=-1),
        field("topicId", UUID),
        _tagged_ints("isr", 0),
        field("leader", INT32, "0+", tagged="0+", tag=1, default=-2),
        _tagged_ints("replicas", 2),
        _tagged_ints("removingReplicas", 3),
        _tagged_ints("addingReplicas", 4),
        field("leaderRecoveryState", INT8, "0+", tagged="0+", tag=5, default=-1),
        field("directories", Array(UUID), "1+", nullable="1+", tagged="1+", tag=8,
              default=None),
        _tagged_ints("eligibleLeaderReplicas", 6, "2+"),
        _tagged_ints("lastKnownElr", 7, "2+")),
    7: _metadata("FenceBrokerRecord", "0", field("id", INT32), field("epoch", INT64)),
    8: _metadata("UnfenceBrokerRecord", "0", field("id", INT32), field("epoch", INT64)),
    9: _metadata("RemoveTopicRecord", "0", field("topicId", UUID)),
    10: _metadata(
        "DelegationTokenRecord", "0",
        field("owner", STRING),
        field("requester", STRING),
        field("renewers", Array(STRING)),
        field("issueTimestamp", INT64),
        field("maxTimestamp", INT64),
        field("expirationTimestamp", INT64),
        field("tokenId", STRING)),
    11: _metadata(
        "UserScramCredentialRecord", "0",
        field("name", STRING),
        field("mechanism", INT8),
        field("salt", BYTES),
        field("storedKey", BYTES),
        field("serverKey", BYTES),
        field("iterations", INT32)),
    12: _metadata("FeatureLevelRecord", "0",
                  field("name", STRING), field("featureLevel", INT16)),
    14: _metadata(
        "ClientQuotaRecord", "0",
        field("entity", Array(Struct("EntityData", (
            field("entityType", STRING), field("entityName", STRING, nullable="0+"))))),
        field("key", STRING),
        field("value", FLOAT64),
        field("remove", BOOL)),
    15: _metadata(
        "ProducerIdsRecord", "0",
        field("brokerId", INT32),
        field("brokerEpoch", INT64, default=-1),
        field("nextProducerId", INT64)),
    17: _metadata(
        "BrokerRegistrationChangeRecord", "0-3",
        field("brokerId", INT32),
        field("brokerEpoch", INT64),
        field("fenced", INT8, "0+", tagged="0+", tag=0),
        field("inControlledShutdown", INT8, "1+", tagged="1+", tag=1),
        field("logDirs", Array(UUID), "2+", tagged="2+", tag=2),
        field("cordonedLogDirs", Array(UUID), "3+", nullable="3+", tagged="3+", tag=3,
              default=None)),
    18: _metadata(
        "AccessControlEntryRecord", "0",
        field("id", UUID),
        field("resourceType", INT8),
        field("resourceName", STRING),
        field("patternType", INT8),
        field("principal", STRING),
        field("host", STRING),
        field("operation", INT8),
        field("permissionType", INT8)),
    19: _metadata("RemoveAccessControlEntryRecord", "0", field("id", UUID)),
    20: _metadata("NoOpRecord", "0"),
    21: _metadata("ZkMigrationStateRecord", "0", field("zkMigrationState", INT8)),
    22: _metadata("RemoveUserScramCredentialRecord", "0",
                  field("name", STRING), field("mechanism", INT8)),
    23: _metadata("BeginTransactionRecord", "0",
                  field("name", STRING, "0+", nullable="0+", tagged="0+", tag=0, default=None)),
    24: _metadata("EndTransactionRecord", "0"),
    25: _metadata("AbortTransactionRecord", "0",
                  field("reason", STRING, "0+", nullable="0+", tagged="0+", tag=0,
                        default=None)),
    26: _metadata("RemoveDelegationTokenRecord", "0", field("tokenId", STRING)),
    27: _metadata(
        "RegisterControllerRecord", "0",
        field("controllerId", INT32),
        field("incarnationId", UUID),
        field("zkMigrationReady", BOOL),
        _endpoints("ControllerEndpoint"),
        _features("ControllerFeature")),
    28: _metadata("ClearElrRecord", "0", field("topicName", STRING)),
    29: _metadata("UnregisterControllerRecord", "0", field("controllerId", INT32)),
}


# KRaft's voter set, the value of a KRAFT_VOTERS control record (key type 6) in the metadata
# log and at the head of a snapshot of a cluster whose kraft.version is 1 or more (Kafka reads
# it at version 0; its own `version` field says which layout it holds).
VOTERS_RECORD = message(
    "VotersRecord", "0", "0+",
    field("version", INT16),
    field("voters", Array(Struct("Voter", (
        field("voterId", INT32),
        field("voterDirectoryId", UUID),
        field("endpoints", Array(Struct("Endpoint", (
            field("name", STRING), field("host", STRING), field("port", UINT16))))),
        field("kRaftVersionFeature", Struct("KRaftVersionFeature", (
            field("minSupportedVersion", INT16), field("maxSupportedVersion", INT16)))))))))


@dataclass(frozen=True)
class MetadataRecordType:
    """One record type: its api key, Kafka's constant name (TOPIC_RECORD) and its message."""

    api_key: int
    name: str
    message: Message


def _constant(class_name: str) -> str:
    """Kafka's MetadataRecordType constant: TopicRecord -> TOPIC_RECORD."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", class_name).upper()


METADATA_RECORD_TYPES: dict[int, MetadataRecordType] = {
    key: MetadataRecordType(key, _constant(msg.name), msg) for key, msg in _MESSAGES.items()}
