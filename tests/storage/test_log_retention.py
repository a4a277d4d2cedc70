"""Retention as a broker applies it (log_retention.py): by time, by size, both, the log start
offset, the all-expired roll, the high watermark, the checkpoint files, and the errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from segmentlog_source.cli.verify import verify_partition
from segmentlog_source.errors import BadOptionError, LogLockedError
from segmentlog_source.storage.log.checkpoints import (read_offset_checkpoint,
                                                       write_offset_checkpoint)
from segmentlog_source.storage.log.log_config import LogConfig
from segmentlog_source.storage.log.log_manager import LogManager
from segmentlog_source.storage.log.partition_log import PartitionLog
from segmentlog_source.storage.log.topic_configs import topic_config_path, write_topic_config
from tests.storage.helpers import make_batch

NOW = 1_800_000_000_000
HOUR = 3600 * 1000
SEGMENT_BYTES = 3000


def write_log(data_dir: Path, batch_times: list[int], *, topic: str = "t") -> Path:
    """One partition of `topic`: a batch of 5 records per timestamp (each ~400 bytes), in
    segments of SEGMENT_BYTES; returns the partition directory."""
    path = data_dir / f"{topic}-0"
    with PartitionLog.open_for_append(str(path), config=LogConfig(segment_bytes=SEGMENT_BYTES,
                                                                  fsync="none")) as log:
        for ts in batch_times:
            log.append(make_batch([ts] * 5, value_size=60), leader_epoch=3)
    return path


def segment_facts(path: Path) -> list[tuple[int, int, int]]:
    """(base offset, size, largest timestamp) of each segment, oldest first."""
    log = PartitionLog.open(str(path))
    return [(s.base_offset, s.size, s.largest_timestamp) for s in log.segments]


def manager(data_dir: Path, **configs) -> LogManager:
    overrides = {name.replace("_", "."): str(value) for name, value in configs.items()}
    return LogManager(str(data_dir), overrides=overrides, clock_ms=lambda: NOW)


def expected_by_time(facts, retention_ms: int) -> int:
    """How many oldest segments retention.ms deletes (the active one too, if empty it stays)."""
    count = 0
    for base, size, largest in facts:
        if NOW - largest > retention_ms and not (base == facts[-1][0] and size == 0):
            count += 1
        else:
            break
    return count


def expected_by_size(facts, retention_bytes: int) -> int:
    total = sum(size for _, size, _ in facts)
    if total < retention_bytes:
        return 0
    excess, count = total - retention_bytes, 0
    for _, size, _ in facts:
        if excess - size < 0:
            break
        excess -= size
        count += 1
    return count


def ages(hours: list[float]) -> list[int]:
    return [NOW - int(h * HOUR) for h in hours]


@pytest.mark.parametrize("retention_hours", [1, 5, 9.5, 100])
def test_time_retention_deletes_the_segments_whose_newest_record_expired(tmp_path,
                                                                         retention_hours):
    # 10 hours of batches, newest last; one out of order (late) record in the middle
    times = ages([10 - i * 0.25 for i in range(40)])
    times[20] = NOW - 11 * HOUR
    path = write_log(tmp_path, times)
    facts = segment_facts(path)
    end = PartitionLog.open(str(path)).log_end_offset
    assert len(facts) >= 6
    want = expected_by_time(facts, int(retention_hours * HOUR))
    result = manager(tmp_path, retention_ms=int(retention_hours * HOUR)).retain()[0]
    assert [base for base, _ in result.deleted] == [f[0] for f in facts[:want]]
    after = segment_facts(path)
    assert after == facts[want:] or (want == len(facts) and len(after) == 1)
    log = PartitionLog.open(str(path))
    assert log.log_start_offset == after[0][0]
    assert log.log_end_offset == end
    assert not list(path.glob("*.deleted"))
    assert verify_partition(str(path)).errors == []


@pytest.mark.parametrize("retention_bytes", [0, 2500, 7000, 12000, 10**9])
def test_size_retention_keeps_the_newest_segments_within_retention_bytes(tmp_path,
                                                                         retention_bytes):
    path = write_log(tmp_path, ages([5] * 40))
    facts = segment_facts(path)
    want = expected_by_size(facts, retention_bytes)
    result = manager(tmp_path, retention_bytes=retention_bytes, retention_ms=-1).retain()[0]
    assert len(result.deleted) == want
    kept = segment_facts(path)
    if want == len(facts):   # all went: a new empty segment at the log end
        assert [(b, size) for b, size, _ in kept] == [(result.log_end_offset, 0)]
        return
    assert kept == facts[want:]
    total = sum(size for _, size, _ in kept)
    if want:   # what stays exceeds retention.bytes by less than its oldest segment
        assert total >= retention_bytes and total - kept[0][1] < retention_bytes


def test_size_then_time_each_deletes_its_prefix(tmp_path):
    path = write_log(tmp_path, ages([9 - i * 0.2 for i in range(40)]))
    facts = segment_facts(path)
    by_size = expected_by_size(facts, 40000)
    by_time = expected_by_time(facts[by_size:], 4 * HOUR)
    assert by_size and by_time, "the case must exercise both rules"
    result = manager(tmp_path, retention_bytes=40000, retention_ms=4 * HOUR).retain()[0]
    reasons = [why for _, why in result.deleted]
    assert reasons == ["retention.bytes=40000"] * by_size + [f"retention.ms={4 * HOUR}"] * by_time
    assert segment_facts(path) == facts[by_size + by_time:]


def test_when_every_segment_expired_a_new_empty_segment_keeps_the_log_end(tmp_path):
    path = write_log(tmp_path, ages([50] * 30))
    end = PartitionLog.open(str(path)).log_end_offset
    result = manager(tmp_path, retention_ms=HOUR).retain()[0]
    assert result.rolled
    log = PartitionLog.open(str(path))
    assert [s.base_offset for s in log.segments] == [end]
    assert (log.log_start_offset, log.log_end_offset) == (end, end)
    assert (path / f"{end:020d}.snapshot").exists()
    with PartitionLog.open_for_append(str(path)) as writer:   # appends go on from the end
        assert writer.append(make_batch([NOW])) == (end, end)
    # run again: the empty active segment is never deleted
    assert manager(tmp_path, retention_ms=HOUR).retain()[0].deleted == []


def test_compact_only_topics_keep_old_segments(tmp_path):
    path = write_log(tmp_path, ages([50] * 30))
    facts = segment_facts(path)
    result = manager(tmp_path, retention_ms=HOUR, cleanup_policy="compact").retain()[0]
    assert result.deleted == [] and segment_facts(path) == facts


def test_segments_past_the_high_watermark_stay(tmp_path):
    path = write_log(tmp_path, ages([50] * 30))
    facts = segment_facts(path)
    hw = facts[3][0] + 2   # inside the fourth segment
    write_offset_checkpoint(str(tmp_path / "replication-offset-checkpoint"), {("t", 0): hw})
    result = manager(tmp_path, retention_ms=HOUR).retain()[0]
    assert [b for b, _ in result.deleted] == [f[0] for f in facts[:3]]


def test_segments_below_a_raised_log_start_offset_go_and_the_checkpoint_keeps_it(tmp_path):
    path = write_log(tmp_path, ages([1] * 30))
    facts = segment_facts(path)
    start = facts[2][0] + 3          # as after DeleteRecords: inside the third segment
    checkpoint = tmp_path / "log-start-offset-checkpoint"
    write_offset_checkpoint(str(checkpoint), {("t", 0): start, ("other", 3): 17})
    result = manager(tmp_path).retain()[0]
    assert [b for b, _ in result.deleted] == [facts[0][0], facts[1][0]]
    assert [why for _, why in result.deleted] == ["below the log start offset"] * 2
    # the broker's rule: an entry only while the log start lies above the first segment's base
    assert read_offset_checkpoint(str(checkpoint)) == {("t", 0): start, ("other", 3): 17}
    assert PartitionLog.open(str(path)).log_start_offset == start


def test_checkpoints_after_retention(tmp_path):
    path = write_log(tmp_path, ages([9 - i * 0.2 for i in range(40)]))
    end = PartitionLog.open(str(path)).log_end_offset
    write_offset_checkpoint(str(tmp_path / "log-start-offset-checkpoint"), {("t", 0): 0})
    manager(tmp_path, retention_ms=4 * HOUR).retain()
    first = segment_facts(path)[0][0]
    assert first > 0
    assert read_offset_checkpoint(str(tmp_path / "recovery-point-offset-checkpoint")) == \
        {("t", 0): end}
    # the log start is the first segment's base offset now: the broker writes no entry for it
    assert read_offset_checkpoint(str(tmp_path / "log-start-offset-checkpoint")) == {}
    # the leader epoch that started at 0 now starts at the new log start
    assert (path / "leader-epoch-checkpoint").read_text() == f"0\n1\n3 {first}\n"


def test_topic_config_file_sets_retention_and_options_override_it(tmp_path):
    path = write_log(tmp_path, ages([9 - i * 0.2 for i in range(40)]))
    facts = segment_facts(path)
    write_topic_config(str(tmp_path), "t", {"retention.ms": str(6 * HOUR)})
    m = LogManager(str(tmp_path), overrides={"retention.ms": "-1"}, clock_ms=lambda: NOW)
    assert m.retain()[0].deleted == []
    m = LogManager(str(tmp_path), clock_ms=lambda: NOW)
    assert len(m.retain()[0].deleted) == expected_by_time(facts, 6 * HOUR) > 0


@pytest.mark.parametrize("name, value", [("retention.ms", "soon"), ("retention.bytes", "-2"),
                                         ("cleanup.policy", "archive"),
                                         ("retention.hours", "5")])
def test_a_bad_setting_names_it_and_touches_nothing(tmp_path, name, value):
    path = write_log(tmp_path, ages([50] * 20))
    before = {f.name: f.read_bytes() for f in path.iterdir()}
    config = Path(topic_config_path(str(tmp_path), "t"))
    config.parent.mkdir(parents=True)
    config.write_text(f"{name}={value}\n")
    with pytest.raises(BadOptionError) as info:
        LogManager(str(tmp_path), clock_ms=lambda: NOW).retain()
    assert name in str(info.value) and str(config) in str(info.value)
    with pytest.raises(BadOptionError) as info:
        manager(tmp_path, **{name.replace(".", "_"): value}).retain()
    assert name in str(info.value)
    assert {f.name: f.read_bytes() for f in path.iterdir()} == before


def test_a_partition_another_writer_holds_is_an_error_and_untouched(tmp_path):
    path = write_log(tmp_path, ages([50] * 20))
    before = {f.name: f.read_bytes() for f in path.iterdir()}
    with PartitionLog.open_for_append(str(path)):
        with pytest.raises(LogLockedError) as info:
            LogManager(str(tmp_path), overrides={"retention.ms": "1"}, clock_ms=lambda: NOW,
                       lock_timeout_ms=0).retain()
    assert "t-0" in str(info.value)
    assert {f.name: f.read_bytes() for f in path.iterdir() if f.name != ".segmentlog.lock"} \
        == {k: v for k, v in before.items() if k != ".segmentlog.lock"}
