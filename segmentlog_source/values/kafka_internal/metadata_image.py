"""The cluster as it stood: KRaft's metadata image replayed from `__cluster_metadata-0`, as a
controller or broker loads it (Kafka's MetadataLoader): the latest snapshot at or before the
point asked for, then the log's records after it.

    load_image(fs, metadata_dir, at_offset=None, at_time=None) -> MetadataImage

What is kept: topics (name, id, partitions with replicas, ISR, leader), the topics removed while
replaying the log, configs per resource (topic, broker, the cluster default: broker ""),
brokers and controllers, feature levels. Config values are redacted (metadata_records.redact)
as they are replayed: a secret never enters the image.

Kafka's rules followed (facts of its image and loader code, 4.4):
- a snapshot `<end offset>-<epoch>.checkpoint` holds the image of the records below its end
  offset; the log is replayed from there. A log that starts above the snapshot's end (or above
  0 with no snapshot) leaves a gap: refused.
- metadata transactions: the records between a BeginTransactionRecord and its
  EndTransactionRecord are applied together at the End; an AbortTransactionRecord drops them; a
  transaction still open at the point asked for is not applied (the loader publishes nothing of
  it). A Begin inside a transaction, or an End or Abort outside one, is an error.
- RemoveTopicRecord removes the topic and its configs; a ConfigRecord with a null value removes
  the config; PartitionChangeRecord changes only the fields it sets (leader -2: unchanged).
- a PartitionRecord or PartitionChangeRecord of a topic id the image does not hold is an error.

`--at-offset N`: the image after the record at offset N (every record at or below it);
`--at-time T`: after the last record whose batch timestamp is at or before T.
Every error names the file and the byte of the batch, and the record's offset.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from ...errors import BadOptionError, CorruptDataError, LogNotFoundError
from ...format.record_decoder import decode_batch
from ...storage.log.kraft_snapshot import SNAPSHOT_NAME, read_kraft_snapshot
from ...storage.log.partition_log import PartitionLog
from .metadata_messages import CLUSTER_METADATA
from .metadata_records import MetadataRecord, MetadataRecordError, decode_metadata, redact

TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
RESOURCE_TYPES = {2: "topic", 4: "broker", 8: "broker-logger", 16: "client-metrics",
                  32: "group"}
NO_LEADER_CHANGE = -2
_BEGIN, _END, _ABORT = "BEGIN_TRANSACTION_RECORD", "END_TRANSACTION_RECORD", \
    "ABORT_TRANSACTION_RECORD"


@dataclass
class PartitionState:
    partition: int
    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int
    partition_epoch: int
    removing: list[int] = field(default_factory=list)
    adding: list[int] = field(default_factory=list)


@dataclass
class TopicState:
    name: str
    topic_id: str
    partitions: dict[int, PartitionState] = field(default_factory=dict)


@dataclass
class RemovedTopic:
    name: str
    topic_id: str
    offset: int


@dataclass
class BrokerState:
    broker_id: int
    epoch: int
    incarnation_id: str
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    endpoints: list[str]


@dataclass
class Where:
    """A record's place: the file, the byte of its batch, its offset."""
    path: str
    position: int
    offset: int
    timestamp: int = -1


@dataclass
class MetadataImage:
    topics: dict[str, TopicState] = field(default_factory=dict)          # by topic id
    removed: list[RemovedTopic] = field(default_factory=list)
    configs: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)
    brokers: dict[int, BrokerState] = field(default_factory=dict)
    controllers: dict[int, str] = field(default_factory=dict)   # id -> incarnation id
    features: dict[str, int] = field(default_factory=dict)
    snapshot: str | None = None          # the snapshot file replayed first
    last_offset: int = -1                # of the last record applied
    last_timestamp: int | None = None
    open_transaction: int | None = None  # offset of a Begin not ended at the point

    def topic_named(self, name: str) -> TopicState | None:
        for topic in self.topics.values():
            if topic.name == name:
                return topic
        return None

    def topic_configs(self, name: str) -> dict[str, str]:
        return dict(self.configs.get((TOPIC_RESOURCE, name), {}))

    def broker_configs(self, broker: str = "") -> dict[str, str]:
        """A broker's dynamic configs ("": the cluster-wide default), secrets redacted."""
        return dict(self.configs.get((BROKER_RESOURCE, broker), {}))


