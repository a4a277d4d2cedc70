"""A `.txnindex` entry is in no CRC: read_committed drops a producer's batches from the entry's
first offset to its ABORT marker, and stops looking at later segments once an entry's last
stable offset passes the range read. An entry that names a marker outside its segment, a first
offset after its marker, or a last stable offset past it is an error naming the file and entry,
never aborted rows returned or committed rows dropped."""

from __future__ import annotations

import shutil
import struct

import pytest

from segmentlog_source.errors import SegmentLogError
from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.damage.helpers import generated, read, read_error, verify_errors

# an entry: version (2), producer id (8), first offset (8), last offset (8), LSO (8)
FIRST, LAST, STABLE, ENTRY = 10, 18, 26, 34


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    path = generated(tmp_path_factory.mktemp("txn") / "data", transactions=True, seed=11)
    return path, read(path, isolationLevel="read_committed")


@pytest.fixture
def log(healthy, tmp_path):
    shutil.copytree(healthy[0].parent, tmp_path / "data")
    return tmp_path / "data" / "t-0"


def _entries(log):
    """(txnindex path, entry index, first, last, LSO) of every entry of every segment."""
    found = []
    for path in sorted(log.glob("*.txnindex")):
        data = path.read_bytes()
        for i in range(len(data) // ENTRY):
            found.append((path, i, *struct.unpack_from(">qqq", data, i * ENTRY + FIRST)))
    return found


def _poke(path, i, field, value):
    data = bytearray(path.read_bytes())
    struct.pack_into(">q", data, i * ENTRY + field, value)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("which", [0, 1, -1])
@pytest.mark.parametrize("field,value", [
    (LAST, 2**63 - 1),          # the marker far past the segment: the producer aborted forever
    (LAST, "next-base"),        # the marker in the next segment's range
    (FIRST, "after-last"),      # the transaction starting after its own marker
    (FIRST, -5),
    (STABLE, 2**62),            # an LSO past every range: later segments' aborts never looked at
])
def test_a_damaged_entry_is_an_error_naming_the_txnindex(log, which, field, value):
    entries = _entries(log)
    assert len(entries) >= 3, "the generated log must hold aborted transactions"
    path, i, first, last, stable = entries[which]
    segments = sorted(int(p.stem) for p in log.glob("*.log"))
    base = int(path.stem)
    later = [b for b in segments if b > base]
    if value == "next-base":   # (past the log end, in the last segment)
        value = later[0] if later else PartitionLog.open(str(log)).log_end_offset
    elif value == "after-last":
        value = last + 1
    _poke(path, i, field, value)
    err = read_error(log, path, isolationLevel="read_committed")
    assert f"entry {i}" in str(err)
    assert any(str(path) in e for e in verify_errors(log))


def test_healthy_transactions_read_exactly(healthy):
    path, rows = healthy
    assert verify_errors(path) == []
    everything = read(path)
    assert 0 < len(rows) < len(everything)     # aborted rows exist, and are dropped


@pytest.mark.parametrize("back", [1, 3])
def test_a_first_offset_moved_into_an_earlier_segment(log, back):
    """A transaction may begin in an earlier segment than its ABORT marker; an entry whose
    first offset moved there, where no transactional batch of its producer starts, drops
    committed rows: read_committed fails, and verify names the .txnindex."""
    entries = [e for e in _entries(log) if int(e[0].stem) > 0]
    assert entries, "the generated log must hold aborts past its first segment"
    for path, i, first, last, stable in entries:
        target = int(path.stem) - back    # inside the segment before: no batch starts there
        starts = {h.base_offset for s in PartitionLog.open(str(log)).segments
                  for h, _ in s.iter_entries()}
        if target in starts or target >= first:
            continue
        _poke(path, i, FIRST, target)
        with pytest.raises(SegmentLogError):
            read(log, isolationLevel="read_committed")
        assert any(str(path) in e and f"entry {i}" in e for e in verify_errors(log))
        return
    pytest.fail("no entry could be moved into an earlier segment")
