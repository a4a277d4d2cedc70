"""The cluster as it stood, as rows: the metadata image (metadata_image.py) of a data directory's
KRaft log as topics, configs and brokers, and each partition directory's `partition.metadata`
topic id checked against it. `segmentlog cluster` prints these rows; segmentlog_source.cluster()
makes DataFrames of them.

    topics       topic, topic_id, deleted, partitions [{partition, replicas, isr, leader,
                 leader_epoch}]   (deleted: removed by a RemoveTopicRecord the replay applied)
    configs      resource_type (topic, broker), resource_name ("" the cluster-wide default),
                 name, value      (a secret is "(redacted)": the image never holds it)
    brokers      broker_id, epoch, fenced, in_controlled_shutdown, rack, endpoints,
                 incarnation_id
    directories  directory, topic, partition, topic_id, status: every partition directory of
                 the data directory; status "ok" when the metadata holds its topic id under its
                 name, else why not ("deleted topic", "topic id unknown to the metadata",
                 "topic id of topic X", "no partition.metadata", "marked -delete", ...)
"""

from __future__ import annotations

from dataclasses import dataclass
import re

from ...errors import CorruptDataError
from ...storage.log.checkpoints import read_partition_metadata
from ...storage.log.log_directory import REMOTE_INDEX_CACHE
from ...storage.log_files import PARTITION_METADATA
from .metadata_image import RESOURCE_TYPES, MetadataImage, load_image, metadata_dir_of
from .metadata_messages import CLUSTER_METADATA

# <topic>-<partition>, or Kafka's renamed <topic>-<partition>.<32 hex>-(delete|future|stray)
_DIR_NAME = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)"
                       r"(?:\.(?P<uid>[0-9a-f]{32})-(?P<mark>delete|future|stray))?$")
OK = "ok"


@dataclass
class ClusterState:
    image: MetadataImage
    metadata_dir: str
    topics: list[dict]
    configs: list[dict]
    brokers: list[dict]
    directories: list[dict]

    @property
    def unexpected_directories(self) -> list[dict]:
        return [d for d in self.directories if d["status"] != OK]

    def as_json(self) -> dict:
        image = self.image
        return {"metadata_dir": self.metadata_dir, "snapshot": image.snapshot,
                "last_offset": image.last_offset, "last_timestamp": image.last_timestamp,
                "open_transaction": image.open_transaction, "features": dict(image.features),
                "topics": self.topics, "configs": self.configs, "brokers": self.brokers,
                "directories": self.directories}


def cluster_state(fs, path: str, *, at_offset: int | None = None,
                  at_time: int | None = None) -> ClusterState:
    """The cluster of the data directory `path` (or of the `__cluster_metadata-0` directory
    `path`, whose parent is then the data directory checked)."""
    metadata_dir = metadata_dir_of(fs, path)
    image = load_image(fs, metadata_dir, at_offset=at_offset, at_time=at_time)
    return ClusterState(image, metadata_dir, topic_rows(image), config_rows(image),
                        broker_rows(image),
                        directory_rows(fs, fs.dirname(metadata_dir.rstrip("/")), image))


def topic_rows(image: MetadataImage) -> list[dict]:
    rows = [{"topic": t.name, "topic_id": t.topic_id, "deleted": False,
             "partitions": [{"partition": p.partition, "replicas": p.replicas, "isr": p.isr,
                             "leader": p.leader, "leader_epoch": p.leader_epoch}
                            for _, p in sorted(t.partitions.items())]}
            for t in image.topics.values()]
    rows += [{"topic": r.name, "topic_id": r.topic_id, "deleted": True, "partitions": []}
             for r in image.removed]
    return sorted(rows, key=lambda r: (r["topic"], r["deleted"]))


def config_rows(image: MetadataImage) -> list[dict]:
    return [{"resource_type": RESOURCE_TYPES.get(kind, str(kind)), "resource_name": name,
             "name": config, "value": value}
            for (kind, name), configs in sorted(image.configs.items())
            for config, value in sorted(configs.items())]


def broker_rows(image: MetadataImage) -> list[dict]:
    return [{"broker_id": b.broker_id, "epoch": b.epoch, "fenced": b.fenced,
             "in_controlled_shutdown": b.in_controlled_shutdown, "rack": b.rack,
             "endpoints": b.endpoints, "incarnation_id": b.incarnation_id}
            for _, b in sorted(image.brokers.items())]


def directory_rows(fs, data_dir: str, image: MetadataImage) -> list[dict]:
    removed = {r.topic_id: r for r in image.removed}
    rows = []
    for name in sorted(fs.list_dir(data_dir)):
        match = _DIR_NAME.match(name)
        path = fs.join(data_dir, name)
        if (match is None or name == REMOTE_INDEX_CACHE or not fs.is_dir(path)
                or match["topic"] == CLUSTER_METADATA):
            continue
        try:
            topic_id = read_partition_metadata(fs.join(path, PARTITION_METADATA), fs)
        except CorruptDataError as err:
            topic_id, status = None, f"unreadable partition.metadata: {err.reason}"
        else:
            status = _status(match["topic"], topic_id, image, removed)
        if match["mark"]:
            status = f"marked -{match['mark']}" + ("" if status == OK else f"; {status}")
        rows.append({"directory": name, "topic": match["topic"],
                     "partition": int(match["partition"]), "topic_id": topic_id,
                     "status": status})
    return rows


def _status(topic: str, topic_id: str | None, image: MetadataImage, removed) -> str:
    if topic_id is None:
        return "no partition.metadata"
    known = image.topics.get(topic_id)
    if known is not None:
        return OK if known.name == topic else f"topic id of topic {known.name}"
    if topic_id in removed:
        return f"deleted topic (RemoveTopicRecord at offset {removed[topic_id].offset})"
    now = image.topic_named(topic)
    if now is not None:
        return f"topic id unknown to the metadata (topic {topic} now has id {now.topic_id})"
    return "topic id unknown to the metadata"
