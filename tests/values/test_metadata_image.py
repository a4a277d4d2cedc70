"""The cluster image replayed from a KRaft metadata log and its snapshots
(values/kafka_internal/metadata_image.py, cluster_state.py, cluster_configs.py), with records
encoded here (metadata_samples.py's encoder, independent of the reader): a snapshot and the log
after it, metadata transactions (ended, aborted, left open), a topic deleted and recreated with a
new id, PartitionChangeRecords, a config deleted with a null value, --at-offset and --at-time,
partition directories the metadata does not know; and hostile logs, each an error naming the
file, byte and offset. Then the log manager's configs taken from the metadata."""

from __future__ import annotations

import base64
import io
import json
import time
from contextlib import redirect_stdout
from pathlib import Path
import uuid

import pytest

from segmentlog_source.cli.main import main
from segmentlog_source.errors import BadOptionError, CorruptDataError
from segmentlog_source.format.record_encoder import encode_batch
from segmentlog_source.format.records import Record
from segmentlog_source.storage.commit import committer
from segmentlog_source.storage.commit.commit_log import read_pending
from segmentlog_source.storage.io.local import LOCAL
from segmentlog_source.storage.log.log_config import LogConfig
from segmentlog_source.storage.log.partition_log import PartitionLog
from segmentlog_source.storage.log.log_manager import LogManager
from segmentlog_source.storage.log.topic_configs import (CachedMetadataConfigs,
                                                         write_topic_config)
from segmentlog_source.values.kafka_internal.cluster_configs import metadata_topic_configs
from segmentlog_source.values.kafka_internal.cluster_state import cluster_state
from segmentlog_source.values.kafka_internal.metadata_image import load_image
from tests.storage.helpers import make_batch
from tests.storage.written_logs import stage
from tests.storage.test_kraft_snapshot import snapshot_bytes
from tests.values import metadata_samples as ms

TS = 1_700_000_000_000
SECRET = ms.SECRET
META = "__cluster_metadata-0"


def tid(n: int) -> str:
    return base64.urlsafe_b64encode(uuid.UUID(int=n + 1).bytes).rstrip(b"=").decode()


def topic(name: str, n: int) -> bytes:
    return ms.encode(2, 0, ms.fields_of(2, name=name, topicId=tid(n)))


def partition(n: int, p: int, replicas=(1,), leader=1) -> bytes:
    return ms.encode(3, 0, ms.fields_of(3, partitionId=p, topicId=tid(n), replicas=list(replicas),
                                        isr=list(replicas), removingReplicas=[],
                                        addingReplicas=[], leader=leader, leaderEpoch=0,
                                        partitionEpoch=0))


def change(n: int, p: int, **fields) -> bytes:
    return ms.encode(5, 0, ms.fields_of(5, partitionId=p, topicId=tid(n), **fields))


def config(resource_type: int, resource: str, name: str, value: str | None) -> bytes:
    return ms.encode(4, 0, ms.fields_of(4, resourceType=resource_type, resourceName=resource,
                                        name=name, value=value))


def remove(n: int) -> bytes:
    return ms.encode(9, 0, ms.fields_of(9, topicId=tid(n)))


def begin() -> bytes:
    return ms.encode(23, 0, ms.fields_of(23))


def end() -> bytes:
    return ms.encode(24, 0, ms.fields_of(24))


def abort() -> bytes:
    return ms.encode(25, 0, ms.fields_of(25))


def write_metadata(data_dir: Path, values: list[bytes], *, start: int = 0, per_batch: int = 3,
                   snapshots: dict[int, list[bytes]] | None = None) -> Path:
    """A `__cluster_metadata-0` with `values` at offsets from `start` (record i at ts TS + i)
    and snapshots {end offset: their records}."""
    part = data_dir / META
    part.mkdir(parents=True, exist_ok=True)
    records = [Record(start + i, TS + start + i, None, v) for i, v in enumerate(values)]
    (part / f"{start:020d}.log").write_bytes(b"".join(
        encode_batch(records[i:i + per_batch]) for i in range(0, len(records), per_batch)))
    for end_offset, content in (snapshots or {}).items():
        (part / f"{end_offset:020d}-0000000001.checkpoint").write_bytes(snapshot_bytes(content))
    return part


def image(data_dir: Path, **kw):
    return load_image(LOCAL, str(data_dir), **kw)


