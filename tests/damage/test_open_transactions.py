"""A log cut before a transaction's marker (a crashed broker, a copy taken mid-transaction, a
torn tail) leaves the transaction open. Kafka's last stable offset (LSO) then stops where the
oldest open transaction began: a read_committed consumer gets nothing at or past it, whether the
transaction would have committed or aborted. The cuts are generated at every batch boundary of a
log of interleaved transactions; the LSO is worked out here from the raw batch headers, apart
from segmentlog's producer state."""

from __future__ import annotations

import shutil
import struct

import pytest

from segmentlog_source.errors import BadOptionError
from tests.damage.helpers import generated, read, segments, verify_errors

TRANSACTIONAL, CONTROL = 0x10, 0x20


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    # one segment, so every cut is the end of the log
    path = generated(tmp_path_factory.mktemp("open-txn") / "data", transactions=True, seed=5,
                     records=300, segment_bytes=1024 * 1024)
    return path, read(path, isolationLevel="read_committed")


def _last_stable_offset(log_bytes: bytes) -> int:
    """The LSO at the end of `log_bytes` (v2 batches), from their headers alone."""
    open_txns: dict[int, int] = {}    # producer id -> first offset of its open transaction
    pos, end = 0, 0
    while pos + 61 <= len(log_bytes):
        base, length = struct.unpack_from(">qi", log_bytes, pos)
        attributes = struct.unpack_from(">h", log_bytes, pos + 21)[0]
        last = base + struct.unpack_from(">i", log_bytes, pos + 23)[0]
        producer = struct.unpack_from(">q", log_bytes, pos + 43)[0]
        if attributes & CONTROL:
            open_txns.pop(producer, None)
        elif attributes & TRANSACTIONAL:
            open_txns.setdefault(producer, base)
        pos, end = pos + 12 + length, last + 1
    return min(open_txns.values(), default=end)


def _cuts(log_path):
    """Batch boundaries after which some transaction is open (the interesting cuts)."""
    (segment, headers), = segments(log_path)
    data = segment.read_bytes()
    return [h.end for h in headers if _last_stable_offset(data[:h.end]) < h.last_offset + 1]


def test_the_generated_log_leaves_transactions_open_at_many_cuts(healthy):
    assert len(_cuts(healthy[0])) >= 10


