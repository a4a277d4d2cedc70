"""Per-topic configs kept in the data directory, so the sink, `retain` and `compact` agree.

A broker keeps topic configs in its cluster metadata; a bare data directory has none, so
segmentlog keeps them beside the logs, one Java properties file per topic::

    <data dir>/_segmentlog/topic-configs/<topic>.properties

    # written by `segmentlog config`; Kafka's topic config names
    cleanup.policy=compact
    delete.retention.ms=3600000

Only the names in TOPIC_CONFIGS are allowed; anything missing takes Kafka's default. Options
(writer options, CLI flags) override the file for one call and do not change it. A bad value is
a BadOptionError naming the config and the file it came from.

On a Kafka 4.x data directory the cluster's own configs come first: a `MetadataConfigs`
function (values/kafka_internal/cluster_configs.py replays them from the KRaft metadata log;
storage cannot read it) gives each topic's configs with where each came from. The layers, each
over the one before:

    Kafka's defaults < the cluster's configs (cluster-wide default < this broker < the topic's
    own, from the metadata log) < the topic's file < options
"""

from __future__ import annotations

from dataclasses import fields, replace
import re
from typing import Callable, Mapping, Optional

from ...errors import BadOptionError
from ..io.local import LOCAL
from ..log_files import STATE_DIR
from .log_config import CLEANUP_POLICIES, LogConfig

CONFIGS_DIR = "topic-configs"
_LONG_MAX = 2**63 - 1
_JAVA_LONG = re.compile(r"[+-]?[0-9]+")


def _long(name: str, text: str) -> int:
    digits = text.strip()
    if not _JAVA_LONG.fullmatch(digits):   # as Java's parseLong: no "1_000", no "1e3"
        raise BadOptionError(name, text, "expected an integer")
    value = int(digits)
    if not -(_LONG_MAX + 1) <= value <= _LONG_MAX:
        raise BadOptionError(name, text, "does not fit a Java long")
    return value


def _ratio(name: str, text: str) -> float:
    try:
        return float(text.strip())
    except ValueError:
        raise BadOptionError(name, text, "expected a number between 0 and 1") from None


def _policy(name: str, text: str) -> str:
    parts = sorted({p.strip().lower() for p in text.split(",") if p.strip()})
    joined = ",".join(parts)
    if joined not in CLEANUP_POLICIES:
        raise BadOptionError(name, text, "expected delete, compact, or compact,delete")
    return joined


# Kafka topic config name -> (LogConfig field, parser of its text)
TOPIC_CONFIGS: dict[str, tuple[str, Callable[[str, str], object]]] = {
    "cleanup.policy": ("cleanup_policy", _policy),
    "retention.ms": ("retention_ms", _long),
    "retention.bytes": ("retention_bytes", _long),
    "delete.retention.ms": ("delete_retention_ms", _long),
    "min.compaction.lag.ms": ("min_compaction_lag_ms", _long),
    "max.compaction.lag.ms": ("max_compaction_lag_ms", _long),
    "min.cleanable.dirty.ratio": ("min_cleanable_dirty_ratio", _ratio),
    "file.delete.delay.ms": ("file_delete_delay_ms", _long),
    "segment.bytes": ("segment_bytes", _long),
    "segment.ms": ("segment_ms", _long),
    "segment.jitter.ms": ("segment_jitter_ms", _long),
    "segment.index.bytes": ("segment_index_bytes", _long),
    "index.interval.bytes": ("index_interval_bytes", _long),
}
_NAME_OF_FIELD = {field: name for name, (field, _) in TOPIC_CONFIGS.items()}
assert set(_NAME_OF_FIELD) <= {f.name for f in fields(LogConfig)}


# (fs, data dir) -> {topic: {config name: (value, where it came from)}}, or None when the data
# directory has no metadata log
MetadataConfigs = Callable[[object, str], Optional[Mapping[str, Mapping[str, tuple[str, str]]]]]
DEFAULT_SOURCE, FILE_SOURCE, OPTIONS_SOURCE = "default", "file", "options"


class CachedMetadataConfigs:
    """A MetadataConfigs function whose answer for each data directory is read once (one
    replay of the metadata log per commit or per upkeep run, not one per topic)."""

    def __init__(self, read: MetadataConfigs):
        self.read = read
        self._answers: dict[str, Mapping[str, Mapping[str, tuple[str, str]]]] = {}

    def __call__(self, fs, data_dir: str):
        key = data_dir.rstrip("/") or data_dir
        if key not in self._answers:
            self._answers[key] = self.read(fs, data_dir)
        return self._answers[key]


def cluster_topic_configs(read: MetadataConfigs | None, fs, data_dir: str,
                          topic: str) -> dict[str, tuple[str, str]]:
    """{name: (value, source)} of the topic's configs in the cluster's metadata, by `read`
    ({} without a function or a metadata log)."""
    found = None if read is None else read(fs, data_dir)
    # (not `or {}`: a metadata log with no topic yet answers an empty mapping that still holds
    # the broker-level configs every topic takes)
    return {} if found is None else dict(found.get(topic, {}))