def names(img) -> dict[str, str]:
    return {t.name: t.topic_id for t in img.topics.values()}


def test_the_snapshot_then_the_log_after_it(tmp_path):
    # offsets 0-2 hold a topic the snapshot (end offset 3) no longer has: the log below the
    # snapshot's end is not replayed again
    values = [topic("gone-before", 9), remove(9), topic("in-both", 1),
              topic("after", 2), partition(2, 0), config(2, "after", "retention.ms", "5000")]
    write_metadata(tmp_path, values, snapshots={3: [topic("in-both", 1), partition(1, 0),
                                                    config(2, "in-both", "cleanup.policy",
                                                           "compact")]})
    img = image(tmp_path)
    assert names(img) == {"in-both": tid(1), "after": tid(2)}
    assert img.snapshot.endswith("00000000000000000003-0000000001.checkpoint")
    assert img.last_offset == 5 and img.removed == []
    assert img.topic_configs("in-both") == {"cleanup.policy": "compact"}
    assert img.topic_configs("after") == {"retention.ms": "5000"}


def test_metadata_transactions_ended_aborted_and_left_open(tmp_path):
    values = [begin(), topic("aborted", 1), partition(1, 0), abort(),
              begin(), topic("ended", 2), partition(2, 0), end(),
              topic("plain", 3),
              begin(), topic("open", 4)]
    write_metadata(tmp_path, values)
    img = image(tmp_path)
    assert names(img) == {"ended": tid(2), "plain": tid(3)}
    assert img.open_transaction == 9
    # inside the ended transaction, before its End, nothing of it is applied yet
    assert names(image(tmp_path, at_offset=6)) == {}
    assert names(image(tmp_path, at_offset=7)) == {"ended": tid(2)}


def test_a_topic_deleted_and_recreated_with_a_new_id(tmp_path):
    values = [topic("t", 1), partition(1, 0), partition(1, 1),
              config(2, "t", "retention.ms", "1000"),
              remove(1), topic("t", 2), partition(2, 0)]
    write_metadata(tmp_path, values)
    for name, topic_id in ((f"t-0", tid(1)), ("t-1", tid(2)), ("t-2", None),
                           (f"t-0.{'ab' * 16}-delete", tid(1)), ("other-0", tid(7))):
        d = tmp_path / name
        d.mkdir()
        if topic_id:
            (d / "partition.metadata").write_text(f"version: 0\ntopic_id: {topic_id}\n")
    state = cluster_state(LOCAL, str(tmp_path))
    assert [(t["topic"], t["topic_id"], t["deleted"], len(t["partitions"]))
            for t in state.topics] == [("t", tid(2), False, 1), ("t", tid(1), True, 0)]
    assert state.image.topic_configs("t") == {}        # the old topic's configs went with it
    status = {d["directory"]: d["status"] for d in state.directories}
    assert status == {
        "t-0": "deleted topic (RemoveTopicRecord at offset 4)", "t-1": "ok",
        "t-2": "no partition.metadata",
        f"t-0.{'ab' * 16}-delete": "marked -delete; deleted topic (RemoveTopicRecord at offset 4)",
        "other-0": "topic id unknown to the metadata"}


def test_partition_changes_apply_only_what_they_set(tmp_path):
    values = [topic("t", 1), partition(1, 0, replicas=(1, 2, 3), leader=1),
              change(1, 0, isr=[1, 2]),                       # leader -2: unchanged
              change(1, 0, leader=2, replicas=[2, 3, 4], isr=[2, 3]),
              change(1, 0, leader=-1)]
    write_metadata(tmp_path, values)
    p = image(tmp_path, at_offset=2).topics[tid(1)].partitions[0]
    assert (p.replicas, p.isr, p.leader, p.leader_epoch, p.partition_epoch) == \
        ([1, 2, 3], [1, 2], 1, 0, 1)
    p = image(tmp_path, at_offset=3).topics[tid(1)].partitions[0]
    assert (p.replicas, p.isr, p.leader, p.leader_epoch, p.partition_epoch) == \
        ([2, 3, 4], [2, 3], 2, 1, 2)
    state = cluster_state(LOCAL, str(tmp_path))
    assert state.topics[0]["partitions"] == [{"partition": 0, "replicas": [2, 3, 4],
                                              "isr": [2, 3], "leader": -1, "leader_epoch": 2}]


