"""The values of Kafka's `__remote_log_metadata` topic (KIP-405's topic-based
RemoteLogMetadataManager), decoded as its RemoteLogMetadataSerde reads them.

Every record has a null key and this value (AbstractApiMessageSerde's framing)::

    uvarint  frame version   1 (0 is refused by name, anything else is unknown)
    uvarint  apiKey          0 RemoteLogSegmentMetadataRecord        a copy starts: offsets, epochs
                             1 RemoteLogSegmentMetadataUpdateRecord  a later state of that segment
                             2 RemotePartitionDeleteMetadataRecord   a partition's delete state
                             3 RemoteLogSegmentMetadataSnapshotRecord (the serde's; never written)
    uvarint  version         0, the only version of all four
    the message, flexible (compact strings and arrays, tagged fields); nothing may follow it

A segment's offsets are inclusive (EndOffset = the next segment's base - 1), and its
SegmentLeaderEpochs hold the epochs whose start falls inside it, the first clipped to its start.
TxnIndexEmpty (tag 0, Kafka 4.x) is written only when true. Like Kafka's RemoteLogSegmentMetadata,
a segment must start at offset >= 0, end at or after its start, and name at least one epoch.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import CorruptDataError
from .message_protocol import (BOOL, BYTES, INT8, INT32, INT64, STRING, UUID, Array, Message,
                               ReadFailure, Reader, Struct, StructValue, field, message,
                               read_struct)

TOPIC = "__remote_log_metadata"
FRAME_VERSION = 1

# RemoteLogSegmentState (storage/api/.../RemoteLogSegmentState.java)
COPY_SEGMENT_STARTED, COPY_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED, DELETE_SEGMENT_FINISHED = \
    range(4)
SEGMENT_STATES = {COPY_SEGMENT_STARTED: "COPY_SEGMENT_STARTED",
                  COPY_SEGMENT_FINISHED: "COPY_SEGMENT_FINISHED",
                  DELETE_SEGMENT_STARTED: "DELETE_SEGMENT_STARTED",
                  DELETE_SEGMENT_FINISHED: "DELETE_SEGMENT_FINISHED"}
# RemotePartitionDeleteState (.../RemotePartitionDeleteState.java)
DELETE_PARTITION_MARKED, DELETE_PARTITION_STARTED, DELETE_PARTITION_FINISHED = range(3)
PARTITION_DELETE_STATES = {DELETE_PARTITION_MARKED: "DELETE_PARTITION_MARKED",
                           DELETE_PARTITION_STARTED: "DELETE_PARTITION_STARTED",
                           DELETE_PARTITION_FINISHED: "DELETE_PARTITION_FINISHED"}

# -- the four messages, as kafka-storage's message/*.json define them --------------------------
TOPIC_ID_PARTITION = Struct("TopicIdPartitionEntry", (
    field("name", STRING), field("id", UUID), field("partition", INT32)))
SEGMENT_ID = Struct("RemoteLogSegmentIdEntry", (
    field("topicIdPartition", TOPIC_ID_PARTITION), field("id", UUID)))
SEGMENT_LEADER_EPOCHS = field("segmentLeaderEpochs", Array(Struct("SegmentLeaderEpochEntry", (
    field("leaderEpoch", INT32), field("offset", INT64)))))
CUSTOM_METADATA = field("customMetadata", BYTES, nullable="0+", default=None)
TXN_INDEX_EMPTY = field("txnIndexEmpty", BOOL, tagged="0+", tag=0, default=False)

SEGMENT_METADATA_RECORD = message(
    "RemoteLogSegmentMetadataRecord", "0", "0+",
    field("remoteLogSegmentId", SEGMENT_ID),
    field("startOffset", INT64), field("endOffset", INT64), field("brokerId", INT32),
    field("maxTimestampMs", INT64), field("eventTimestampMs", INT64), SEGMENT_LEADER_EPOCHS,
    field("segmentSizeInBytes", INT32), CUSTOM_METADATA, field("remoteLogSegmentState", INT8),
    TXN_INDEX_EMPTY)
SEGMENT_METADATA_UPDATE_RECORD = message(
    "RemoteLogSegmentMetadataUpdateRecord", "0", "0+",
    field("remoteLogSegmentId", SEGMENT_ID), field("brokerId", INT32),
    field("eventTimestampMs", INT64), CUSTOM_METADATA, field("remoteLogSegmentState", INT8))
PARTITION_DELETE_RECORD = message(
    "RemotePartitionDeleteMetadataRecord", "0", "0+",
    field("topicIdPartition", TOPIC_ID_PARTITION), field("brokerId", INT32),
    field("eventTimestampMs", INT64), field("remotePartitionDeleteState", INT8))
SEGMENT_METADATA_SNAPSHOT_RECORD = message(
    "RemoteLogSegmentMetadataSnapshotRecord", "0", "0+",
    field("segmentId", UUID), field("startOffset", INT64), field("endOffset", INT64),
    field("brokerId", INT32), field("maxTimestampMs", INT64), field("eventTimestampMs", INT64),
    SEGMENT_LEADER_EPOCHS, field("segmentSizeInBytes", INT32), CUSTOM_METADATA,
    field("remoteLogSegmentState", INT8), TXN_INDEX_EMPTY)

MESSAGES: dict[int, Message] = {0: SEGMENT_METADATA_RECORD, 1: SEGMENT_METADATA_UPDATE_RECORD,
                                2: PARTITION_DELETE_RECORD, 3: SEGMENT_METADATA_SNAPSHOT_RECORD}


# -- what a value decodes to -----------------------------------------------------------------
@dataclass(frozen=True)
class RemoteLogSegmentMetadata:
    """A remote segment (apiKey 0; the cache keeps the latest update's state, broker, time and
    custom metadata in it, as Kafka's createWithUpdates does)."""

    topic_id: str                  # Kafka's Uuid.toString: URL-safe base64, 22 characters
    topic: str
    partition: int
    segment_id: str
    start_offset: int
    end_offset: int                # inclusive
    broker_id: int
    max_timestamp: int             # ms, the segment's largest record timestamp
    event_timestamp: int           # ms, the broker's clock at the event
    segment_leader_epochs: tuple   # ((epoch, start offset), ...), epochs ascending
    segment_size: int              # bytes of the .log
    custom_metadata: bytes | None
    state: int
    txn_index_empty: bool

    @property
    def state_name(self) -> str:
        return SEGMENT_STATES[self.state]


@dataclass(frozen=True)
class RemoteLogSegmentMetadataUpdate:
    """A remote segment's later state (apiKey 1): it carries no offsets."""

    topic_id: str
    topic: str
    partition: int
    segment_id: str
    broker_id: int
    event_timestamp: int
    custom_metadata: bytes | None
    state: int

    @property
    def state_name(self) -> str:
        return SEGMENT_STATES[self.state]


@dataclass(frozen=True)
class RemotePartitionDeleteMetadata:
    """A partition's remote delete state (apiKey 2; Kafka 4.4's broker writes none)."""

    topic_id: str
    topic: str
    partition: int
    broker_id: int
    event_timestamp: int
    state: int

    @property
    def state_name(self) -> str:
        return PARTITION_DELETE_STATES[self.state]


@dataclass(frozen=True)
class RemoteLogSegmentMetadataSnapshot:
    """A segment as a metadata snapshot would hold it (apiKey 3): no topic partition."""

    segment_id: str
    start_offset: int
    end_offset: int
    broker_id: int
    max_timestamp: int
    event_timestamp: int
    segment_leader_epochs: tuple
    segment_size: int
    custom_metadata: bytes | None
    state: int
    txn_index_empty: bool

    @property
    def state_name(self) -> str:
        return SEGMENT_STATES[self.state]


RemoteLogMetadataValue = (RemoteLogSegmentMetadata | RemoteLogSegmentMetadataUpdate
                          | RemotePartitionDeleteMetadata | RemoteLogSegmentMetadataSnapshot)


class RemoteLogMetadataError(CorruptDataError):
    """A value that does not decode. `kafka` is the message of the exception Kafka's
    RemoteLogMetadataSerde throws for it, which DumpLogSegments prints."""

    def __init__(self, reason: str, position: int | None = None, kafka: str = ""):
        super().__init__(reason, None, position)
        self.kafka = kafka

    def __reduce__(self):
        return (type(self), (self.reason, self.position, self.kafka))


@dataclass(frozen=True)
class MetadataMessage:
    """A value's framing and its message's fields, as read (before Kafka's checks)."""

    api_key: int
    version: int
    message: Message
    fields: StructValue


def _frame_short(r: Reader, entity: str) -> int:
    """AbstractApiMessageSerde's unsignedIntToShort: an unsigned varint as a Java short."""
    at = r.pos
    try:
        value = r.uvarint(f"the {entity}")
    except ReadFailure as failure:
        raise RemoteLogMetadataError(failure.reason, at, f"Error while reading {entity}") from None
    if value > 0x7FFF:
        raise RemoteLogMetadataError(f"the {entity} {value} at byte {at} is over 32767", at,
                                     f"Value for {entity} was too large.")
    return (value + 0x8000) % 0x10000 - 0x8000


def read_metadata_message(value) -> MetadataMessage:
    """The framing and fields of one `__remote_log_metadata` value, read as
    AbstractApiMessageSerde reads them (nothing may follow the message)."""
    if value is None:
        raise RemoteLogMetadataError("a record without a value (RemoteLogMetadataSerde needs one)")
    data = bytes(value)
    r = Reader(data)
    frame = _frame_short(r, "frame version")
    if frame == 0:
        raise RemoteLogMetadataError(
            "frame version 0 at byte 0 (Kafka: could not deserialize metadata record with frame "
            "version 0)", 0, "Could not deserialize metadata record with frame version 0. Note "
            "that upgrades from the preview release of KRaft in 2.8 to newer versions are not "
            "supported.")
    if frame != FRAME_VERSION:
        raise RemoteLogMetadataError(
            f"unknown frame version {frame} at byte 0 (known: {FRAME_VERSION})", 0,
            f"Could not deserialize metadata record due to unknown frame version {frame}(only "
            f"frame version {FRAME_VERSION} is supported)")
    at = r.pos
    api_key = _frame_short(r, "type")
    at_version = r.pos
    version = _frame_short(r, "version")
    msg = MESSAGES.get(api_key)
    if msg is None:
        raise RemoteLogMetadataError(
            f"unknown apiKey {api_key} at byte {at} (known: 0 RemoteLogSegmentMetadataRecord .. "
            "3 RemoteLogSegmentMetadataSnapshotRecord)", at,
            "org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id "
            f"{api_key}")
    failed = f"Failed to deserialize record with type {api_key}"
    if version not in msg.valid:
        raise RemoteLogMetadataError(f"unknown version {version} of {msg.name} at byte "
                                     f"{at_version} (known: {msg.valid.lo})", at_version, failed)
    try:
        fields = read_struct(r, msg.struct, version, version in msg.flexible, nested=False)
    except ReadFailure as failure:
        where = f"{msg.name}.{failure.where()}" if failure.path else msg.name
        raise RemoteLogMetadataError(f"{where}: {failure.reason}", failure.position,
                                     failed) from None
    if r.remaining():
        raise RemoteLogMetadataError(f"{msg.name}: {r.remaining()} bytes follow the message, "
                                     f"from byte {r.pos}", r.pos, f"Found {r.remaining()} "
                                     f"byte(s) of garbage after {api_key}")
    return MetadataMessage(api_key, version, msg, fields)


def decode_value(value: bytes) -> RemoteLogMetadataValue:
    """One record value of `__remote_log_metadata`, checked as Kafka's RemoteLogMetadataSerde
    checks it. Raises RemoteLogMetadataError naming the field and its byte position in the
    value (the caller places it in a file)."""
    return metadata_value(read_metadata_message(value))


def metadata_value(read: MetadataMessage) -> RemoteLogMetadataValue:
    """The message as Kafka's transforms build it, with their checks in their order."""
    api_key, name, f = read.api_key, read.message.name, read.fields
    if api_key == 1:
        topic_id, topic, partition, segment_id = _segment_id(f)
        return RemoteLogSegmentMetadataUpdate(
            topic_id, topic, partition, segment_id, f["brokerId"], f["eventTimestampMs"],
            f["customMetadata"], _state(name, f["remoteLogSegmentState"], SEGMENT_STATES))
    if api_key == 2:
        tip = f["topicIdPartition"]
        return RemotePartitionDeleteMetadata(
            tip["id"], tip["name"], tip["partition"], f["brokerId"], f["eventTimestampMs"],
            _state(name, f["remotePartitionDeleteState"], PARTITION_DELETE_STATES))
    if api_key == 3:
        # the snapshot's constructor checks the state, then the epochs; not the offsets
        state = _state(name, f["remoteLogSegmentState"], SEGMENT_STATES)
        return RemoteLogSegmentMetadataSnapshot(
            f["segmentId"], f["startOffset"], f["endOffset"], f["brokerId"], f["maxTimestampMs"],
            f["eventTimestampMs"], _epochs(name, f), f["segmentSizeInBytes"],
            f["customMetadata"], state, f["txnIndexEmpty"])
    # a segment is built (offsets, then epochs checked), then its state applied
    offsets = _offsets(name, f)
    epochs = _epochs(name, f)
    return RemoteLogSegmentMetadata(
        *_segment_id(f), *offsets, f["brokerId"], f["maxTimestampMs"], f["eventTimestampMs"],
        epochs, f["segmentSizeInBytes"], f["customMetadata"],
        _state(name, f["remoteLogSegmentState"], SEGMENT_STATES), f["txnIndexEmpty"])


def _segment_id(f) -> tuple[str, str, int, str]:
    sid = f["remoteLogSegmentId"]
    tip = sid["topicIdPartition"]
    return tip["id"], tip["name"], tip["partition"], sid["id"]


def _offsets(name: str, f) -> tuple[int, int]:
    start, end = f["startOffset"], f["endOffset"]
    # the checks of RemoteLogSegmentMetadata's constructor, which the serde's read runs
    if start < 0:
        raise RemoteLogMetadataError(
            f"{name}.startOffset {start} is negative", None, f"Unexpected start offset = "
            f"{start}. StartOffset for a remote segment cannot be negative")
    if end < start:
        raise RemoteLogMetadataError(
            f"{name}.endOffset {end} is below startOffset {start}", None,
            f"Unexpected end offset = {end}. EndOffset for a remote segment cannot be less "
            f"than startOffset = {start}")
    return start, end


def _epochs(name: str, f) -> tuple:
    entries = f["segmentLeaderEpochs"]
    if not entries:
        raise RemoteLogMetadataError(f"{name}.segmentLeaderEpochs is empty (a segment has at "
                                     "least one leader epoch)", None,
                                     "segmentLeaderEpochs can not be null or empty")
    # Kafka keeps them in a TreeMap: ascending by epoch, a repeated epoch's last offset wins
    by_epoch = {e["leaderEpoch"]: e["offset"] for e in entries}
    return tuple(sorted(by_epoch.items()))


def _state(name: str, state: int, states: dict) -> int:
    if state not in states:
        segment = states is SEGMENT_STATES
        field_name = "remoteLogSegmentState" if segment else "remotePartitionDeleteState"
        # RemotePartitionDeleteMetadata's requireNonNull has no message: Java prints "null"
        raise RemoteLogMetadataError(f"{name}.{field_name} {state} is not a state Kafka knows "
                                     f"({', '.join(f'{k} {v}' for k, v in states.items())})",
                                     None, "state can not be null" if segment else "null")
    return state
