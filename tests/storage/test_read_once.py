"""storage/io/read_once.py: a file's bytes read from its store at most once, served right."""

from __future__ import annotations

import gc
import random

import pytest

from segmentlog_source.errors import FileChangedError
from segmentlog_source.storage.io.local import LOCAL
from segmentlog_source.storage.io.read_once import (
    BLOCK_BYTES, DEFAULT_BUDGET, SHARED_BUDGET, ReadOnceBudget, ReadOnceFiles)
from segmentlog_source.storage.io.stats import IOStats


def test_any_reads_return_the_files_bytes_and_read_each_once(tmp_path):
    data = random.Random(1).randbytes(10 * BLOCK_BYTES + 123)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    stats = IOStats()
    files = ReadOnceFiles(LOCAL, str(path), stats)
    rng = random.Random(2)
    for _ in range(500):
        start = rng.randrange(len(data) + 10)
        length = rng.randrange(3 * BLOCK_BYTES)
        with files.open_read(str(path)) as f:
            assert f.read_at(start, length) == data[start:start + length]
    assert files.read_all(str(path)) == data
    assert stats.bytes_read == len(data)   # every byte read once, none twice


def test_past_its_budget_it_reads_from_the_store(tmp_path):
    data = bytes(range(256)) * 64
    path = tmp_path / "f.log"
    path.write_bytes(data)
    stats = IOStats()
    files = ReadOnceFiles(LOCAL, str(path), stats, budget=BLOCK_BYTES)
    want = data[100:100 + 3 * BLOCK_BYTES]
    for _ in range(3):
        assert files.read_range(str(path), 100, 3 * BLOCK_BYTES, None) == want
    assert stats.bytes_read == 3 * 3 * BLOCK_BYTES


def test_a_file_truncated_under_a_read_is_refused_and_nothing_short_is_kept(tmp_path):
    data = random.Random(3).randbytes(10240)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    files = ReadOnceFiles(LOCAL, str(path), IOStats())
    assert files.size(str(path)) == 10240
    with open(path, "r+b") as f:
        f.truncate(5000)
    with pytest.raises(FileChangedError) as err:
        files.read_at(4096, 100)
    assert err.value.path == str(path) and err.value.position == 5000
    path.write_bytes(data)      # back as it was: later reads serve its bytes, none shifted
    assert files.read_at(4096, 6000) == data[4096:10096]


def test_past_its_budget_a_truncated_file_is_refused_too(tmp_path):
    """Reads the budget cannot hold go to the store, and are held to the first size alike."""
    data = random.Random(4).randbytes(10240)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    files = ReadOnceFiles(LOCAL, str(path), IOStats(), budget=0)
    assert files.read_at(100, 5000) == data[100:5100]
    with open(path, "r+b") as f:
        f.truncate(7000)
    with pytest.raises(FileChangedError) as err:
        files.read_at(6000, 2000)
    assert err.value.path == str(path) and err.value.position == 7000
    assert files.read_at(6000, 1000) == data[6000:7000]   # what is still there reads


def test_one_budget_bounds_what_all_files_hold(tmp_path):
    data = random.Random(4).randbytes(4 * BLOCK_BYTES)
    paths = []
    for i in range(3):
        paths.append(tmp_path / f"{i:020d}.log")
        paths[-1].write_bytes(data)
    budget = ReadOnceBudget(5 * BLOCK_BYTES)
    stats = IOStats()
    files = [ReadOnceFiles(LOCAL, str(p), stats, budget=budget) for p in paths]
    for one in files:           # three files of 4 blocks: only the first fits
        assert one.read_all(one._path) == data
    assert budget.held == 4 * BLOCK_BYTES
    before = stats.bytes_read
    assert files[2].read_all(str(paths[2])) == data     # not held: read from the store again
    assert stats.bytes_read == before + len(data)
    files[0].release()
    assert budget.held == 0
    assert files[2].read_all(str(paths[2])) == data     # now it fits
    assert budget.held == 4 * BLOCK_BYTES
    del files[2], one
    gc.collect()
    assert budget.held == 0     # a file dropped without release gives its share back


def test_files_share_one_budget_by_default():
    assert ReadOnceFiles(LOCAL, "x")._budget is SHARED_BUDGET
    assert SHARED_BUDGET.limit == DEFAULT_BUDGET