def test_a_config_deleted_with_a_null_value(tmp_path):
    values = [topic("t", 1), config(2, "t", "retention.ms", "1000"),
              config(2, "t", "retention.bytes", "99"), config(2, "t", "retention.ms", None),
              config(4, "", "log.retention.ms", "5"), config(4, "", "log.retention.ms", None)]
    write_metadata(tmp_path, values)
    img = image(tmp_path)
    assert img.topic_configs("t") == {"retention.bytes": "99"}
    assert img.broker_configs("") == {}
    assert image(tmp_path, at_offset=2).topic_configs("t") == {"retention.ms": "1000",
                                                               "retention.bytes": "99"}


def test_at_offset_and_at_time_pick_the_snapshot_at_or_before_the_point(tmp_path):
    values = [topic("a", 1), topic("b", 2), topic("c", 3), topic("d", 4), topic("e", 5)]
    write_metadata(tmp_path, values, snapshots={2: values[:2], 4: values[:4]})
    assert image(tmp_path, at_offset=4).snapshot.endswith("04-0000000001.checkpoint")
    assert image(tmp_path, at_offset=3).snapshot.endswith("04-0000000001.checkpoint")
    assert names(image(tmp_path, at_offset=2)) == {"a": tid(1), "b": tid(2), "c": tid(3)}
    assert image(tmp_path, at_offset=2).snapshot.endswith("02-0000000001.checkpoint")
    assert names(image(tmp_path, at_offset=0)) == {"a": tid(1)}
    assert names(image(tmp_path, at_time=TS + 1)) == {"a": tid(1), "b": tid(2)}
    with pytest.raises(BadOptionError, match="at_time"):
        image(tmp_path, at_time=TS - 1)


def test_secrets_never_enter_the_image_nor_the_output(tmp_path, capsys):
    write_metadata(tmp_path, [topic("t", 1), *ms.secret_records()])
    state = cluster_state(LOCAL, str(tmp_path))
    assert {"name": "ssl.keystore.password", "resource_type": "broker", "resource_name": "",
            "value": "(redacted)"} not in state.configs     # deleted with a null value
    assert any(c["value"] == "(redacted)" for c in state.configs)
    for args in ([], ["--json"]):
        assert main(["cluster", str(tmp_path), *args]) == 0
        out = capsys.readouterr().out
        assert SECRET not in out and "(redacted)" in out
    assert SECRET not in repr(state.image)


