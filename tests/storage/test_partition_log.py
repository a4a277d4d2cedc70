"""Writing partitions: rolls, indexes as the broker builds them, the clean-close state, the lock,
and lookups on generated multi-segment logs against brute force."""

from __future__ import annotations

import itertools
from pathlib import Path
import subprocess
import sys

from hypothesis import HealthCheck, given, settings, strategies as st
import pytest

from segmentlog_source.errors import (BadOptionError, CorruptDataError, DataLossError,
                                      LogLockedError, LogNotFoundError)
from segmentlog_source.storage.log.checkpoints import (EpochEntry, read_leader_epoch_checkpoint,
                                                       write_offset_checkpoint)
from segmentlog_source.storage.log.log_config import LogConfig
from segmentlog_source.storage.log.offset_index import OffsetIndex
from segmentlog_source.storage.log.partition_log import PartitionLog
from segmentlog_source.storage.log.segment_indexer import rebuild_index_bytes
from segmentlog_source.storage.log.time_index import TimeIndex
from segmentlog_source.storage.txn.producer_state_manager import snapshot_offsets
from tests.storage.helpers import BruteForce, make_batch

REPO = Path(__file__).resolve().parents[2]


def files(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if p.name != ".segmentlog.lock"}


def assert_indexes_are_rebuilt_ones(path: Path, interval: int = 4096, restarts=()):
    """Each segment's index files are what §4.5 rebuilds (simulating restarts at `restarts`)."""
    for log in sorted(path.glob("*.log")):
        base = int(log.name[:20])
        index, time_index = rebuild_index_bytes(log.read_bytes(), base, interval,
                                                restart_offsets=restarts)
        assert log.with_suffix(".index").read_bytes() == index, log.name
        assert log.with_suffix(".timeindex").read_bytes() == time_index, log.name


def test_roll_on_segment_bytes(tmp_path):
    batch = make_batch([1, 2, 3], value_size=100)
    config = LogConfig(segment_bytes=3 * len(batch), index_interval_bytes=200)
    with PartitionLog.open_for_append(str(tmp_path / "t-0"), config=config) as log:
        ranges = [log.append(batch) for _ in range(10)]
        assert ranges == [(3 * i, 3 * i + 2) for i in range(10)]
        assert [s.base_offset for s in log.segments] == [0, 9, 18, 27]
    assert sorted(p.name for p in (tmp_path / "t-0").glob("*.log")) == \
        [f"{b:020d}.log" for b in (0, 9, 18, 27)]
    assert snapshot_offsets(str(tmp_path / "t-0")) == [0, 9, 18, 27, 30]
    assert_indexes_are_rebuilt_ones(tmp_path / "t-0", 200)


def test_roll_on_segment_ms_uses_record_timestamps(tmp_path):
    config = LogConfig(segment_ms=250, clock_ms=lambda: 0)
    with PartitionLog.open_for_append(str(tmp_path / "t-0"), config=config) as log:
        for ts in (0, 100, 200, 300, 400, 500, 600, 50):
            log.append(make_batch([ts]))
        # 300 - 0 > 250 rolls; then 600 - 300; the late 50 is judged against 600: no roll
        assert [s.base_offset for s in log.segments] == [0, 3, 6]


def test_roll_on_wall_clock_without_timestamps(tmp_path):
    now = itertools.count(0, 100)
    config = LogConfig(segment_ms=250, clock_ms=lambda: next(now))
    with PartitionLog.open_for_append(str(tmp_path / "t-0"), config=config) as log:
        for _ in range(6):
            log.append(make_batch([-1]))
        assert len(log.segments) > 1


def test_roll_on_full_indexes(tmp_path):
    config = LogConfig(segment_index_bytes=36, index_interval_bytes=0)  # 4 offset, 3 time slots
    with PartitionLog.open_for_append(str(tmp_path / "t-0"), config=config) as log:
        for i in range(20):
            log.append(make_batch([100 * i]))
        sizes = [(len(s.offset_index), len(s.time_index)) for s in log.segments[:-1]]
    assert all(o <= 4 and t <= 3 for o, t in sizes) and len(sizes) >= 5
    assert_indexes_are_rebuilt_ones(tmp_path / "t-0", 0)


def test_roll_on_relative_offset_overflow(tmp_path):
    with PartitionLog.open_for_append(str(tmp_path / "t-0")) as log:
        log.append_batches(make_batch([1, 2], base_offset=0))
        far = 2**31 + 10
        assert log.append_batches(make_batch([3], base_offset=far)) == (far, far)
        assert [s.base_offset for s in log.segments] == [0, far]
        assert log.log_end_offset == far + 1
    log = PartitionLog.open(str(tmp_path / "t-0"))
    assert log.position_for_offset(5)[0].base_offset == far  # the gap maps to the next batch


