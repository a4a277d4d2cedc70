"""The records of `__transaction_state`, the classic consumer protocol's subscription and
assignment (the bytes a "consumer" group's GroupMetadata members carry), and which coordinator's
records each internal topic holds (`__consumer_offsets`: group_messages.py,
`__share_group_state`: share_messages.py).

    __transaction_state   key: int16 type (0) + TransactionalId
                          value: int16 version (0, or 1 flexible since Kafka 4.0) +
                          TransactionLogValue; a null value is a tombstone
    subscription          int16 version + ConsumerProtocolSubscription (never flexible)
    assignment            int16 version + ConsumerProtocolAssignment (never flexible)

Kafka reads a subscription or assignment of any version with its newest layout (fields of later
versions are read when the version says so), and so does this module.
"""

from __future__ import annotations

from dataclasses import dataclass

from .group_messages import group_records
from .share_messages import SHARE_GROUP_STATE, share_records  # noqa: F401 (re-exported)
from ...format.message_protocol import (BYTES, INT8, INT16, INT32, INT64, STRING, Array, Message,
                                        Struct, field, message)

CONSUMER_OFFSETS = "__consumer_offsets"
TRANSACTION_STATE = "__transaction_state"

TRANSACTION_LOG_VALUE = message(
    "TransactionLogValue", "0-1", "1+",
    field("producerId", INT64),
    field("previousProducerId", INT64, tagged="1+", tag=0, default=-1),
    field("nextProducerId", INT64, tagged="1+", tag=1, default=-1),
    field("producerEpoch", INT16),
    field("nextProducerEpoch", INT16, tagged="1+", tag=3, default=-1),
    field("transactionTimeoutMs", INT32),
    field("transactionStatus", INT8),
    field("transactionPartitions", Array(Struct("PartitionsSchema", (
        field("topic", STRING), field("partitionIds", Array(INT32))))), nullable="0+"),
    field("transactionLastUpdateTimestampMs", INT64),
    field("transactionStartTimestampMs", INT64),
    field("clientTransactionVersion", INT16, tagged="1+", tag=2, default=0))

# TransactionState ids as the transaction coordinator names them (TransactionState.stateName)
TRANSACTION_STATES = {0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort",
                      4: "CompleteCommit", 5: "CompleteAbort", 6: "Dead", 7: "PrepareEpochFence"}

_TOPIC_PARTITIONS = (field("topic", STRING), field("partitions", Array(INT32)))
SUBSCRIPTION = message(
    "ConsumerProtocolSubscription", "0-3", "none",
    field("topics", Array(STRING)),
    field("userData", BYTES, nullable="0+", default=None),
    field("ownedPartitions", Array(Struct("TopicPartition", _TOPIC_PARTITIONS)), "1+"),
    field("generationId", INT32, "2+", default=-1),
    field("rackId", STRING, "3+", nullable="3+", default=None))
ASSIGNMENT = message(
    "ConsumerProtocolAssignment", "0-3", "none",
    field("assignedPartitions", Array(Struct("TopicPartition", _TOPIC_PARTITIONS))),
    field("userData", BYTES, nullable="0+", default=None))


@dataclass(frozen=True)
class RecordKind:
    """One record type of a coordinator: its name, key struct and value message."""

    type_id: int
    name: str
    key: Struct
    value: Message


def _table(records: dict) -> dict[int, RecordKind]:
    return {t: RecordKind(t, name, key, value) for t, (name, key, value) in records.items()}


COORDINATORS: dict[str, dict[int, RecordKind]] = {
    CONSUMER_OFFSETS: _table(group_records()),
    TRANSACTION_STATE: _table({0: ("transaction_log", Struct("TransactionLogKey", (
        field("transactionalId", STRING),)), TRANSACTION_LOG_VALUE)}),
    SHARE_GROUP_STATE: _table(share_records()),
}