HOSTILE = {
    "undecodable value": ([topic("t", 1), b"\x01\x02"], 1, "the version"),
    "cut record": ([topic("t", 1), topic("u", 2)[:-3]], 1, "TopicRecord v0"),
    "partition of an unknown topic": ([partition(5, 0)], 0, "topic id"),
    "end without begin": ([topic("t", 1), end()], 1, "outside a metadata transaction"),
    "begin inside a transaction": ([begin(), begin()], 1, "inside the transaction begun at "
                                                          "offset 0"),
    "change of a missing partition": ([topic("t", 1), change(1, 3, leader=1)], 1,
                                      "no such partition"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_logs_are_errors_naming_file_byte_and_offset(tmp_path, case):
    values, offset, what = HOSTILE[case]
    part = write_metadata(tmp_path, values, per_batch=1)
    with pytest.raises(CorruptDataError) as err:
        image(tmp_path)
    text = str(err.value)
    assert f"offset {offset}" in text and what in text
    assert str(part / "00000000000000000000.log") in text
    batches = [encode_batch([Record(i, TS + i, None, v)]) for i, v in enumerate(values)]
    assert err.value.position == sum(map(len, batches[:offset]))    # the byte of its batch


def test_a_log_with_a_gap_before_it_is_refused(tmp_path):
    write_metadata(tmp_path, [topic("t", 1)], start=5)
    with pytest.raises(CorruptDataError, match="starts at offset 5"):
        image(tmp_path)


def test_the_log_manager_takes_the_clusters_configs(tmp_path):
    now = TS + 10 * 3_600_000
    write_metadata(tmp_path, [topic("t", 1), topic("u", 2),
                              config(4, "", "log.retention.hours", "5"),
                              config(4, "", "log.retention.bytes", "1000000"),
                              config(4, "1", "log.retention.minutes", "240"),
                              config(2, "u", "retention.ms", "3600000")])
    (tmp_path / "meta.properties").write_text("version=1\nnode.id=1\n")
    cluster = metadata_topic_configs(LOCAL, str(tmp_path))
    assert cluster["t"] == {"retention.ms": ("14400000", "broker 1 (log.retention.minutes)"),
                            "retention.bytes": ("1000000",
                                                "cluster default (log.retention.bytes)")}
    assert cluster["u"]["retention.ms"] == ("3600000", "topic (metadata)")
    assert cluster.get("leftover")["retention.ms"][0] == "14400000"
    # three segments per topic, 6 h, 2 h and 2 h old: t (4 h) loses the first; u (1 h) all
    # three, the active one too (all below the high watermark: Kafka rolls a new one first)
    for name in ("t", "u"):
        d = tmp_path / f"{name}-0"
        d.mkdir()
        (d / f"{0:020d}.log").write_bytes(make_batch([now - 6 * 3_600_000]))
        (d / f"{1:020d}.log").write_bytes(make_batch([now - 2 * 3_600_000], base_offset=1))
        (d / f"{2:020d}.log").write_bytes(make_batch([now - 2 * 3_600_000], base_offset=2))
    (tmp_path / "replication-offset-checkpoint").write_text("0\n2\nt 0 3\nu 0 3\n")
    manager = LogManager(str(tmp_path), clock_ms=lambda: now,
                         metadata_configs=metadata_topic_configs)
    done = {r.topic: ([base for base, _ in r.deleted], r.rolled) for r in manager.retain()}
    assert done == {"t": ([0], False), "u": ([0, 1, 2], True)}
    # the segmentlog file wins over the metadata, and options over both
    write_topic_config(str(tmp_path), "u", {"retention.ms": "-1"})
    assert manager.config(manager.partitions()[1]).retention_ms == -1
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["config", str(tmp_path), "--topic", "t"]) == 0
    rows = {line.split()[0]: line.split(None, 2)[1:] for line in out.getvalue().splitlines()[2:]}
    assert rows["retention.ms"] == ["14400000", "broker 1 (log.retention.minutes)"]
    assert rows["segment.bytes"] == ["1073741824", "default"]


def test_without_a_metadata_log_configs_are_as_before(tmp_path):
    assert metadata_topic_configs(LOCAL, str(tmp_path)) is None
    d = tmp_path / "t-0"
    d.mkdir()
    (d / f"{0:020d}.log").write_bytes(make_batch([TS]))
    manager = LogManager(str(tmp_path), metadata_configs=metadata_topic_configs)
    assert manager.config(manager.partitions()[0]).retention_ms == 7 * 24 * 3_600_000
    json.dumps(manager.cluster_configs(str(tmp_path), "t"))


def commit_values(data_dir: Path, job: str, count: int, timestamp: int, settings) -> None:
    files = stage(data_dir, job, {("c", 0): [b"v" * 150 + b"%d" % i for i in range(count)]},
                  timestamp=timestamp, max_records=2)
    committer.commit(str(data_dir), committer.CommitRequest(job, tuple(files), {"c": 1}),
                     settings)


def sink_settings(**topic_configs) -> committer.CommitSettings:
    return committer.CommitSettings(LogConfig(fsync="none"), topic_configs=topic_configs,
                                    metadata_configs=CachedMetadataConfigs(
                                        metadata_topic_configs))


def test_the_sinks_commits_take_the_cluster_wide_configs_before_any_topic_exists(tmp_path):
    """A metadata log with no topic yet still holds the configs every topic takes."""
    write_metadata(tmp_path, [config(4, "", "log.segment.bytes", "3000"),
                              config(4, "", "log.retention.hours", "24")])
    (tmp_path / "meta.properties").write_text("version=1\nnode.id=1\n")
    now = int(time.time() * 1000)
    commit_values(tmp_path, "old", 60, now - 10 * 86_400_000, sink_settings())
    log = PartitionLog.open(str(tmp_path / "c-0"))
    assert log.log_start_offset == log.log_end_offset == 60      # a day's retention
    commit_values(tmp_path, "new", 60, now, sink_settings())
    sizes = [seg.size for seg in PartitionLog.open(str(tmp_path / "c-0")).segments]
    assert len(sizes) > 3 and max(sizes) <= 3000                  # log.segment.bytes


def test_the_sink_retains_by_the_limit_configured_only(tmp_path):
    """retention.bytes alone (here the cluster's) keeps the topic to that size: Kafka's
    default retention.ms of 7 days does not delete the 10 days old records it was given."""
    write_metadata(tmp_path, [topic("c", 1), config(4, "", "log.retention.bytes", "5000")])
    (tmp_path / "meta.properties").write_text("version=1\nnode.id=1\n")
    old = int(time.time() * 1000) - 10 * 86_400_000
    commit_values(tmp_path, "a", 100, old, sink_settings(**{"segment.bytes": "2000"}))
    log = PartitionLog.open(str(tmp_path / "c-0"))
    assert 0 < log.log_start_offset < log.log_end_offset == 100
    assert 5000 <= sum(seg.size for seg in log.segments) < 5000 + 2000   # Kafka's size rule
    # with retention.ms configured too, both limits apply
    commit_values(tmp_path, "b", 10, old, sink_settings(**{"segment.bytes": "2000",
                                                             "retention.ms": "86400000"}))
    log = PartitionLog.open(str(tmp_path / "c-0"))
    assert log.log_start_offset == log.log_end_offset == 110


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_metadata_log_fails_the_sinks_commit_before_any_append(tmp_path, case):
    """The sink reads a new input, the metadata log: damaged, the commit is an error naming
    its file, and no partition gets a record (the staged rows wait for the write's retry)."""
    now = int(time.time() * 1000)
    commit_values(tmp_path, "first", 10, now, committer.CommitSettings(LogConfig(fsync="none")))
    part = write_metadata(tmp_path, HOSTILE[case][0], per_batch=1)
    with pytest.raises(CorruptDataError) as err:
        commit_values(tmp_path, "second", 10, now, sink_settings())
    assert str(part / "00000000000000000000.log") in str(err.value)
    assert PartitionLog.open(str(tmp_path / "c-0")).log_end_offset == 10
    assert read_pending(str(tmp_path)) == []      # no commit left half done


def test_the_command_at_an_offset_or_a_time(tmp_path, capsys):
    write_metadata(tmp_path, [topic("a", 1), partition(1, 0, replicas=(1, 2)),
                              change(1, 0, isr=[1]), topic("b", 2)])
    assert main(["cluster", str(tmp_path / META), "--at-offset", "2", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [t["topic"] for t in doc["topics"]] == ["a"] and doc["last_offset"] == 2
    assert main(["cluster", str(tmp_path), "--at-time", "2023-11-14T22:13:20.001Z",
                 "--section", "topics"]) == 0
    out = capsys.readouterr().out
    assert "through offset 1" in out and "configs (" not in out
    assert "1 under-replicated" not in out     # the ISR change is at offset 2
    assert main(["cluster", str(tmp_path), "--section", "topics"]) == 0
    assert "1 under-replicated" in capsys.readouterr().out
    assert main(["cluster", str(tmp_path), "--at-time", "2023-11-14T22:13:20"]) == 2
    assert "--at-time" in capsys.readouterr().err


@pytest.mark.spark
def test_the_dataframes_and_their_errors(tmp_path, spark):
    import segmentlog_source

    write_metadata(tmp_path / "ok", [topic("t", 1), partition(1, 0, replicas=(1, 2)),
                                     config(4, "1", "ssl.keystore.password", SECRET)])
    frames = segmentlog_source.cluster(spark, str(tmp_path / "ok"))
    (row,) = frames.topics.collect()
    assert (row.topic, row.topic_id, row.deleted) == ("t", tid(1), False)
    assert [p.asDict() for p in row.partitions] == [
        {"partition": 0, "replicas": [1, 2], "isr": [1, 2], "leader": 1, "leader_epoch": 0}]
    assert [tuple(r) for r in frames.configs.collect()] == [
        ("broker", "1", "ssl.keystore.password", "(redacted)")]
    assert frames.brokers.count() == 0 and frames.directories.count() == 0
    part = write_metadata(tmp_path / "bad", [topic("t", 1), b"\x01\x02"], per_batch=1)
    with pytest.raises(CorruptDataError) as err:
        segmentlog_source.cluster(spark, str(tmp_path / "bad"))
    assert "offset 1" in str(err.value) and str(part / f"{0:020d}.log") in str(err.value)
