"""storage/io/read_once.py: a file's bytes read from its store at most once, served right."""

from __future__ import annotations

import random

from segmentlog_source.storage.io.local import LOCAL
from segmentlog_source.storage.io.read_once import BLOCK_BYTES, ReadOnceFiles
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