class _Replay:
    """Records applied to a MetadataImage, transactions held until they end."""

    def __init__(self, image: MetadataImage):
        self.image = image
        self.pending: list[tuple[MetadataRecord, Where]] | None = None
        self.begun: Where | None = None

    def feed(self, record: MetadataRecord, where: Where) -> None:
        kind = record.record_type
        if kind == _BEGIN:
            if self.pending is not None:
                raise _error(where, f"a BeginTransactionRecord inside the transaction begun at "
                                    f"offset {self.begun.offset}")
            self.pending, self.begun = [], where
        elif kind in (_END, _ABORT):
            if self.pending is None:
                raise _error(where, f"an {'End' if kind == _END else 'Abort'}TransactionRecord "
                                    "outside a metadata transaction")
            if kind == _END:
                for held, at in self.pending:
                    self.apply(held, at)
            self.pending, self.begun = None, None
        elif self.pending is not None:
            self.pending.append((record, where))
            return
        else:
            self.apply(record, where)
            return
        self._done(where)

    def _done(self, where: Where) -> None:
        self.image.last_offset = where.offset
        if where.timestamp >= 0:
            self.image.last_timestamp = where.timestamp

    def finish(self) -> MetadataImage:
        self.image.open_transaction = None if self.begun is None else self.begun.offset
        return self.image

    def apply(self, record: MetadataRecord, where: Where) -> None:
        f, kind, image = record.fields, record.record_type, self.image
        if kind == "TOPIC_RECORD":
            image.topics[f["topicId"]] = TopicState(f["name"], f["topicId"])
        elif kind == "PARTITION_RECORD":
            topic = self._topic(f["topicId"], where, "PartitionRecord")
            topic.partitions[f["partitionId"]] = PartitionState(
                f["partitionId"], list(f["replicas"]), list(f["isr"]), f["leader"],
                f["leaderEpoch"], f["partitionEpoch"], list(f["removingReplicas"]),
                list(f["addingReplicas"]))
        elif kind == "PARTITION_CHANGE_RECORD":
            topic = self._topic(f["topicId"], where, "PartitionChangeRecord")
            part = topic.partitions.get(f["partitionId"])
            if part is None:
                raise _error(where, f"a PartitionChangeRecord of partition {f['partitionId']} "
                                    f"of topic {topic.name}, which has no such partition")
            for name, attr in (("replicas", "replicas"), ("isr", "isr"),
                               ("removingReplicas", "removing"),
                               ("addingReplicas", "adding")):
                if f[name] is not None:
                    setattr(part, attr, list(f[name]))
            if f["leader"] != NO_LEADER_CHANGE:
                part.leader = f["leader"]
                part.leader_epoch += 1
            part.partition_epoch += 1
        elif kind == "REMOVE_TOPIC_RECORD":
            topic = self._topic(f["topicId"], where, "RemoveTopicRecord")
            del image.topics[f["topicId"]]
            image.configs.pop((TOPIC_RESOURCE, topic.name), None)
            image.removed.append(RemovedTopic(topic.name, topic.topic_id, where.offset))
        elif kind == "CONFIG_RECORD":
            record = redact(record)
            key = (f["resourceType"], f["resourceName"])
            if record.fields["value"] is None:
                configs = image.configs.get(key, {})
                configs.pop(f["name"], None)
                if not configs:
                    image.configs.pop(key, None)
            else:
                image.configs.setdefault(key, {})[f["name"]] = record.fields["value"]
        elif kind == "REGISTER_BROKER_RECORD":
            image.brokers[f["brokerId"]] = BrokerState(
                f["brokerId"], f["brokerEpoch"], f["incarnationId"], f["rack"], f["fenced"],
                f["inControlledShutdown"],
                [f"{e['name']}://{e['host']}:{e['port']}" for e in f["endPoints"]])
        elif kind == "UNREGISTER_BROKER_RECORD":
            image.brokers.pop(f["brokerId"], None)
        elif kind in ("FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD"):
            broker = image.brokers.get(f["id"])
            if broker is not None:
                broker.fenced = kind == "FENCE_BROKER_RECORD"
        elif kind == "BROKER_REGISTRATION_CHANGE_RECORD":
            broker = image.brokers.get(f["brokerId"])
            if broker is not None:
                # Kafka's BrokerRegistrationFencingChange: 1 fence, -1 unfence, 0 none
                if f["fenced"] in (1, -1):
                    broker.fenced = f["fenced"] == 1
                if f["inControlledShutdown"] == 1:
                    broker.in_controlled_shutdown = True
        elif kind == "REGISTER_CONTROLLER_RECORD":
            image.controllers[f["controllerId"]] = f["incarnationId"]
        elif kind == "UNREGISTER_CONTROLLER_RECORD":
            image.controllers.pop(f["controllerId"], None)
        elif kind == "FEATURE_LEVEL_RECORD":
            if f["featureLevel"] == 0:
                image.features.pop(f["name"], None)
            else:
                image.features[f["name"]] = f["featureLevel"]
        self._done(where)

    def _topic(self, topic_id: str, where: Where, what: str) -> TopicState:
        topic = self.image.topics.get(topic_id)
        if topic is None:
            raise _error(where, f"a {what} of topic id {topic_id}, which the image does not "
                                "hold (no TopicRecord before it)")
        return topic


