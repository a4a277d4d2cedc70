"""The cluster as it stood, as DataFrames: segmentlog_source.cluster(spark, path) gives the rows
of values/kafka_internal/cluster_state.py (the metadata image replayed from the data
directory's KRaft log, as `segmentlog cluster` prints it) as four small DataFrames.

As log_upkeep.py plans, the replay runs in one Spark task, where the executors see the files
(a Spark Connect client may not see them at all), and comes back as JSON: the metadata log is
small and the image a few rows per topic. A bad log fails there and comes back to the caller
as the same segmentlog error (CorruptDataError naming the file, byte and offset)."""

from __future__ import annotations

from typing import NamedTuple

from ..storage.io.filesystem import filesystem_for
from ..values.kafka_internal.cluster_state import cluster_state
from .one_task import run_in_one_task

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

    def replay() -> dict:
        fs, root = filesystem_for(path)
        return cluster_state(fs, root, at_offset=at_offset, at_time=at_time).as_json()

    answer = run_in_one_task(spark, replay)
    return ClusterFrames(**{
        name: spark.createDataFrame([tuple(row.values()) for row in answer[name]], schema)
        for name, schema in SCHEMAS.items()})   # each row's keys are in its schema's order
