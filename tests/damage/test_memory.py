"""Memory across batches (issue #16, class 5): a few hundred KB of highly compressed batches
that decompress to GBs are decoded a part at a time, so a read task's peak memory does not grow
with the number of batches in a read chunk: reading many such batches costs at most twice the
largest decompressed batch more than reading one of them (before, a chunk was decompressed
whole: 16 batches of 32 MiB took over 1 GB).

Each read runs in a fresh process as a Spark Python worker runs it (memory_child.py), whose
peak resident set (VmHWM) is compared."""

from __future__ import annotations

import json
from pathlib import Path
import subprocess
import sys

import pytest

from segmentlog_source.format.record_encoder import encode_batch
from segmentlog_source.format.records import Record
from segmentlog_source.storage.log.partition_log import PartitionLog

REPO = Path(__file__).resolve().parents[2]
BATCH_BYTES = 32 * 1024 * 1024      # each batch's one value: this many zero bytes
BATCHES = 16


def _bombs(directory: Path, count: int, codec: str) -> Path:
    batch = encode_batch([Record(0, 1_700_000_000_000, None, bytes(BATCH_BYTES))], codec=codec)
    with PartitionLog.open_for_append(str(directory / "t-0"), topic="t", partition=0) as log:
        for _ in range(count):
            log.append(batch)          # the log assigns each its offsets
    return directory


def _peak(directory: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "tests.damage.memory_child", str(directory)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("codec", ["zstd", "gzip"])
def test_many_small_compressed_batches_take_about_one_batch_of_memory(tmp_path, codec):
    many = _bombs(tmp_path / "many", BATCHES, codec)
    assert sum(f.stat().st_size for f in (many / "t-0").glob("*.log")) < 2 * 1024 * 1024
    one = _peak(_bombs(tmp_path / "one", 1, codec))
    result = _peak(many)
    assert one["rows"] == 1 and result["rows"] == BATCHES
    assert result["peak_rss"] - one["peak_rss"] <= 2 * BATCH_BYTES, (one, result)
