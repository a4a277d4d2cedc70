"""The I/O seam's positional reads: read_into fills caller memory and counts like read_at."""

from __future__ import annotations

from segmentlog_source.storage.io.local import LOCAL
from segmentlog_source.storage.io.stats import IOStats


def test_read_into_fills_the_buffer_and_counts_one_request(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(bytes(range(256)) * 40)
    stats = IOStats()
    with LOCAL.open_read(str(path), stats) as f:
        buffer = bytearray(b"xx" + bytes(1000))
        assert f.read_into(300, memoryview(buffer)[2:]) == 1000
        assert bytes(buffer) == b"xx" + (bytes(range(256)) * 40)[300:1300]
        assert (stats.bytes_read, stats.read_requests) == (1000, 1)
        assert f.read_at(300, 1000) == bytes(buffer[2:])


def test_read_into_reads_fewer_bytes_only_at_the_end_of_the_file(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    stats = IOStats()
    with LOCAL.open_read(str(path), stats) as f:
        buffer = bytearray(8)
        assert f.read_into(6, buffer) == 4
        assert buffer[:4] == b"6789"
        assert f.read_into(10, buffer) == 0
    assert stats.bytes_read == 4
