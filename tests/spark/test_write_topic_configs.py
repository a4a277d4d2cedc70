"""The sink and the topic configs of the data directory (topic_configs.py): the topic's file
shapes the segments a write makes, options override it for one write, and a topic whose
retention is configured is retained after each commit; in a Kafka 4.x data directory the
cluster's configs (its KRaft metadata log) come first, under the file and the options."""

from __future__ import annotations

from datetime import datetime, timezone
import time

import pytest

from segmentlog_source.cli.main import main
from segmentlog_source.storage.log.checkpoints import read_offset_checkpoint
from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.storage.written_logs import assert_no_verify_errors
from tests.values.test_metadata_image import config, topic, write_metadata

pytestmark = pytest.mark.spark
NOW_MS = int(time.time() * 1000)


def write(spark, out, start: int, count: int, *, days_old: float = 0, **options) -> None:
    ts = datetime.fromtimestamp((NOW_MS - days_old * 86_400_000) / 1000, timezone.utc)
    rows = [(f"k{i % 7}".encode(), b"v" * 150 + b"%d" % i, ts) for i in range(start, start + count)]
    writer = (spark.createDataFrame(rows, "key binary, value binary, timestamp timestamp")
              .coalesce(1).write.format("segmentlog").mode("append").option("topic", "c"))
    for name, value in options.items():
        writer = writer.option(name.replace("_", "."), str(value))
    writer.save(str(out))


def sizes(out) -> list[int]:
    return [s.size for s in PartitionLog.open(str(out / "c-0")).segments]


def test_the_topic_file_shapes_segments_and_an_option_overrides_it(spark, tmp_path, capsys):
    out = tmp_path / "data"
    assert main(["config", str(out), "--topic", "c", "--set", "segment.bytes=3000"]) == 0
    write(spark, out, 0, 100, batch_size=1000)
    first = sizes(out)
    assert len(first) > 3 and max(first[:-1]) <= 3000
    write(spark, out, 100, 100, batch_size=1000, segment_bytes=20000)   # for this write only
    assert max(sizes(out)) > 3000
    write(spark, out, 200, 100, batch_size=1000)                         # the file again
    assert sizes(out)[-1] <= 3000
    assert_no_verify_errors(out)
    capsys.readouterr()


def test_a_topic_with_retention_is_retained_after_each_commit(spark, tmp_path):
    out = tmp_path / "data"
    write(spark, out, 0, 100, days_old=10, batch_size=1000, segment_bytes=3000)
    assert PartitionLog.open(str(out / "c-0")).log_start_offset == 0   # none configured
    # retention.ms as an option: the old records go once the commit is done, the new stay
    write(spark, out, 100, 50, batch_size=1000, segment_bytes=3000, retention_ms=86_400_000)
    log = PartitionLog.open(str(out / "c-0"))
    assert 0 < log.log_start_offset <= 100 and log.log_end_offset == 150
    first = [s.base_offset for s in log.segments]
    assert first[0] == log.log_start_offset
    assert read_offset_checkpoint(str(out / "recovery-point-offset-checkpoint")) == \
        {("c", 0): 150}
    # retention.bytes from the topic's file applies to later writes too
    assert main(["config", str(out), "--topic", "c", "--set", "retention.bytes=4000"]) == 0
    write(spark, out, 150, 100, batch_size=1000, segment_bytes=3000)
    assert sum(sizes(out)) < 4000 + 3000
    assert PartitionLog.open(str(out / "c-0")).log_end_offset == 250
    assert_no_verify_errors(out)


def test_in_a_kraft_data_directory_the_clusters_configs_shape_and_retain(spark, tmp_path):
    out = tmp_path / "data"
    metadata = write_metadata(out, [topic("c", 1), config(2, "c", "segment.bytes", "3000"),
                                    config(4, "", "log.retention.hours", "24")])
    (out / "meta.properties").write_text("version=1\nnode.id=1\n")
    before = {p.name: p.read_bytes() for p in metadata.iterdir()}
    # the cluster-wide retention (a day) takes the 10 days old records once the commit is done
    write(spark, out, 0, 100, days_old=10, batch_size=1000)
    log = PartitionLog.open(str(out / "c-0"))
    assert log.log_start_offset == log.log_end_offset == 100
    write(spark, out, 100, 100, batch_size=1000)
    assert len(sizes(out)) > 3 and max(sizes(out)) <= 3000    # the topic's segment.bytes
    assert PartitionLog.open(str(out / "c-0")).log_start_offset == 100
    # the topic's file is over the cluster's configs, an option over both
    assert main(["config", str(out), "--topic", "c", "--set", "segment.bytes=20000"]) == 0
    write(spark, out, 200, 100, batch_size=1000)
    assert sizes(out)[-1] > 3000
    write(spark, out, 300, 100, batch_size=1000, retention_ms=-1, segment_bytes=2000,
          days_old=30)
    assert PartitionLog.open(str(out / "c-0")).log_start_offset == 100
    assert sizes(out)[-1] <= 2000
    assert {p.name: p.read_bytes() for p in metadata.iterdir()} == before   # only read
    assert_no_verify_errors(out)


@pytest.mark.parametrize("name, value", [("retention.ms", "a week"), ("cleanup.policy", "trim"),
                                         ("retention.bytes", "-7")])
def test_a_bad_topic_config_option_fails_before_anything_is_written(spark, tmp_path, name, value):
    out = tmp_path / "data"
    with pytest.raises(Exception) as info:
        write(spark, out, 0, 10, **{name.replace(".", "_"): value})
    assert name in str(info.value)
    assert not out.exists() or not any(out.glob("c-*"))