def test_indexes_equal_rebuilt_ones_and_close_is_clean(tmp_path):
    path = tmp_path / "orders-3"
    config = LogConfig(segment_bytes=50_000, index_interval_bytes=1000)
    with PartitionLog.open_for_append(str(path), config=config) as log:
        for i in range(200):
            log.append(make_batch([1000 * i + j for j in (5, 1, 9)], value_size=100 + i % 7 * 40),
                       leader_epoch=i // 70)
    assert_indexes_are_rebuilt_ones(path, 1000)
    before = files(path)
    reopened = PartitionLog.open_for_append(str(path), config=config)
    assert reopened.recovery_report.was_clean and reopened.recovery_report.removed_files == []
    assert reopened.log_end_offset == 600
    reopened.close()
    after = files(path)
    assert after == before  # a clean reopen and close changes nothing
    assert read_leader_epoch_checkpoint(str(path / "leader-epoch-checkpoint")) == \
        [EpochEntry(0, 0), EpochEntry(1, 210), EpochEntry(2, 420)]
    # every index is trimmed: entries fill the file exactly
    for name, data in after.items():
        if name.endswith(".index"):
            assert OffsetIndex.from_bytes(data, 0).is_trimmed
        if name.endswith(".timeindex"):
            assert TimeIndex.from_bytes(data, 0).is_trimmed
    assert snapshot_offsets(str(path))[-1] == 600


def test_appends_across_sessions_keep_a_valid_log(tmp_path):
    path = tmp_path / "t-0"
    config = LogConfig(segment_bytes=20_000, index_interval_bytes=500)
    for session in range(4):
        with PartitionLog.open_for_append(str(path), config=config) as log:
            for i in range(30):
                log.append(make_batch([session * 1000 + i], value_size=300))
    log = PartitionLog.open(str(path))
    assert log.log_end_offset == 120
    brute = BruteForce(log)
    for offset in range(121):
        segment, position = log.position_for_offset(offset)
        assert (segment.base_offset, position) == brute.position(offset)


def test_second_writer_is_refused(tmp_path):
    path = tmp_path / "my.topic-7"
    log = PartitionLog.open_for_append(str(path))
    with pytest.raises(LogLockedError, match="my.topic-7"):
        PartitionLog.open_for_append(str(path))
    code = ("import sys\nfrom segmentlog_source.storage.log.partition_log import PartitionLog\n"
            "from segmentlog_source.errors import LogLockedError\n"
            f"try:\n    PartitionLog.open_for_append({str(path)!r})\n"
            "except LogLockedError as e:\n    print(e); sys.exit(3)\n")
    child = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert child.returncode == 3 and "my.topic-7" in child.stdout
    PartitionLog.open(str(path))  # readers take no lock
    log.close()
    PartitionLog.open_for_append(str(path)).close()


def test_append_refuses_bad_input(tmp_path):
    log = PartitionLog.open_for_append(str(tmp_path / "t-0"))
    log.append(make_batch([1, 2, 3]))
    with pytest.raises(CorruptDataError, match="below the log end offset"):
        log.append_batches(make_batch([4], base_offset=2))
    bad = bytearray(make_batch([4], base_offset=3))
    bad[-1] ^= 1
    with pytest.raises(CorruptDataError, match="CRC mismatch"):
        log.append_batches(bytes(bad))
    with pytest.raises(CorruptDataError, match="not a whole batch"):
        log.append(make_batch([4])[:-3])
    with pytest.raises(BadOptionError, match="no batch"):
        log.append(b"")
    assert log.log_end_offset == 3
    log.close()
    with pytest.raises(BadOptionError, match="opened for reading"):
        PartitionLog.open(str(tmp_path / "t-0")).append(make_batch([5]))
    from kafka.record.legacy_records import LegacyRecordBatchBuilder
    legacy = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    legacy.append(0, timestamp=5, key=None, value=b"x")
    with PartitionLog.open_for_append(str(tmp_path / "t-0")) as log:
        with pytest.raises(CorruptDataError, match="only v2"):
            log.append(bytes(legacy.build()))


def test_several_batches_in_one_call_and_gapped_offsets(tmp_path):
    with PartitionLog.open_for_append(str(tmp_path / "t-0")) as log:
        data = make_batch([1, 2]) + make_batch([3]) + make_batch([4, 5, 6])
        assert log.append(data) == (0, 5)
        assert log.append([make_batch([7]), make_batch([8])]) == (6, 7)
        assert log.append_batches(make_batch([9, 9], base_offset=20)) == (20, 21)
        assert log.log_end_offset == 22
    log = PartitionLog.open(str(tmp_path / "t-0"))
    assert [h.base_offset for _, h, _ in log.iter_entries()] == [0, 2, 3, 6, 7, 20]
    assert [h.base_offset for _, h, _ in log.iter_entries(8)] == [20]
    assert log.offset_for_timestamp(9) == 20
    with pytest.raises(DataLossError, match=r"\[0, 22\]"):
        log.position_for_offset(23)


def test_topic_id_and_log_start_checkpoint(tmp_path):
    path = tmp_path / "data" / "t-2"
    with PartitionLog.open_for_append(str(path), topic_id="RF3nAxjBRmqJ3yhb0DBBdw") as log:
        for i in range(10):
            log.append(make_batch([i]))
    assert (path / "partition.metadata").read_bytes() == \
        b"version: 0\ntopic_id: RF3nAxjBRmqJ3yhb0DBBdw"
    with pytest.raises(BadOptionError, match="RF3nAxjBRmqJ3yhb0DBBdw"):
        PartitionLog.open_for_append(str(path), topic_id="BA6cmcIVRFOTGdRZ0Jqu0w")
    PartitionLog.open_for_append(str(path)).close()  # the lock was released on that error
    write_offset_checkpoint(str(tmp_path / "data" / "log-start-offset-checkpoint"), {("t", 2): 4})
    log = PartitionLog.open(str(path))
    assert (log.log_start_offset, log.topic_id) == (4, "RF3nAxjBRmqJ3yhb0DBBdw")
    assert log.offset_for_timestamp(0) == 4 and log.offset_for_timestamp(-2) == 4
    with pytest.raises(DataLossError):
        log.position_for_offset(3)


def test_open_errors(tmp_path):
    with pytest.raises(LogNotFoundError):
        PartitionLog.open(str(tmp_path / "missing-0"))
    (tmp_path / "not_a_partition").mkdir()
    with pytest.raises(BadOptionError, match="topic= and partition="):
        PartitionLog.open(str(tmp_path / "not_a_partition"))
    log = PartitionLog.open(str(tmp_path / "not_a_partition"), topic="x", partition=1)
    assert (log.log_start_offset, log.log_end_offset, log.segments) == (0, 0, [])


def test_fsync_policies_write_the_same_files(tmp_path):
    written = []
    for fsync in ("none", "close", "always"):
        path = tmp_path / fsync / "t-0"
        with PartitionLog.open_for_append(str(path), config=LogConfig(fsync=fsync,
                                                                      segment_bytes=2000)) as log:
            for i in range(20):
                log.append(make_batch([i], value_size=200))
        written.append(files(path))
    assert written[0] == written[1] == written[2]
    assert len([n for n in written[0] if n.endswith(".log")]) >= 3
    assert_indexes_are_rebuilt_ones(tmp_path / "none" / "t-0")


# -- lookups on generated logs -------------------------------------------------------------

batch_specs = st.lists(
    st.tuples(st.lists(st.integers(0, 10_000), min_size=1, max_size=6),   # record timestamps
              st.integers(10, 80),                                         # value size
              st.integers(0, 3)),                                          # offset gap before
    min_size=10, max_size=60)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=batch_specs, segment_bytes=st.integers(1100, 4000), interval=st.integers(0, 3000),
       targets=st.lists(st.integers(-1, 10_002), min_size=5, max_size=30))
