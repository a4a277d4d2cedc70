"""`segmentlog dump` against Kafka's own DumpLogSegments (4.4, org.apache.kafka.tools) on the files
a real broker wrote and on the files segmentlog wrote for it: the test broker's log directory
after it stopped (every topic of broker_topics.py, its transaction state and KRaft metadata
logs, producer snapshots, transaction indexes), two active segments copied while it ran
(indexes still preallocated), and the topic test_broker_serves.py hands to the broker.

The comparison itself is tests/cli/test_dump_vs_kafka.py's, which runs it on every shared
fixture: stdout byte for byte, the stderr report per file and section, and Kafka 4.3+'s false
"-1 is followed by N" gap reports left out. One more difference shows only on a broker's own
files, listed in the README with Kafka's reason: a preallocated time index (KRaft's metadata
log keeps its preallocation even after a clean stop) makes DumpLogSegments' --index-sanity-check
throw; segmentlog reads such an index up to its first zero entry, as the broker does, and passes
it. Those files are left out of Kafka's sanity-check run, and test_a_preallocated_time_index
shows the difference.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from segmentlog_source.devtools.kafka import dump_log_segments
from tests.cli.test_dump_vs_kafka import SUFFIXES, kafka_dump, our_dump, report
from tests.values.test_cluster_metadata import kafka_with_our_redactions

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("kafka")]

# The flags the issue names, and the plain dump; tests/cli/test_dump_vs_kafka.py adds
# --skip-record-metadata and --max-bytes on the fixtures, which these files would not add to.
FLAG_SETS = {
    "shallow": (),
    "deep-iteration": ("--deep-iteration",),
    "print-data-log": ("--print-data-log",),
    "verify-index-only": ("--verify-index-only",),
    "index-sanity-check": ("--index-sanity-check",),
}
PREALLOCATED_MESSAGE = "has non-zero size but the last timestamp is 0 which is less than the first"


def preallocated_time_index(path: Path) -> bool:
    """A .timeindex with entries, still holding its preallocated zeros after the last one.
    (With no entry at all, the zeros are all DumpLogSegments sees, and it passes the file.)"""
    if path.suffix != ".timeindex" or path.stat().st_size < 24:
        return False
    data = path.read_bytes()
    return data[-12:] == bytes(12) and data[:12] != bytes(12)


@pytest.fixture(scope="module")
def files(broker_reads, adoption) -> dict[str, list[Path]]:
    def under(*roots: Path) -> list[Path]:
        return sorted(p for root in roots for p in root.rglob("*")
                      if p.suffix in SUFFIXES and p.is_file())

    return {"broker": under(broker_reads.files, broker_reads.active_copies),
            "segmentlog": under(adoption.written.data_dir)}


def _compared(files: dict[str, list[Path]], flags: str) -> list[Path]:
    every = files["broker"] + files["segmentlog"]
    if flags == "index-sanity-check":
        return [f for f in every if not preallocated_time_index(f)]
    return every


def _block_of(lines: list[bytes], i: int) -> str:
    """The file whose `Dumping` block holds line i."""
    starts = [line for line in lines[:i + 1] if line.startswith(b"Dumping ")]
    return starts[-1][len(b"Dumping "):].decode("utf-8", "replace") if starts else "?"


def test_the_files_reach_what_a_broker_writes(files):
    broker = files["broker"]
    assert {p.suffix for p in broker} == set(SUFFIXES)   # .checkpoint: KRaft's snapshot
    assert {p.parent.name for p in broker} >= {"__cluster_metadata-0", "__transaction_state-0",
                                               "codec-zstd-0", "txn-0", "lat-0"}
    assert any(p.suffix == ".txnindex" and p.stat().st_size > 0 for p in broker)
    assert any(preallocated_time_index(p) for p in broker)
    assert {p.suffix for p in files["segmentlog"]} >= {".log", ".index", ".timeindex"}


@pytest.mark.parametrize("flags", FLAG_SETS)
def test_segmentlog_dump_prints_what_dump_log_segments_prints(files, flags):
    every = _compared(files, flags)
    kafka_out, kafka_err = kafka_dump(every, FLAG_SETS[flags])
    out, err = our_dump(every, FLAG_SETS[flags])
    # (a metadata record holding a secret: Kafka prints its bytes, segmentlog "(redacted)")
    kafka_out = kafka_with_our_redactions(kafka_out, out)
    kafka_lines, lines = kafka_out.split(b"\n"), out.split(b"\n")
    if kafka_out != out:
        i = next((i for i, (a, b) in enumerate(zip(kafka_lines, lines)) if a != b),
                 min(len(kafka_lines), len(lines)))
        pytest.fail(f"stdout differs at line {i + 1} of {len(kafka_lines)}, in the dump of "
                    f"{_block_of(kafka_lines, i)}:\n"
                    f"  DumpLogSegments: {kafka_lines[i:i + 1]!r:.400}\n"
                    f"  segmentlog:      {lines[i:i + 1]!r:.400}")
    assert kafka_out.count(b"\nDumping ") + 1 == len(every)
    assert report(err) == report(kafka_err, drop_false_gaps=True)


def test_a_preallocated_time_index(files):
    """The one difference on a broker's files: DumpLogSegments --index-sanity-check throws on a
    preallocated .timeindex (it takes the zeros for entries); segmentlog passes it."""
    preallocated = [p for p in files["broker"] if preallocated_time_index(p)]
    for path in preallocated:
        kafka = dump_log_segments.run([path], FLAG_SETS["index-sanity-check"])
        assert kafka.returncode == 1
        assert PREALLOCATED_MESSAGE in kafka.stderr.decode("utf-8", "replace")
        out, err = our_dump([path], FLAG_SETS["index-sanity-check"])
        assert out.decode().split("\n") == [f"Dumping {path}", f"{path} passed sanity check.", ""]
        assert err == b""