def topic_config_path(data_dir: str, topic: str, fs=LOCAL) -> str:
    return fs.join(data_dir, STATE_DIR, CONFIGS_DIR, f"{topic}.properties")


def read_topic_config(data_dir: str, topic: str, fs=LOCAL) -> dict[str, str]:
    """The topic's configs as written in its file ({} when there is none)."""
    path = topic_config_path(data_dir, topic, fs)
    if not fs.exists(path):
        return {}
    try:
        text = fs.read_all(path).decode("utf-8")
    except UnicodeDecodeError as err:
        raise BadOptionError("topic config file", path, f"not UTF-8 text ({err.reason})") \
            from None
    found = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        name, sep, value = line.partition("=")
        if not sep:
            raise BadOptionError("topic config file", path,
                                 f"line {number} ({line!r}) is not name=value")
        name = name.strip()
        if name not in TOPIC_CONFIGS:
            raise BadOptionError(name, value.strip(), f"not a topic config segmentlog keeps "
                                 f"(line {number} of {path}; known: {', '.join(TOPIC_CONFIGS)})")
        found[name] = value.strip()
    return found


def write_topic_config(data_dir: str, topic: str, values: Mapping[str, str], fs=LOCAL) -> None:
    """Replace the topic's file (atomically) with `values`, each checked first."""
    log_config_of(values, source="the new topic config")
    path = topic_config_path(data_dir, topic, fs)
    fs.makedirs(fs.dirname(path))
    lines = [f"# topic configs of {topic} (segmentlog; Kafka's names)"]
    lines += [f"{name}={values[name]}" for name in sorted(values)]
    fs.write_atomic(path, ("\n".join(lines) + "\n").encode("utf-8"))


def log_config_of(values: Mapping[str, str], base: LogConfig | None = None,
                  source: str = "options") -> LogConfig:
    """`base` (default: Kafka's defaults) with the named configs applied; errors name the
    config and `source`."""
    changes = {}
    for name, text in values.items():
        if name not in TOPIC_CONFIGS:
            raise BadOptionError(name, text, f"not a topic config ({source}; known: "
                                 f"{', '.join(TOPIC_CONFIGS)})")
        field, parse = TOPIC_CONFIGS[name]
        try:
            changes[field] = parse(name, str(text))
        except BadOptionError as err:
            raise BadOptionError(name, text, f"{err.reason} ({source})") from None
    try:
        return replace(base or LogConfig(), **changes)
    except BadOptionError as err:
        name = _NAME_OF_FIELD.get(err.name, err.name)
        raise BadOptionError(name, values.get(name, err.value), f"{err.reason} ({source})") \
            from None


def config_layers(data_dir: str, topic: str, overrides: Mapping[str, str] | None = None,
                  fs=LOCAL, cluster: Mapping[str, tuple[str, str]] | None = None
                  ) -> list[tuple[str, dict[str, str]]]:
    """(source, {name: value}) for each layer over Kafka's defaults, lowest first: the
    cluster's configs (each value's own source), the topic's file, the options."""
    layers: list[tuple[str, dict[str, str]]] = []
    for name, (value, source) in (cluster or {}).items():
        if name in TOPIC_CONFIGS:
            layers.append((source, {name: value}))
    layers.append((topic_config_path(data_dir, topic, fs), read_topic_config(data_dir, topic,
                                                                              fs)))
    layers.append((OPTIONS_SOURCE, dict(overrides or {})))
    return layers


def topic_log_config(data_dir: str, topic: str, overrides: Mapping[str, str] | None = None,
                     base: LogConfig | None = None, fs=LOCAL,
                     cluster: Mapping[str, tuple[str, str]] | None = None) -> LogConfig:
    """The topic's LogConfig: Kafka's defaults (or `base`), the cluster's configs (`cluster`:
    {name: (value, source)} from its metadata), its file, then `overrides`."""
    config = base
    for source, values in config_layers(data_dir, topic, overrides, fs, cluster):
        if values or config is None:
            config = log_config_of(values, config, source=source)
    return config


def config_sources(data_dir: str, topic: str, overrides: Mapping[str, str] | None = None,
                   fs=LOCAL, cluster: Mapping[str, tuple[str, str]] | None = None
                   ) -> dict[str, str]:
    """Where each of TOPIC_CONFIGS comes from: DEFAULT_SOURCE, the cluster's source text,
    FILE_SOURCE or OPTIONS_SOURCE."""
    found = dict.fromkeys(TOPIC_CONFIGS, DEFAULT_SOURCE)
    file_path = topic_config_path(data_dir, topic, fs)
    for source, values in config_layers(data_dir, topic, overrides, fs, cluster):
        for name in values:
            found[name] = FILE_SOURCE if source == file_path else source
    return found
