"""`segmentlog stats`: one row per topic-partition, checked against what independent readers
saw (Kafka's own reader in the fixtures' inspect.txt, kafka-python on generated logs)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from kafka.record import MemoryRecords

from segmentlog_source.cli.main import main
from segmentlog_source.storage.io.stats import IOStats
from segmentlog_source.storage.log.log_summary import summarize_partition
from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.cli.helpers import client_case_as_partition, client_cases, client_log, run_cli
from tests.conftest import shared_fixture
from tests.fixture_inspect import parse_inspect

CASES = client_cases()
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def stats_json(capsys, *args) -> list[dict]:
    assert main(["stats", "--json", *map(str, args)]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def _timestamp(ms: int) -> int | None:
    return None if ms < 0 else ms


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_a_row_agrees_with_kafkas_reader(case, tmp_path, capsys):
    partition = client_case_as_partition(case, tmp_path)
    batches = parse_inspect(case / "inspect.txt").batches
    (row,) = stats_json(capsys, "--deep", partition)
    records = [r for b in batches for r in b.records]
    assert row == {
        "topic": "case", "partition": 0, "directory": str(partition), "segments": 1,
        "batches": len(batches), "logStartOffset": int(client_log(case).name[:20]),
        "firstOffset": records[0].offset, "lastOffset": batches[-1].last_offset,
        "logEndOffset": batches[-1].last_offset + 1,
        "firstTimestamp": _timestamp(records[0].timestamp),
        "maxTimestamp": _timestamp(max(b.max_timestamp for b in batches)),
        "bytes": client_log(case).stat().st_size,
        "codecs": dict(sorted(Counter(b.codec for b in batches).items())),
        "magics": sorted({b.magic for b in batches}),
        "records": sum(len(b.records) for b in batches if not b.is_control),
        "controlRecords": sum(len(b.records) for b in batches if b.is_control),
        "invalidBytes": 0}
    # headers only: the same, without the counts
    (shallow,) = stats_json(capsys, partition)
    assert shallow == row | {"records": None, "controlRecords": None}


def test_first_record_of_a_legacy_compressed_wrapper(tmp_path, capsys):
    """A legacy compressed wrapper's header holds its last offset: the first record's offset
    and timestamp are read from inside it."""
    case = shared_fixture("kafka-clients", "v1-gzip")
    batches = parse_inspect(case / "inspect.txt").batches
    second = batches[1]
    assert len(second.records) > 1 and second.codec == "gzip"
    partition = tmp_path / "case-0"
    partition.mkdir()
    (partition / "00000000000000000000.log").write_bytes(
        client_log(case).read_bytes()[second.position:])
    (row,) = stats_json(capsys, partition)
    assert (row["firstOffset"], row["firstTimestamp"]) == (second.records[0].offset,
                                                           second.records[0].timestamp)
    assert row["firstOffset"] != second.last_offset


def _independent(partition: Path) -> dict:
    """What kafka-python reads in a partition directory's .log files."""
    batches = []
    for log in sorted(partition.glob("*.log")):
        records = MemoryRecords(log.read_bytes())
        while (batch := records.next_batch()) is not None:
            batches.append((batch, list(batch)))
    data = [b for b, _ in batches if not b.is_control_batch]
    return {"segments": len(list(partition.glob("*.log"))), "batches": len(batches),
            "firstOffset": batches[0][1][0].offset, "lastOffset": batches[-1][0].last_offset,
            "firstTimestamp": batches[0][1][0].timestamp,
            "maxTimestamp": max(b.max_timestamp for b, _ in batches),
            "bytes": sum(f.stat().st_size for f in partition.glob("*.log")),
            "codecs": dict(Counter(CODECS[b.compression_type] for b, _ in batches)),
            "records": sum(len(r) for b, r in batches if b in data),
            "controlRecords": sum(len(r) for b, r in batches if b.is_control_batch)}


