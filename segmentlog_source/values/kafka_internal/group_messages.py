"""The records of `__consumer_offsets` (Kafka 4.4's group coordinator), as message definitions.

A record's key starts with an int16, its record type; the rest of the key is the type's key
struct (never flexible, read at version 0 whatever the type). The value starts with an int16
version, then the type's value struct at that version; a null value is a tombstone.

    type  record                                  key                        value versions
     0    LegacyOffsetCommit (Kafka 0.8.2)        group, topic, partition    0
     1    OffsetCommit                            group, topic, partition    0-4 (4+ flexible)
     2    GroupMetadata (classic groups)          group                      0-4 (4+ flexible)
     3-8  ConsumerGroup* (KIP-848)                groupId [, memberId]       0 (flexible)
    10-15 ShareGroup* (KIP-932)                   groupId [, memberId]       0 (flexible)
    16    ConsumerGroupRegularExpression          groupId, regularExpression 0 (flexible)
    17,19-23 StreamsGroup* (KIP-1071)             groupId [, memberId]       0 (flexible)

Types 9 and 18 are unassigned. Field names are those Kafka's JSON converters print.
"""

from __future__ import annotations

from ...format.message_protocol import (BYTES, INT8, INT16, INT32, INT64, STRING, UINT16, UUID,
                                        Array, Struct, field, message)

GROUP_ID = field("groupId", STRING)
MEMBER_ID = field("memberId", STRING)
OFFSET_KEY = (field("group", STRING), field("topic", STRING), field("partition", INT32))


def _ints(name: str, **kw):
    return field(name, Array(INT32), **kw)


def _strings(name: str):
    return field(name, Array(STRING))


def _struct(name: str, *fields):
    return Struct(name, fields)


def _assignment_epochs():
    # "default": null in Kafka's JSON means no default: an empty list, printed unless empty
    return _ints("assignmentEpochs", nullable="0+", tagged="0+", tag=0)


def _assignment_metadata(name: str):
    return message(name, "0", "0+", field("assignmentEpoch", INT32),
                   field("assignmentTimestamp", INT64, "0+", tagged="0+", tag=0, default=0))


_TOPIC_PARTITION_IDS = _struct("TopicPartition", field("topicId", UUID), _ints("partitions"))
_CONSUMER_TOPIC_PARTITIONS = _struct("TopicPartitions", field("topicId", UUID),
                                     _ints("partitions"), _assignment_epochs())
_SHARE_TOPIC_PARTITIONS = _struct("TopicPartitions", field("topicId", UUID), _ints("partitions"))
_TASK_IDS = _struct("TaskIds", field("subtopologyId", STRING), _ints("partitions"))
_TASK_IDS_EPOCHS = _struct("TaskIds", field("subtopologyId", STRING), _ints("partitions"),
                           _assignment_epochs())
_KEY_VALUE = (field("key", STRING), field("value", STRING))
_TOPIC_INFO = _struct("TopicInfo", field("name", STRING), field("partitions", INT32),
                      field("replicationFactor", INT16),
                      field("topicConfigs", Array(_struct("TopicConfig", *_KEY_VALUE))))
_PARTITIONS_INFO = _struct("TopicPartitionsInfo", field("topicId", UUID),
                           field("topicName", STRING), _ints("partitions"))

OFFSET_COMMIT_VALUE = message(
    "OffsetCommitValue", "0-4", "4+",
    field("offset", INT64),
    field("leaderEpoch", INT32, "3+", default=-1),
    field("metadata", STRING),
    field("commitTimestamp", INT64),
    field("expireTimestamp", INT64, "1", default=-1),
    field("topicId", UUID, "4+", tagged="4+", tag=0))

MEMBER_METADATA = _struct(
    "MemberMetadata",
    field("memberId", STRING),
    field("groupInstanceId", STRING, "3+", nullable="3+", default=None),
    field("clientId", STRING),
    field("clientHost", STRING),
    field("rebalanceTimeout", INT32, "1+", default=-1),
    field("sessionTimeout", INT32),
    field("subscription", BYTES),
    field("assignment", BYTES))

GROUP_METADATA_VALUE = message(
    "GroupMetadataValue", "0-4", "4+",
    field("protocolType", STRING),
    field("generation", INT32),
    field("protocol", STRING, nullable="0+"),
    field("leader", STRING, nullable="0+"),
    field("currentStateTimestamp", INT64, "2+", default=-1),
    field("members", Array(MEMBER_METADATA)))

