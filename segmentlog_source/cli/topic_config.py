"""`segmentlog config`: show or change the topic configs kept in a data directory.

segmentlog keeps Kafka's topic configs (cleanup.policy, retention.ms, retention.bytes,
delete.retention.ms, min.compaction.lag.ms, segment.bytes, ...) per topic in
`<DIR>/_segmentlog/topic-configs/<topic>.properties`, so the sink, `retain` and `compact` agree
from run to run. `--set NAME=VALUE` and `--delete NAME` change the file (each value checked
first); without them the command prints the topic's effective configs and where each comes from:
Kafka's default, the cluster's metadata log of a Kafka 4.x data directory ("cluster default
(log.retention.ms)", "broker 1 (...)", "topic (metadata)"), or the file. The file wins over the
cluster's configs; options of `retain` and `compact` win over both.

`retain` and `compact` take `--config NAME=VALUE` for one run; the file is left as it is.
"""

from __future__ import annotations

from ..errors import BadOptionError
from ..plan.write_options import check_topic_name
from ..storage.io.filesystem import filesystem_for
from ..storage.log.data_dir import check_writable
from ..storage.log.log_manager import DEFAULT_LOCK_TIMEOUT_MS
from ..storage.log.topic_configs import (TOPIC_CONFIGS, cluster_topic_configs, config_sources,
                                         read_topic_config, topic_config_path,
                                         topic_log_config, write_topic_config)
from ..values.kafka_internal.cluster_configs import metadata_topic_configs
from .tables import render_table

HELP = "show or change a topic's configs (cleanup.policy, retention.ms, ...) in a data directory"


def add_override_arguments(parser) -> None:
    """`--topic` and `--config NAME=VALUE`, shared by `retain` and `compact`."""
    parser.add_argument("path", metavar="DIR", help="a data directory (local)")
    parser.add_argument("--topic", action="append", dest="topics", metavar="T",
                        help="only this topic (repeatable; default: every topic)")
    parser.add_argument("--config", action="append", dest="configs", default=[],
                        metavar="NAME=VALUE", help="a topic config for this run only, e.g. "
                        "--config cleanup.policy=compact (repeatable; Kafka's names)")
    parser.add_argument("--lock-timeout-ms", type=int, default=DEFAULT_LOCK_TIMEOUT_MS,
                        metavar="MS", help="how long to wait for a partition another writer "
                        "holds, then fail naming it")


def overrides_of(args, flags: dict[str, int | None]) -> dict[str, str]:
    """The configs for one run: `--config NAME=VALUE` pairs, then the command's own flags
    (Kafka config name -> value, None when not given)."""
    overrides = pairs(args.configs, "--config")
    overrides.update({name: str(value) for name, value in flags.items() if value is not None})
    return overrides


def pairs(texts: list[str], flag: str) -> dict[str, str]:
    found = {}
    for text in texts:
        name, sep, value = text.partition("=")
        if not sep or not name.strip():
            raise BadOptionError(flag, text, "expected NAME=VALUE, e.g. retention.ms=3600000")
        if name.strip() not in TOPIC_CONFIGS:
            raise BadOptionError(flag, text, f"{name.strip()!r} is not a topic config "
                                 f"(known: {', '.join(TOPIC_CONFIGS)})")
        found[name.strip()] = value.strip()
    return found


def add_arguments(parser) -> None:
    parser.add_argument("path", metavar="DIR", help="a data directory (local)")
    parser.add_argument("--topic", required=True, metavar="T", help="the topic")
    parser.add_argument("--set", action="append", dest="set", default=[], metavar="NAME=VALUE",
                        help="set a config (repeatable)")
    parser.add_argument("--delete", action="append", dest="delete", default=[], metavar="NAME",
                        help="go back to Kafka's default for a config (repeatable)")


def run(args) -> int:
    fs, path = filesystem_for(args.path, getattr(args, "store_config", None))
    stored = read_topic_config(path, args.topic, fs)
    changes = pairs(args.set, "--set")
    unknown = [name for name in args.delete if name not in TOPIC_CONFIGS]
    if unknown:
        raise BadOptionError("--delete", unknown[0], f"not a topic config (known: "
                             f"{', '.join(TOPIC_CONFIGS)})")
    if changes or args.delete:
        check_topic_name(args.topic, "--topic")     # never __cluster_metadata
        fs.ensure_writable(path)
        check_writable(path, fs)    # a data directory: not a partition's, nor the metadata log's
        updated = {k: v for k, v in {**stored, **changes}.items() if k not in args.delete}
        write_topic_config(path, args.topic, updated, fs)
        stored = updated
    cluster = cluster_topic_configs(metadata_topic_configs, fs, path, args.topic)
    config = topic_log_config(path, args.topic, fs=fs, cluster=cluster)
    sources = config_sources(path, args.topic, fs=fs, cluster=cluster)
    rows = []
    for name, (field, _) in TOPIC_CONFIGS.items():
        rows.append([name, str(getattr(config, field)), sources[name]])
    print(f"{args.topic}: {topic_config_path(path, args.topic, fs)}")
    print(render_table(["config", "value", "from"], rows), end="")
    return 0
