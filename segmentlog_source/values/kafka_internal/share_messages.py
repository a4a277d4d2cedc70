"""The records of `__share_group_state` (KIP-932's share coordinator, Kafka 4.4), as message
definitions: where each share-partition of a share group stands, which its share consumers'
acknowledgements move.

    type  record          key                               value
     0    ShareSnapshot   groupId, topicId, partition       0 (flexible): the whole state
     1    ShareUpdate     groupId, topicId, partition       0 (flexible): the batches changed
                                                            since the last snapshot

A key is the int16 record type, then the key struct (never flexible); a value the int16
version, then the value struct; a null value is a tombstone (a deleted share group's state).
A state batch is a range of offsets with its delivery state (0 available, 2 acknowledged,
4 archived) and delivery count. deliveryCompleteCount (tag 0, Kafka 4.2+) is -1 when unset.
"""

from __future__ import annotations

from ...format.message_protocol import (INT8, INT16, INT32, INT64, STRING, UUID, Array, Struct,
                                        field, message)

SHARE_GROUP_STATE = "__share_group_state"

# ShareSnapshotValue / ShareUpdateValue's StateBatch.DeliveryState
DELIVERY_STATES = {0: "Available", 2: "Acked", 4: "Archived"}

_KEY_FIELDS = (field("groupId", STRING), field("topicId", UUID), field("partition", INT32))
_STATE_BATCHES = field("stateBatches", Array(Struct("StateBatch", (
    field("firstOffset", INT64), field("lastOffset", INT64), field("deliveryState", INT8),
    field("deliveryCount", INT16)))))
_DELIVERY_COMPLETE_COUNT = field("deliveryCompleteCount", INT32, "0+", tagged="0+", tag=0,
                                 default=-1)

SHARE_SNAPSHOT_VALUE = message(
    "ShareSnapshotValue", "0", "0+",
    field("snapshotEpoch", INT32), field("stateEpoch", INT32), field("leaderEpoch", INT32),
    field("startOffset", INT64), _DELIVERY_COMPLETE_COUNT, field("createTimestamp", INT64),
    field("writeTimestamp", INT64), _STATE_BATCHES)
SHARE_UPDATE_VALUE = message(
    "ShareUpdateValue", "0", "0+",
    field("snapshotEpoch", INT32), field("leaderEpoch", INT32), field("startOffset", INT64),
    _DELIVERY_COMPLETE_COUNT, _STATE_BATCHES)


def share_records() -> dict[int, tuple[str, Struct, object]]:
    """type -> (record type name, key struct, value Message)."""
    return {0: ("share_snapshot", Struct("ShareSnapshotKey", _KEY_FIELDS), SHARE_SNAPSHOT_VALUE),
            1: ("share_update", Struct("ShareUpdateKey", _KEY_FIELDS), SHARE_UPDATE_VALUE)}