@pytest.mark.parametrize("k", range(8))
@pytest.mark.parametrize("torn", [False, True])
def test_read_committed_stops_at_the_last_stable_offset(healthy, tmp_path, k, torn):
    shutil.copytree(healthy[0].parent, tmp_path / "data")
    log = tmp_path / "data" / "t-0"
    cuts = _cuts(log)
    cut = cuts[k * len(cuts) // 8]
    (segment, _), = segments(log)
    data = segment.read_bytes()
    stable = _last_stable_offset(data[:cut])
    # a cut at a batch boundary, or in the middle of the batch after it (a torn tail)
    segment.write_bytes(data[:cut + (30 if torn else 0)])
    # a bare copy of the `.log` (indexes, snapshots and checkpoints would say the log went on)
    for other in [*log.glob("*index"), *log.glob("*.snapshot"), *log.parent.glob("*checkpoint")]:
        other.unlink()
    rows = read(log, isolationLevel="read_committed")
    assert rows == [r for r in healthy[1] if r[2] < stable]
    # read_uncommitted still sees every record up to the cut
    assert max(r[2] for r in read(log)) >= stable
    # an ending offset past the LSO under read_committed: an error saying what holds it
    ending = '{"t":{"0":%d}}' % (stable + 1)
    with pytest.raises(BadOptionError, match=f"last stable offset {stable}"):
        read(log, isolationLevel="read_committed", endingOffsets=ending)
    assert not verify_errors(log) or torn


@pytest.fixture(scope="module")
def compacted(tmp_path_factory):
    """A partition of several segments that the data directory's cleaner-offset-checkpoint
    lists (so its topic counts as compacted)."""
    log = generated(tmp_path_factory.mktemp("cleaned") / "data", records=600,
                    segment_bytes=2048)
    return log, read(log)


def _with_checkpoint_and_moved_tail(log, tmp_path, dirty: int, shift: int):
    """A copy with the cleaner checkpoint at `dirty` and the log's last batch moved up by
    `shift` (its base offset is outside the CRC; nothing after it overlaps): a gap before it."""
    shutil.copytree(log.parent, tmp_path / "data")
    (tmp_path / "data" / "cleaner-offset-checkpoint").write_text(f"0\n1\nt 0 {dirty}\n")
    segment, headers = segments(tmp_path / "data" / "t-0")[-1]
    data = bytearray(segment.read_bytes())
    struct.pack_into(">q", data, headers[-1].position, headers[-1].base_offset + shift)
    segment.write_bytes(bytes(data))
    return tmp_path / "data" / "t-0", segment, headers[-1]


@pytest.mark.parametrize("shift", [1, 2, 7, 1000])
@pytest.mark.parametrize("where", [0.1, 0.5, 1.0])
def test_a_gap_past_the_cleaner_checkpoint_is_no_cleaners(compacted, tmp_path, shift, where):
    """The cleaner removes records only below its checkpoint (the first dirty offset): a gap
    reaching past it is a moved base offset or a lost segment, an error naming the file, for
    the reader and for verify."""
    log, rows = compacted
    tail = segments(log)[-1][1][-1].base_offset     # the checkpoint at most at the moved batch
    copy, segment, last = _with_checkpoint_and_moved_tail(log, tmp_path, int(tail * where), shift)
    with pytest.raises(Exception) as info:
        read(copy)
    assert type(info.value).__module__ == "segmentlog_source.errors", info.value
    # (named in the cleaner's terms, or by another file of the segment that disagrees first)
    assert str(segment.with_suffix("")) in str(info.value), info.value
    assert any(str(segment.with_suffix("")) in e for e in verify_errors(copy))
    # failOnDataLoss=false: every row but the moved batch's, which is skipped
    kept = read(copy, failOnDataLoss="false")
    assert kept == [r for r in rows if r[2] < last.base_offset]


def test_a_gap_below_the_cleaner_checkpoint_may_be_the_cleaners(compacted, tmp_path):
    """The same moved batch below the checkpoint: a gap the cleaner could have left, so its
    rows come back at the offsets the log now gives them (no file says otherwise)."""
    log, rows = compacted
    end = rows[-1][2] + 1
    copy, _, last = _with_checkpoint_and_moved_tail(log, tmp_path, end + 10, 2)
    got = read(copy)
    assert [r[2] for r in got] == [r[2] for r in rows if r[2] < last.base_offset] + [
        r[2] + 2 for r in rows if r[2] >= last.base_offset]


@pytest.mark.parametrize("indexes", [True, False])
def test_a_range_ending_before_an_abort_marker_still_drops_the_aborted_rows(healthy, tmp_path,
                                                                            indexes):
    """A read_committed range may end between an aborted transaction's data and its ABORT
    marker; the rows are aborted all the same (Kafka's fetch takes aborts from the whole
    .txnindex). With no index files (a bare copy of `.log` files) the aborts come from the
    batches, up to the marker past the range."""
    shutil.copytree(healthy[0].parent, tmp_path / "data")
    log = tmp_path / "data" / "t-0"
    if not indexes:
        for other in log.glob("*index"):
            other.unlink()
    (segment, headers), = segments(log)
    ends = [h.last_offset + 1 for h in headers if h.is_transactional and not h.is_control]
    assert len(ends) >= 10
    for hi in ends[::max(1, len(ends) // 10)]:
        rows = read(log, isolationLevel="read_committed", endingOffsets='{"t":{"0":%d}}' % hi)
        assert rows == [r for r in healthy[1] if r[2] < hi], hi
