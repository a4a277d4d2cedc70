"""The cluster as it stood, as DataFrames: segmentlog_source.cluster(spark, path) gives the rows
of values/kafka_internal/cluster_state.py (the metadata image replayed from the data directory's
KRaft log, as `segmentlog cluster` prints it) as four small DataFrames. The replay runs where
this is called (the driver, or a Spark Connect client) and reads the files from there: the
metadata log is small, and a cluster's image is a few rows per topic."""

from __future__ import annotations

from typing import NamedTuple

from ..storage.io.filesystem import filesystem_for
from ..values.kafka_internal.cluster_state import cluster_state

PARTITION = ("struct<partition: int, replicas: array<int>, isr: array<int>, leader: int, "
             "leader_epoch: int>")
SCHEMAS = {
    "topics": f"topic string, topic_id string, deleted boolean, partitions array<{PARTITION}>",
    "configs": "resource_type string, resource_name string, name string, value string",
    "brokers": ("broker_id int, epoch long, fenced boolean, in_controlled_shutdown boolean, "
                "rack string, endpoints array<string>, incarnation_id string"),
    "directories": "directory string, topic string, partition int, topic_id string, status string",
}


class ClusterFrames(NamedTuple):
    topics: object
    configs: object
    brokers: object
    directories: object


def cluster(spark, path: str, *, at_offset: int | None = None,
            at_time: int | None = None) -> ClusterFrames:
    """DataFrames of the cluster whose data directory (or `__cluster_metadata-0` directory) is
    `path`, at the end of its metadata log, after offset `at_offset`, or at `at_time` (epoch
    ms). Secrets are "(redacted)" in `configs`."""
    fs, root = filesystem_for(path)
    state = cluster_state(fs, root, at_offset=at_offset, at_time=at_time)
    frames = {}
    for name, schema in SCHEMAS.items():
        rows = [tuple(row.values()) for row in getattr(state, name)]   # the schema's order
        frames[name] = spark.createDataFrame(rows, schema)
    return ClusterFrames(**frames)