_CLASSIC_MEMBER_METADATA = _struct(
    "ClassicMemberMetadata", field("sessionTimeoutMs", INT32),
    field("supportedProtocols", Array(_struct("ClassicProtocol", field("name", STRING),
                                              field("metadata", BYTES)))))

_VALUES = {
    0: message("LegacyOffsetCommitValue", "0", "none", field("offset", INT64),
               field("metadata", STRING), field("commitTimestamp", INT64)),
    1: OFFSET_COMMIT_VALUE,
    2: GROUP_METADATA_VALUE,
    3: message("ConsumerGroupMetadataValue", "0", "0+", field("epoch", INT32),
               field("metadataHash", INT64, "0+", tagged="0+", tag=0, default=0)),
    4: message("ConsumerGroupPartitionMetadataValue", "0", "0+", field("topics", Array(_struct(
        "TopicMetadata", field("topicId", UUID), field("topicName", STRING),
        field("numPartitions", INT32),
        field("partitionMetadata", Array(_struct("PartitionMetadata", field("partition", INT32),
                                                 _strings("racks")))))))),
    5: message("ConsumerGroupMemberMetadataValue", "0", "0+",
               field("instanceId", STRING, nullable="0+"),
               field("rackId", STRING, nullable="0+"),
               field("clientId", STRING), field("clientHost", STRING),
               _strings("subscribedTopicNames"),
               field("subscribedTopicRegex", STRING, nullable="0+"),
               field("rebalanceTimeoutMs", INT32, default=-1),
               field("serverAssignor", STRING, nullable="0+"),
               field("classicMemberMetadata", _CLASSIC_MEMBER_METADATA, "0+", nullable="0+",
                     tagged="0+", tag=0)),
    6: _assignment_metadata("ConsumerGroupTargetAssignmentMetadataValue"),
    7: message("ConsumerGroupTargetAssignmentMemberValue", "0", "0+",
               field("topicPartitions", Array(_TOPIC_PARTITION_IDS))),
    8: message("ConsumerGroupCurrentMemberAssignmentValue", "0", "0+",
               field("memberEpoch", INT32), field("previousMemberEpoch", INT32),
               field("state", INT8),
               field("assignedPartitions", Array(_CONSUMER_TOPIC_PARTITIONS)),
               field("partitionsPendingRevocation", Array(_CONSUMER_TOPIC_PARTITIONS))),
    10: message("ShareGroupMemberMetadataValue", "0", "0+",
                field("rackId", STRING, nullable="0+"), field("clientId", STRING),
                field("clientHost", STRING), _strings("subscribedTopicNames")),
    11: message("ShareGroupMetadataValue", "0", "0+", field("epoch", INT32),
                field("metadataHash", INT64)),
    12: _assignment_metadata("ShareGroupTargetAssignmentMetadataValue"),
    13: message("ShareGroupTargetAssignmentMemberValue", "0", "0+",
                field("topicPartitions", Array(_TOPIC_PARTITION_IDS))),
    14: message("ShareGroupCurrentMemberAssignmentValue", "0", "0+",
                field("memberEpoch", INT32), field("previousMemberEpoch", INT32),
                field("state", INT8),
                field("assignedPartitions", Array(_SHARE_TOPIC_PARTITIONS))),
    15: message("ShareGroupStatePartitionMetadataValue", "0", "0+",
                field("initializingTopics", Array(_PARTITIONS_INFO)),
                field("initializedTopics", Array(_PARTITIONS_INFO)),
                field("deletingTopics", Array(_struct("TopicInfo", field("topicId", UUID),
                                                      field("topicName", STRING))))),
    16: message("ConsumerGroupRegularExpressionValue", "0", "0+", _strings("topics"),
                field("version", INT64), field("timestamp", INT64)),
    17: message("StreamsGroupMetadataValue", "0", "0+", field("epoch", INT32),
                field("metadataHash", INT64),
                field("validatedTopologyEpoch", INT32, "0+", tagged="0+", tag=0, default=-1),
                field("lastAssignmentConfigs", Array(_struct("LastAssignmentConfig",
                                                             *_KEY_VALUE)),
                      nullable="0+", tagged="0+", tag=1),
                field("storedDescriptionTopologyEpoch", INT32, "0+", tagged="0+", tag=2,
                      default=-1),
                field("failedDescriptionTopologyEpoch", INT32, "0+", tagged="0+", tag=3,
                      default=-1)),
    19: message("StreamsGroupMemberMetadataValue", "0", "0+",
                field("instanceId", STRING, nullable="0+"),
                field("rackId", STRING, nullable="0+"),
                field("clientId", STRING), field("clientHost", STRING),
                field("rebalanceTimeoutMs", INT32, default=-1),
                field("topologyEpoch", INT32), field("processId", STRING),
                field("userEndpoint", _struct("Endpoint", field("host", STRING),
                                              field("port", UINT16)),
                      nullable="0+", default=None),
                field("clientTags", Array(_struct("KeyValue", *_KEY_VALUE)))),
    20: _assignment_metadata("StreamsGroupTargetAssignmentMetadataValue"),
    21: message("StreamsGroupTargetAssignmentMemberValue", "0", "0+",
                *(field(n, Array(_TASK_IDS)) for n in ("activeTasks", "standbyTasks",
                                                       "warmupTasks"))),
    22: message("StreamsGroupCurrentMemberAssignmentValue", "0", "0+",
                field("memberEpoch", INT32), field("previousMemberEpoch", INT32),
                field("state", INT8),
                *(field(n, Array(_TASK_IDS_EPOCHS))
                  for n in ("activeTasks", "standbyTasks", "warmupTasks",
                            "activeTasksPendingRevocation", "standbyTasksPendingRevocation",
                            "warmupTasksPendingRevocation"))),
    23: message("StreamsGroupTopologyValue", "0", "0+", field("epoch", INT32),
                field("subtopologies", Array(_struct(
                    "Subtopology", field("subtopologyId", STRING), _strings("sourceTopics"),
                    _strings("sourceTopicRegex"),
                    field("stateChangelogTopics", Array(_TOPIC_INFO)),
                    _strings("repartitionSinkTopics"),
                    field("repartitionSourceTopics", Array(_TOPIC_INFO)),
                    field("copartitionGroups", Array(_struct(
                        "CopartitionGroup", field("sourceTopics", Array(INT16)),
                        field("sourceTopicRegex", Array(INT16)),
                        field("repartitionSourceTopics", Array(INT16))))))))),
}