def test_lookups_on_generated_logs_agree_with_brute_force(tmp_path_factory, specs, segment_bytes,
                                                          interval, targets):
    path = tmp_path_factory.mktemp("gen") / "gen-0"
    config = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=interval)
    with PartitionLog.open_for_append(str(path), config=config) as log:
        for stamps, size, gap in specs:
            base = log.log_end_offset + gap
            log.append_batches(make_batch(stamps, value_size=size, base_offset=base))
    assert_indexes_are_rebuilt_ones(path, interval)
    # offset gaps are the cleaner's: without its checkpoint a gap between segments is data loss
    # (and the cleaner has been everywhere: at its checkpoint, the log end)
    end = PartitionLog.open(str(path)).log_end_offset
    write_offset_checkpoint(str(path.parent / "cleaner-offset-checkpoint"), {("gen", 0): end})
    log = PartitionLog.open(str(path))
    brute = BruteForce(log)
    for offset in range(log.log_end_offset + 1):
        segment, position = log.position_for_offset(offset)
        assert (segment.base_offset, position) == brute.position(offset)
    stamps = brute.record_timestamps()
    for target in set(targets) | set(stamps[:10]) | {s + 1 for s in stamps[-5:]}:
        if target >= 0:
            assert log.offset_for_timestamp(target) == brute.offset_for_timestamp(target), target
    top = max(stamps)
    first_top = min(o for _, rows in brute.per_segment for t, o, _ in rows if t == top)
    assert log.offset_for_timestamp(-3) == first_top
