"""`__remote_log_metadata` records (format/remote_log_metadata.py decodes them) as Kafka 4.4's
DumpLogSegments prints them with --remote-log-metadata-decoder: the decoded object's Java
toString, one per record, after "payload: " (the key, null in every record Kafka writes, is not
printed). A value Kafka's RemoteLogMetadataSerde refuses is "Error at offset <n>, skipping. "
and the message of its exception.

    RemoteLogSegmentMetadata{remoteLogSegmentId=RemoteLogSegmentId{topicIdPartition=<topic
        id>:<topic>-<partition>, id=<segment id>}, startOffset=.., endOffset=.., brokerId=..,
        maxTimestampMs=.., eventTimestampMs=.., segmentLeaderEpochs={<epoch>=<offset>, ..},
        segmentSizeInBytes=.., customMetadata=Optional.empty | Optional[CustomMetadata{<n>
        bytes}], state=COPY_SEGMENT_STARTED, txnIdxEmpty=false}
    RemoteLogSegmentMetadataUpdate{remoteLogSegmentId=.., customMetadata=.., state=..,
        eventTimestampMs=.., brokerId=..}
    RemotePartitionDeleteMetadata{topicPartition=<topic id>:<topic>-<partition>, state=..,
        eventTimestampMs=.., brokerId=..}
    RemoteLogSegmentMetadataSnapshot{segmentId=.., startOffset=.., endOffset=..,
        maxTimestampMs=.., segmentLeaderEpochs=.., segmentSizeInBytes=.., customMetadata=..,
        state=.., txnIdxEmpty=..}
"""

from __future__ import annotations

from ...format.remote_log_metadata import (PARTITION_DELETE_STATES, SEGMENT_STATES,
                                           RemoteLogMetadataError, RemoteLogMetadataValue,
                                           RemoteLogSegmentMetadata,
                                           RemoteLogSegmentMetadataSnapshot,
                                           RemoteLogSegmentMetadataUpdate, decode_value)

# What Java says when DumpLogSegments' parser asks a record without a value for its bytes
NULL_VALUE_MESSAGE = ('Cannot invoke "java.nio.ByteBuffer.remaining()" because the return value '
                      'of "org.apache.kafka.common.record.internal.Record.value()" is null')


def java_text(v: RemoteLogMetadataValue) -> str:
    """The value's toString, as Kafka's classes print it."""
    java_bool = "true" if getattr(v, "txn_index_empty", False) else "false"
    metadata = getattr(v, "custom_metadata", None)
    custom = ("Optional.empty" if metadata is None
              else f"Optional[CustomMetadata{{{len(metadata)} bytes}}]")
    if isinstance(v, RemoteLogSegmentMetadata):
        return (f"RemoteLogSegmentMetadata{{remoteLogSegmentId={_segment_id(v)}, "
                f"startOffset={v.start_offset}, endOffset={v.end_offset}, "
                f"brokerId={v.broker_id}, maxTimestampMs={v.max_timestamp}, "
                f"eventTimestampMs={v.event_timestamp}, "
                f"segmentLeaderEpochs={_epochs(v.segment_leader_epochs)}, "
                f"segmentSizeInBytes={v.segment_size}, customMetadata={custom}, "
                f"state={SEGMENT_STATES[v.state]}, txnIdxEmpty={java_bool}}}")
    if isinstance(v, RemoteLogSegmentMetadataUpdate):
        return (f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={_segment_id(v)}, "
                f"customMetadata={custom}, state={SEGMENT_STATES[v.state]}, "
                f"eventTimestampMs={v.event_timestamp}, brokerId={v.broker_id}}}")
    if isinstance(v, RemoteLogSegmentMetadataSnapshot):
        return (f"RemoteLogSegmentMetadataSnapshot{{segmentId={v.segment_id}, "
                f"startOffset={v.start_offset}, endOffset={v.end_offset}, "
                f"maxTimestampMs={v.max_timestamp}, "
                f"segmentLeaderEpochs={_epochs(v.segment_leader_epochs)}, "
                f"segmentSizeInBytes={v.segment_size}, customMetadata={custom}, "
                f"state={SEGMENT_STATES[v.state]}, txnIdxEmpty={java_bool}}}")
    return (f"RemotePartitionDeleteMetadata{{topicPartition={v.topic_id}:{v.topic}-"
            f"{v.partition}, state={PARTITION_DELETE_STATES[v.state]}, "
            f"eventTimestampMs={v.event_timestamp}, brokerId={v.broker_id}}}")


def _segment_id(v) -> str:
    return (f"RemoteLogSegmentId{{topicIdPartition={v.topic_id}:{v.topic}-{v.partition}, "
            f"id={v.segment_id}}}")


def _epochs(epochs: tuple) -> str:
    return "{" + ", ".join(f"{epoch}={offset}" for epoch, offset in epochs) + "}"


def dump_text(value, offset: int) -> str:
    """What DumpLogSegments prints after "payload: " for a record at `offset`."""
    if value is None:
        return f"Error at offset {offset}, skipping. {NULL_VALUE_MESSAGE}"
    try:
        return java_text(decode_value(value))
    except RemoteLogMetadataError as err:
        return f"Error at offset {offset}, skipping. {err.kafka}"