# type -> (the record type as Kafka's CoordinatorRecordType names it, in snake case; key fields)
_KEYS = {
    0: ("legacy_offset_commit", OFFSET_KEY),
    1: ("offset_commit", OFFSET_KEY),
    2: ("group_metadata", (field("group", STRING),)),
    3: ("consumer_group_metadata", (GROUP_ID,)),
    4: ("consumer_group_partition_metadata", (GROUP_ID,)),
    5: ("consumer_group_member_metadata", (GROUP_ID, MEMBER_ID)),
    6: ("consumer_group_target_assignment_metadata", (GROUP_ID,)),
    7: ("consumer_group_target_assignment_member", (GROUP_ID, MEMBER_ID)),
    8: ("consumer_group_current_member_assignment", (GROUP_ID, MEMBER_ID)),
    10: ("share_group_member_metadata", (GROUP_ID, MEMBER_ID)),
    11: ("share_group_metadata", (GROUP_ID,)),
    12: ("share_group_target_assignment_metadata", (GROUP_ID,)),
    13: ("share_group_target_assignment_member", (GROUP_ID, MEMBER_ID)),
    14: ("share_group_current_member_assignment", (GROUP_ID, MEMBER_ID)),
    15: ("share_group_state_partition_metadata", (GROUP_ID,)),
    16: ("consumer_group_regular_expression",
         (GROUP_ID, field("regularExpression", STRING))),
    17: ("streams_group_metadata", (GROUP_ID,)),
    19: ("streams_group_member_metadata", (GROUP_ID, MEMBER_ID)),
    20: ("streams_group_target_assignment_metadata", (GROUP_ID,)),
    21: ("streams_group_target_assignment_member", (GROUP_ID, MEMBER_ID)),
    22: ("streams_group_current_member_assignment", (GROUP_ID, MEMBER_ID)),
    23: ("streams_group_topology", (GROUP_ID,)),
}


def group_records() -> dict[int, tuple[str, Struct, object]]:
    """type -> (record type name, key struct, value Message)."""
    out = {}
    for type_id, (name, key_fields) in _KEYS.items():
        value = _VALUES[type_id]
        key_class = value.name[:-len("Value")] + "Key"
        out[type_id] = (name, Struct(key_class, key_fields), value)
    return out