def _error(where: Where, reason: str) -> CorruptDataError:
    return CorruptDataError(f"cluster metadata: offset {where.offset}: {reason}", where.path,
                            where.position)


def _decoded(value, where: Where) -> MetadataRecord:
    try:
        return decode_metadata(value)
    except MetadataRecordError as err:
        raise _error(where, err.reason) from None


def metadata_dir_of(fs, path: str) -> str:
    """The `__cluster_metadata-0` directory: `path` itself or the one in the data directory."""
    name = fs.basename(path.rstrip("/"))
    if name.startswith(CLUSTER_METADATA + "-"):
        return path
    candidate = fs.join(path, CLUSTER_METADATA + "-0")
    if not fs.is_dir(candidate):
        raise LogNotFoundError(f"no KRaft metadata log ({CLUSTER_METADATA}-0) in {path}: a "
                               "broker keeps it in its metadata.log.dir (by default the first "
                               "of log.dirs)")
    return candidate


def has_metadata_log(fs, data_dir: str) -> bool:
    return fs.is_dir(fs.join(data_dir, CLUSTER_METADATA + "-0"))


def _snapshots(fs, directory: str) -> list[tuple[int, str]]:
    found = []
    for name in fs.list_dir(directory):
        match = SNAPSHOT_NAME.match(name)
        if match:
            found.append((int(match[1]), fs.join(directory, name)))
    return sorted(found)


def _log_records(log: PartitionLog, start: int) -> Iterator[tuple[Where, object]]:
    for segment, header, entry in log.iter_entries(start, verify_crc=True):
        if header.is_control:
            continue
        try:
            batch = decode_batch(entry, header, verify_crc=False)
        except CorruptDataError as err:
            raise CorruptDataError(f"cluster metadata: {err.reason}", segment.log_path,
                                   header.position) from None
        for record in batch.records:
            if record.offset >= start:
                yield Where(segment.log_path, header.position, record.offset,
                            record.timestamp), record.value


def load_image(fs, path: str, *, at_offset: int | None = None,
               at_time: int | None = None) -> MetadataImage:
    """The image at the end of the metadata log in `path` (a data directory or the
    `__cluster_metadata-0` directory), or after offset `at_offset`, or at time `at_time` (ms)."""
    if at_offset is not None and at_time is not None:
        raise BadOptionError("at_time", at_time, "give at_offset or at_time, not both")
    if at_offset is not None and at_offset < 0:
        raise BadOptionError("at_offset", at_offset, "must be >= 0")
    directory = metadata_dir_of(fs, path)
    log = PartitionLog.open(directory, fs, read_log_start_checkpoint=False)
    log_start = log.log_start_offset if log.segments else None
    if at_time is not None:
        at_offset = _offset_at_time(log, log_start, at_time, directory)
    snapshots = [(end, p) for end, p in _snapshots(fs, directory)
                 if at_offset is None or end <= at_offset + 1]
    usable = [(end, p) for end, p in snapshots
              if end > 0 and (log_start is None or end >= log_start)]
    image = MetadataImage()
    start = 0
    if usable:
        end, snapshot_path = usable[-1]
        snapshot = read_kraft_snapshot(fs, snapshot_path)
        replay = _Replay(image)
        for r in snapshot.records:
            where = Where(snapshot_path, r.position, r.offset)
            replay.feed(_decoded(r.value, where), where)
        if replay.pending is not None:
            raise _error(replay.begun, "a metadata transaction that the snapshot does not end")
        image.snapshot, image.last_offset, start = snapshot_path, end - 1, end
    elif log_start not in (None, 0):
        raise CorruptDataError(f"cluster metadata: the log starts at offset {log_start} and no "
                               "snapshot at or below the point asked for covers the offsets "
                               "before it", directory)
    replay = _Replay(image)
    if log_start is not None and (at_offset is None or start <= at_offset):
        for where, value in _log_records(log, start):
            if at_offset is not None and where.offset > at_offset:
                break
            replay.feed(_decoded(value, where), where)
    return replay.finish()


def _offset_at_time(log: PartitionLog, log_start: int | None, at_time: int,
                    directory: str) -> int:
    last = None
    if log_start is not None:
        for where, _ in _log_records(log, log_start):
            if where.timestamp > at_time:
                break
            last = where.offset
    if last is None:
        raise BadOptionError("at_time", at_time, f"no record of the metadata log in {directory} "
                             "is that old (the oldest may be only in a snapshot)")
    return last
