"""`segmentlog generate`: deterministic synthetic logs that verify, kafka-python and Kafka's own
Java reader all accept."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from kafka.partitioner.default import murmur2
from kafka.record import MemoryRecords

from segmentlog_source.cli.generate import generate_log
from segmentlog_source.cli.verify import verify_partition
from tests.cli.helpers import dump, run_cli
from tests.conftest import shared_dir


def _files(root: Path) -> dict[str, bytes]:
    return {str(f.relative_to(root)): f.read_bytes()
            for f in sorted(root.rglob("*")) if f.is_file()}


def _batches(partition: Path):
    """Every batch of the partition's segments, as kafka-python decodes them."""
    for log in sorted(partition.glob("*.log")):
        records = MemoryRecords(log.read_bytes())
        while (batch := records.next_batch()) is not None:
            yield batch


def _data_records(partition: Path) -> list:
    return [r for b in _batches(partition) if not b.is_control_batch for r in b]


def test_same_seed_same_bytes(tmp_path):
    options = dict(topics=["a", "b"], partitions=3, records=2000, codec="gzip", headers=1,
                   timestamp_jitter_ms=50, segment_bytes=60_000, transactions=True, seed=7)
    generate_log(str(tmp_path / "one"), **options)
    generate_log(str(tmp_path / "two"), **options)
    assert _files(tmp_path / "one") == _files(tmp_path / "two")
    generate_log(str(tmp_path / "three"), **(options | {"seed": 8}))
    assert _files(tmp_path / "one") != _files(tmp_path / "three")


