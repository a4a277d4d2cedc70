"""A missing `.log` is data loss: beside its indexes, between two segments, or at the end of a
log whose producer snapshot or checkpoints say it was longer (issue #16, class 3)."""

from __future__ import annotations

import shutil

import pytest

from segmentlog_source.errors import DataLossError
from tests.damage.helpers import generated, read, read_error, segments, verify_errors


@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    path = generated(tmp_path_factory.mktemp("missing") / "data")
    return path, read(path)


@pytest.fixture
def log(healthy, tmp_path):
    shutil.copytree(healthy[0].parent, tmp_path / "data")
    return tmp_path / "data" / "t-0"


@pytest.mark.parametrize("segment", [1, 3, 5, 6])
def test_a_log_missing_beside_its_indexes(log, segment):
    path, headers = segments(log)[segment]
    path.unlink()
    err = read_error(log, path.with_suffix(".index"))
    assert isinstance(err, DataLossError)
    assert any(path.name.replace(".log", ".index") in e for e in verify_errors(log))


@pytest.mark.parametrize("segment", [1, 2, 4, 5])
def test_a_segment_missing_between_two_others(log, healthy, segment):
    path, headers = segments(log)[segment]
    for f in log.glob(path.stem + ".*"):
        f.unlink()
    err = read_error(log, log)
    assert isinstance(err, DataLossError)
    assert f"offsets {headers[0].base_offset}..{headers[-1].last_offset} are missing" in str(err)
    assert any("are missing" in e for e in verify_errors(log))
    # a range that does not touch the hole reads exactly
    rows = read(log, startingOffsets='{"t":{"0":0}}',
                endingOffsets=f'{{"t":{{"0":{headers[0].base_offset - 20}}}}}')
    assert rows == [r for r in healthy[1] if r[2] < headers[0].base_offset - 20]
    # a range that starts inside it is an error too
    inside = headers[0].base_offset + 3
    read_error(log, log, startingOffsets=f'{{"t":{{"0":{inside}}}}}')
    # and so is a lookup by timestamp that passes over it: its answer may have been there
    after = next(r for r in healthy[1] if r[2] == headers[-1].last_offset + 1)
    err = read_error(log, log, startingTimestamp=str(after[3] // 1000))
    assert "lookup by timestamp" in str(err)
    # salvaging, every other row comes back, exactly
    assert read(log, failOnDataLoss="false") == [
        r for r in healthy[1] if not headers[0].base_offset <= r[2] <= headers[-1].last_offset]


@pytest.mark.parametrize("segments_lost", [1, 2])
def test_the_last_segments_missing(log, healthy, segments_lost):
    kept = segments(log)[:-segments_lost]
    for path, _ in segments(log)[-segments_lost:]:
        for f in log.glob(path.stem + ".*"):
            if f.suffix != ".snapshot":
                f.unlink()
    end = kept[-1][1][-1].last_offset + 1
    err = read_error(log, ".snapshot")
    assert f"offsets {end}..599 are missing" in str(err)
    assert any(".snapshot" in e for e in verify_errors(log))
    assert read(log, failOnDataLoss="false") == [r for r in healthy[1] if r[2] < end]


@pytest.mark.parametrize("name", ["recovery-point-offset-checkpoint",
                                  "replication-offset-checkpoint"])
def test_a_data_dir_checkpoint_beyond_the_log_end(log, name):
    for f in log.glob("*.snapshot"):
        f.unlink()
    (log.parent / name).write_text("0\n1\nt 0 700\n")
    err = read_error(log, name)
    assert "offsets 600..699 are missing" in str(err)