def test_generated_log_against_kafka_python(tmp_path):
    data = tmp_path / "data"
    generated = run_cli("generate", data, "--topics", "orders,clicks", "--partitions", "3",
                        "--records", "6000", "--codec", "lz4", "--transactions",
                        "--segment-bytes", "40000", "--records-per-batch", "20",
                        "--timestamp-jitter-ms", "50")
    assert generated.returncode == 0, generated.stderr
    result = run_cli("stats", "--deep", "--json", data)
    assert result.returncode == 0 and result.stderr == ""
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["topic"], r["partition"]) for r in rows] == [
        (t, p) for t in ("clicks", "orders") for p in range(3)]
    ends = {line.split(":")[0].rsplit("/", 1)[1]: int(line.rsplit(" ", 1)[1])
            for line in generated.stdout.splitlines()}
    for row in rows:
        partition = data / f"{row['topic']}-{row['partition']}"
        assert {k: row[k] for k in _independent(partition)} == _independent(partition)
        assert row["logEndOffset"] == ends[partition.name]
        assert row["segments"] > 1 and row["controlRecords"] > 0
    assert sum(r["records"] for r in rows) == 2 * 6000


def test_the_table(tmp_path):
    data = tmp_path / "data"
    assert run_cli("generate", data, "--partitions", "2", "--records", "900",
                   "--codec", "zstd").returncode == 0
    result = run_cli("stats", "--deep", data)
    assert result.returncode == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["partition", "segments", "first", "offset", "last", "offset",
                                "first", "timestamp", "max", "timestamp", "bytes", "codecs",
                                "records", "markers"]
    rows = [line.split() for line in lines[1:3]]
    assert [r[0] for r in rows] == ["events-0", "events-1"]
    assert all(r[7] == "zstd" and r[2] == "0" for r in rows)
    assert all(r[4].startswith("2023-11-14T22:13:20.") and r[4].endswith("Z") for r in rows)
    sizes = [sum(f.stat().st_size for f in (data / r[0]).glob("*.log")) for r in rows]
    assert [int(r[6].replace(",", "")) for r in rows] == sizes
    assert sum(int(r[8].replace(",", "")) for r in rows) == 900
    assert lines[3] == f"2 partitions, 2 segments, {sum(sizes):,} bytes, 900 records"
    assert len(lines) == 4


def test_a_real_data_directory(capsys):
    root = shared_fixture("kafka-real", "agelenler-broker-2")
    rows = stats_json(capsys, "--deep", root)
    names = sorted(p.name for p in root.iterdir() if (p / "inspect.txt").exists())
    assert [f"{r['topic']}-{r['partition']}" for r in rows] == names
    for row in rows:
        inspect = parse_inspect(root / f"{row['topic']}-{row['partition']}" / "inspect.txt")
        batches = [b for b in inspect.batches if b.file.endswith(".log")]
        assert row["batches"] == len(batches)
        assert row["records"] + row["controlRecords"] == sum(len(b.records) for b in batches)
        assert row["bytes"] == sum(size for f, size in inspect.segments.items()
                                   if f.endswith(".log"))
        if batches:
            assert row["lastOffset"] == batches[-1].last_offset
            assert row["firstOffset"] == batches[0].records[0].offset


def test_a_torn_tail_is_counted_not_fatal(tmp_path, capsys):
    case = shared_fixture("kafka-clients", "v2-none")
    partition = client_case_as_partition(case, tmp_path)
    log = client_log(partition)
    with log.open("ab") as f:
        f.write(b"\x00" * 7 + b"\x01")   # a batch cut short after 8 bytes
    (row,) = stats_json(capsys, partition)
    assert row["invalidBytes"] == 8
    assert main(["stats", str(partition)]) == 0
    assert f"note: 8 invalid bytes at the end of {log}" in capsys.readouterr().out


def test_headers_only_reads_a_fraction_of_big_batches(tmp_path):
    """Batches of ~1 MB: the header scan reads one 64 KiB chunk at each and skips the rest."""
    data = tmp_path / "data"
    assert run_cli("generate", data, "--records", "6000", "--value-size", "1000",
                   "--records-per-batch", "1000").returncode == 0
    stats = IOStats()
    log = PartitionLog.open(str(data / "events-0"), stats=stats)
    summary = summarize_partition(log)
    assert summary.batches == 6
    size = sum(s.size for s in log.segments)
    assert stats.bytes_read < size / 10, (stats.bytes_read, size)
    deep = IOStats()
    assert summarize_partition(PartitionLog.open(str(data / "events-0"), stats=deep),
                               deep=True).records == 6000
    assert deep.bytes_read >= size