VARIANTS = {
    "none": dict(codec="none"),
    "gzip-headers": dict(codec="gzip", headers=3),
    "snappy-jitter": dict(codec="snappy", timestamp_jitter_ms=500),
    "lz4-transactions": dict(codec="lz4", transactions=True),
    "zstd-small-segments": dict(codec="zstd", segment_bytes=20_000, records_per_batch=7),
    "keyless-empty-values": dict(key_size=0, value_size=0, transactions=True),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_generated_logs_verify_and_decode(name, tmp_path):
    options = dict(topics=["orders", "clicks"], partitions=3, records=1500, value_size=120,
                   records_per_batch=50, seed=1) | VARIANTS[name]
    result = generate_log(str(tmp_path), **options)
    assert result.total_records == 1500 * 2
    for partition_name, count in result.records.items():
        partition = tmp_path / partition_name
        report = verify_partition(str(partition))
        assert report.problems == [], [str(p) for p in report.problems]  # not even warnings
        records = _data_records(partition)
        assert len(records) == count
        assert all(len(r.value) == options["value_size"] for r in records)
        assert all(len(r.headers) == options.get("headers", 0) for r in records)
        batches = [b for b in _batches(partition) if not b.is_control_batch]
        assert all(len(list(b)) <= options["records_per_batch"] for b in batches)
        if options.get("key_size", 16):
            p = int(partition_name.rsplit("-", 1)[1])
            assert all((murmur2(r.key) & 0x7FFFFFFF) % 3 == p for r in records)
        else:
            assert all(r.key is None for r in records)


def test_partitions_of_a_topic_share_its_records(tmp_path):
    result = generate_log(str(tmp_path), topics=["t"], partitions=4, records=5000, seed=2)
    counts = list(result.records.values())
    assert sum(counts) == 5000 and min(counts) > 1000  # murmur2 spreads random keys evenly


def test_timestamps(tmp_path):
    generate_log(str(tmp_path / "plain"), records=300, timestamp_step_ms=10,
                 start_timestamp=1_000_000)
    stamps = [r.timestamp for r in _data_records(tmp_path / "plain" / "events-0")]
    assert stamps == [1_000_000 + 10 * i for i in range(300)]
    generate_log(str(tmp_path / "jitter"), records=300, timestamp_step_ms=10,
                 start_timestamp=1_000_000, timestamp_jitter_ms=40)
    stamps = [r.timestamp for r in _data_records(tmp_path / "jitter" / "events-0")]
    assert all(abs(ts - (1_000_000 + 10 * i)) <= 40 for i, ts in enumerate(stamps))
    assert any(b < a for a, b in zip(stamps, stamps[1:]))  # out of order CreateTime


def test_rolls_and_transactions(tmp_path):
    generate_log(str(tmp_path), records=3000, value_size=100, segment_bytes=50_000,
                 transactions=True, seed=5)
    partition = tmp_path / "events-0"
    logs = sorted(partition.glob("*.log"))
    assert len(logs) > 5 and all(log.stat().st_size <= 50_000 for log in logs)
    assert any(f.stat().st_size for f in partition.glob("*.txnindex"))
    out, _ = dump(*logs, deep_iteration=True)
    assert "endTxnMarker: COMMIT" in out and "endTxnMarker: ABORT" in out
    assert " isTransactional: true " in out and " isTransactional: false " in out


def test_kafka_java_reader_accepts_generated_logs(tmp_path):
    result = generate_log(str(tmp_path), topics=["j"], partitions=2, records=3000, codec="zstd",
                          headers=2, segment_bytes=100_000, transactions=True, seed=9)
    logs = sorted(tmp_path.rglob("*.log"))
    oracle = shared_dir() / "tools" / "kafka-verify" / "verify-log"
    java = subprocess.run([str(oracle), *map(str, logs)], capture_output=True, text=True,
                          timeout=900)
    assert java.returncode == 0, java.stderr
    rows = [line.split("\t") for line in java.stdout.splitlines()]
    data = [r for r in rows if r[6] == "0"]
    assert len(data) == result.total_records
    assert len(rows) == sum(result.log_end_offsets.values())  # markers included
    assert {r[5] for r in data} == {"2"}


def test_console_script(tmp_path):
    result = run_cli("generate", tmp_path, "--topics", "a,b", "--partitions", "2", "--records",
                     "400", "--codec", "lz4", "--transactions")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # no progress bar when stderr is not a terminal
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [f"{tmp_path}/{t}-{p}" for t in "ab"
                                                      for p in (0, 1)]
    assert run_cli("verify", "--strict", tmp_path).returncode == 0


def test_progress_bar_on_request(tmp_path, capsys):
    generate_log(str(tmp_path), records=500, progress=True)
    # drawn with its total, and cleared at the end (leave=False): how far it got before the
    # clear depends on tqdm's refresh interval, so the last percentage is not asserted
    err = capsys.readouterr().err
    assert "generate:" in err and "/500" in err and err.endswith("\r")


@pytest.mark.parametrize("args,message", [
    (["--partitions", "0"], "segmentlog: option --partitions=0: must be between 1 and 10000"),
    (["--partitions", "2000000"], "segmentlog: option --partitions=2000000: must be between"),
    (["--value-size", str(2**40)], "segmentlog: option --value-size=1099511627776: must be"),
    (["--records-per-batch", "0"], "segmentlog: option --records-per-batch=0: must be between"),
    (["--topics", "no spaces"],
     "segmentlog: option --topics='no spaces': not a legal Kafka topic name"),
    (["--topics", "a,a"], "segmentlog: option --topics='a,a': give distinct topic names"),
    (["--segment-bytes", "10"], "segmentlog: option --segment-bytes=10: must be between"),
])
def test_bad_options_are_one_line(tmp_path, args, message):
    result = run_cli("generate", tmp_path / "d", *args)
    assert result.returncode == 2
    assert result.stderr.startswith(message) and len(result.stderr.splitlines()) == 1


def test_appends_to_an_existing_data_dir_and_refuses_other_dirs(tmp_path):
    first = generate_log(str(tmp_path / "d"), topics=["t"], records=300, seed=1)
    topic_id = (tmp_path / "d" / "t-0" / "partition.metadata").read_bytes()
    second = generate_log(str(tmp_path / "d"), topics=["t"], records=200, seed=2)
    assert second.log_end_offsets["t-0"] == first.log_end_offsets["t-0"] + 200
    assert (tmp_path / "d" / "t-0" / "partition.metadata").read_bytes() == topic_id
    assert verify_partition(str(tmp_path / "d" / "t-0")).problems == []
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "notes.txt").write_text("not a Kafka data directory")
    result = run_cli("generate", tmp_path / "home")
    assert result.returncode == 2 and "is not a Kafka data directory" in result.stderr
    assert sorted(p.name for p in (tmp_path / "home").iterdir()) == ["notes.txt"]


def test_generate_never_writes_the_metadata_log(tmp_path):
    """`generate --topics __cluster_metadata` is refused: into a data directory holding a
    broker's `__cluster_metadata-0` it used to append records, indexes and snapshots."""
    part = tmp_path / "__cluster_metadata-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(b"")
    result = run_cli("generate", tmp_path, "--topics", "events,__cluster_metadata")
    assert result.returncode != 0
    assert "--topics='__cluster_metadata': KRaft's metadata log" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [part.name]
    assert [p.name for p in part.iterdir()] == ["00000000000000000000.log"]
