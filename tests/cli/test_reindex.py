"""`segmentlog reindex`: the broker's recovery rebuild, byte for byte, without touching a `.log`."""

from __future__ import annotations

from pathlib import Path

import pytest

from segmentlog_source.cli.generate import generate_log
from segmentlog_source.cli.reindex import reindex_partition
from segmentlog_source.errors import CorruptDataError, LogLockedError
from segmentlog_source.storage.log.partition_log import PartitionLog
from segmentlog_source.storage.log.segment_indexer import rebuild_index_bytes
from tests.cli.helpers import flip_byte, run_cli, writable_copy
from tests.storage.helpers import real_id, real_partition_dirs

INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")
CLEAN = [p for p in real_partition_dirs() if any(p.glob("*.index"))]


def _snapshot(path: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in sorted(path.iterdir()) if f.is_file()}


@pytest.mark.parametrize("src", CLEAN, ids=real_id)
def test_rebuilds_the_brokers_indexes(src, tmp_path):
    path = writable_copy(src, tmp_path / src.name)
    before = _snapshot(path)
    for f in path.iterdir():
        if f.suffix in (".index", ".timeindex"):
            f.write_bytes(b"\x07" * 24)  # damage that only a rebuild repairs
    rebuilt = reindex_partition(str(path))
    after = _snapshot(path)
    assert len(rebuilt) == len(list(path.glob("*.log")))
    assert {n for n in after if n.endswith(".tmp")} == set()
    for name, data in before.items():
        if not name.endswith((".index", ".timeindex")):
            assert after[name] == data, name  # logs, snapshots, checkpoints untouched
        elif src.parent.name != "william0423-kafka":
            assert after[name] == data, name  # leader-written 2.7-3.8 segments: identical
    if src.parent.name == "william0423-kafka":
        # A 2.1 broker restarted while these were active (spec §4.5): recovery's plain rebuild
        # is what the broker itself would write now.
        for log in path.glob("*.log"):
            base = int(log.name[:20])
            expected = rebuild_index_bytes(log.read_bytes(), base)
            assert (after[f"{base:020d}.index"], after[f"{base:020d}.timeindex"]) == expected


def test_generated_transactions_round_trip(tmp_path):
    generate_log(str(tmp_path / "d"), topics=["t"], partitions=2, records=4000, value_size=150,
                 segment_bytes=150_000, records_per_batch=25, transactions=True, seed=11)
    for path in sorted((tmp_path / "d").iterdir()):
        before = _snapshot(path)
        assert any(n.endswith(".txnindex") for n in before)
        for name in before:
            if name.endswith(INDEX_SUFFIXES):
                (path / name).unlink()
        reindex_partition(str(path))
        assert _snapshot(path) == before


def test_index_interval(tmp_path):
    generate_log(str(tmp_path / "d"), records=2000, value_size=300, records_per_batch=10)
    path = tmp_path / "d" / "events-0"
    before = _snapshot(path)
    (dense,) = reindex_partition(str(path), index_interval_bytes=0)
    assert dense.entries[".index"] == 199  # every batch but the first
    (default,) = reindex_partition(str(path))
    assert default.changed == [".index", ".timeindex"]
    assert _snapshot(path) == before


def test_a_damaged_log_is_left_alone(tmp_path):
    generate_log(str(tmp_path / "d"), records=3000, value_size=200, segment_bytes=200_000,
                 records_per_batch=20)
    path = tmp_path / "d" / "events-0"
    segments = PartitionLog.open(str(path)).segments
    log = Path(segments[1].log_path)
    batch = list(segments[1].iter_entries())[4][0]
    flip_byte(log, batch.position + 80)
    (path / segments[0].index_path).unlink()
    before = _snapshot(path)
    with pytest.raises(CorruptDataError) as caught:
        reindex_partition(str(path))
    assert (caught.value.path, caught.value.position) == (str(log), batch.position)
    after = _snapshot(path)
    assert after.pop(Path(segments[0].index_path).name)  # the segment before it was rebuilt
    assert after == before
    result = run_cli("reindex", path)
    assert result.returncode == 1
    assert result.stderr.startswith(f"segmentlog: {log} at byte {batch.position}: CRC mismatch")
    assert result.stderr.rstrip().endswith("not reindexed (broker recovery would cut the log here)")


def test_console_script_and_the_writer_lock(tmp_path):
    generate_log(str(tmp_path / "d"), topics=["a", "b"], records=100)
    result = run_cli("reindex", tmp_path / "d")
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        f"{tmp_path}/d/{t}-0/00000000000000000000: .index 0 entries (unchanged), .timeindex 1 "
        "entry (unchanged), .txnindex 0 entries (unchanged)" for t in "ab"]
    with PartitionLog.open_for_append(str(tmp_path / "d" / "a-0")):
        with pytest.raises(LogLockedError):
            reindex_partition(str(tmp_path / "d" / "a-0"))
        result = run_cli("reindex", tmp_path / "d" / "a-0")
        assert result.returncode == 2 and result.stderr.startswith("segmentlog: partition a-0")
