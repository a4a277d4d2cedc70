"""A topic's configs as the cluster holds them, for the log manager (storage/log/topic_configs.py
layers them under the topic's file and the options): the metadata image's (metadata_image.py)
cluster-wide default and this broker's dynamic configs, mapped to topic config names as Kafka
maps them, under the topic's own configs.

Kafka's order (ServerTopicConfigSynonyms, 4.4): each topic config has broker synonyms, tried in
order, the first one set winning: retention.ms <- log.retention.ms, log.retention.minutes (x 60
000), log.retention.hours (x 3 600 000); segment.ms <- log.roll.ms, log.roll.hours; ... A
broker's own dynamic value of a name overrides the cluster-wide default's before the synonyms
are tried (the broker's config is one set of names). The broker is the data directory's
`meta.properties` node.id; without one, only the cluster-wide default applies.

What the metadata log does not hold stays unknown here: a broker's static server.properties
(log.retention.hours=168 there, say). Kafka's defaults stand in for them.
"""

from __future__ import annotations

from typing import Mapping

from ...storage.log.topic_configs import TOPIC_CONFIGS
from .metadata_image import MetadataImage, has_metadata_log, load_image

_HOURS, _MINUTES = 3_600_000, 60_000
# topic config -> [(broker config, factor to ms or 1)], Kafka's table and order
BROKER_SYNONYMS: dict[str, list[tuple[str, int]]] = {
    "segment.bytes": [("log.segment.bytes", 1)],
    "segment.ms": [("log.roll.ms", 1), ("log.roll.hours", _HOURS)],
    "segment.jitter.ms": [("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", _HOURS)],
    "segment.index.bytes": [("log.index.size.max.bytes", 1)],
    "retention.bytes": [("log.retention.bytes", 1)],
    "retention.ms": [("log.retention.ms", 1), ("log.retention.minutes", _MINUTES),
                     ("log.retention.hours", _HOURS)],
    "index.interval.bytes": [("log.index.interval.bytes", 1)],
    "delete.retention.ms": [("log.cleaner.delete.retention.ms", 1)],
    "min.compaction.lag.ms": [("log.cleaner.min.compaction.lag.ms", 1)],
    "max.compaction.lag.ms": [("log.cleaner.max.compaction.lag.ms", 1)],
    "file.delete.delay.ms": [("log.segment.delete.delay.ms", 1)],
    "min.cleanable.dirty.ratio": [("log.cleaner.min.cleanable.ratio", 1)],
    "cleanup.policy": [("log.cleanup.policy", 1)],
    "flush.messages": [("log.flush.interval.messages", 1)],
    "flush.ms": [("log.flush.interval.ms", 1), ("log.flush.scheduler.interval.ms", 1)],
    "max.message.bytes": [("message.max.bytes", 1)],
    **{name: [(name, 1)] for name in (
        "unclean.leader.election.enable", "min.insync.replicas", "compression.type",
        "compression.gzip.level", "compression.lz4.level", "compression.zstd.level")},
    **{name: [("log." + name, 1)] for name in (
        "preallocate", "message.timestamp.type", "message.timestamp.before.max.ms",
        "message.timestamp.after.max.ms", "local.retention.ms", "local.retention.bytes",
        "remote.copy.lag.ms", "remote.copy.lag.bytes")},
}
assert set(TOPIC_CONFIGS) <= set(BROKER_SYNONYMS)
META_PROPERTIES = "meta.properties"


def _scaled(text: str, factor: int) -> str:
    if factor == 1:
        return text
    try:
        return str(int(text.strip()) * factor)
    except ValueError:
        return text      # refused later, naming the config and where it came from


def topic_configs_of(image: MetadataImage, topic: str, broker: str | None = None,
                     names=TOPIC_CONFIGS) -> dict[str, tuple[str, str]]:
    """{topic config: (value, source)} for `topic`, those in `names` (default: those segmentlog
    keeps; None: all): the broker synonyms of the cluster default (source "cluster default
    (log.retention.ms)") and of `broker`'s own configs ("broker 1 (log.retention.ms)"), then
    the topic's ("topic (metadata)")."""
    brokers: dict[str, tuple[str, str]] = {
        name: (value, "cluster default") for name, value in image.broker_configs("").items()}
    if broker is not None:
        brokers.update((name, (value, f"broker {broker}"))
                       for name, value in image.broker_configs(broker).items())
    found: dict[str, tuple[str, str]] = {}
    for config, synonyms in BROKER_SYNONYMS.items():
        if names is not None and config not in names:
            continue
        for broker_name, factor in synonyms:
            if broker_name in brokers:
                value, level = brokers[broker_name]
                found[config] = (_scaled(value, factor), f"{level} ({broker_name})")
                break
    for name, value in image.topic_configs(topic).items():
        if names is None or name in names:
            found[name] = (value, "topic (metadata)")
    return found


def node_id(fs, data_dir: str) -> str | None:
    """The node.id in the data directory's meta.properties, if it has one."""
    path = fs.join(data_dir, META_PROPERTIES)
    if not fs.exists(path):
        return None
    for line in fs.read_all(path).decode("utf-8", "replace").splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip() == "node.id":
            return value.strip()
    return None


def metadata_topic_configs(fs, data_dir: str
                           ) -> Mapping[str, Mapping[str, tuple[str, str]]] | None:
    """{topic: {config: (value, source)}} from the data directory's metadata log, or None when
    it has none (an older broker's directory, a bare copy): storage.log.topic_configs'
    MetadataConfigs."""
    if not has_metadata_log(fs, data_dir):
        return None
    image = load_image(fs, data_dir)
    broker = node_id(fs, data_dir)
    return _TopicConfigs({topic.name: topic_configs_of(image, topic.name, broker)
                          for topic in image.topics.values()},
                         topic_configs_of(image, "", broker))


class _TopicConfigs(dict):
    """Each topic's configs; a topic the metadata does not hold (a leftover directory) takes
    the broker-level ones alone."""

    def __init__(self, topics, broker_level):
        super().__init__(topics)
        self.broker_level = broker_level

    def __reduce__(self):
        return (type(self), (dict(self), self.broker_level))

    def get(self, topic, default=None):
        return super().get(topic, self.broker_level)
