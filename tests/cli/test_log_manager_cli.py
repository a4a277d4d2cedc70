"""`segmentlog config`, `retain` and `compact` as a user runs them: the console script, its
tables, and one clear line (exit 2) for every bad input, with nothing touched."""

from __future__ import annotations

import pytest

from segmentlog_source.cli.generate import generate_log
from segmentlog_source.storage.log.checkpoints import read_offset_checkpoint
from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.cli.helpers import run_cli


@pytest.fixture
def data(tmp_path):
    """Two topics, two partitions each, 30 keys, several segments, transactions."""
    generate_log(str(tmp_path / "d"), topics=["orders", "events"], partitions=2, records=3000,
                 key_size=3, value_size=40, segment_bytes=20_000, transactions=True, seed=3)
    return tmp_path / "d"


def files(path):
    return {f.relative_to(path): f.read_bytes() for f in sorted(path.rglob("*")) if f.is_file()
            and f.name != ".segmentlog.lock"}


def test_config_sets_shows_and_deletes(data):
    done = run_cli("config", data, "--topic", "orders", "--set", "cleanup.policy=compact",
                   "--set", "delete.retention.ms=0")
    assert done.returncode == 0, done.stderr
    lines = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines()[2:]}
    assert lines["cleanup.policy"] == ["compact", "file"]
    assert lines["retention.ms"] == ["604800000", "default"]
    done = run_cli("config", data, "--topic", "orders", "--delete", "delete.retention.ms")
    assert "delete.retention.ms        86400000" in done.stdout
    text = (data / "_segmentlog" / "topic-configs" / "orders.properties").read_text()
    assert "cleanup.policy=compact" in text and "delete.retention" not in text


def test_compact_compacts_the_compacted_topics_only(data):
    run_cli("config", data, "--topic", "orders", "--set", "cleanup.policy=compact")
    before = files(data / "events-0")
    done = run_cli("compact", data)
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line for line in done.stdout.splitlines()[1:]}
    assert "skipped (cleanup.policy=delete)" in rows["events-0"]
    assert files(data / "events-0") == before
    cleaner = read_offset_checkpoint(str(data / "cleaner-offset-checkpoint"))
    assert set(cleaner) == {("orders", 0), ("orders", 1)}
    for p in (0, 1):
        log = PartitionLog.open(str(data / f"orders-{p}"))
        assert cleaner[("orders", p)] == log.segments[-1].base_offset   # the active one waits
    verified = run_cli("verify", data)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_retain_reports_what_went(data):
    done = run_cli("retain", data, "--topic", "events", "--retention-bytes", "30000",
                   "--retention-ms", "-1")
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.split()[:3] == ["partition", "segments", "deleted"]
    assert [r.split()[0] for r in rows] == ["events-0", "events-1"]
    for row in rows:
        name, deleted = row.split()[0], int(row.split()[1])
        log = PartitionLog.open(str(data / name))
        assert deleted > 0 and log.log_start_offset == log.segments[0].base_offset > 0
        assert sum(s.size for s in log.segments) < 30000 + 20000


@pytest.mark.parametrize("args, names", [
    (["retain", "{d}", "--config", "retention.ms"], "--config"),
    (["retain", "{d}", "--config", "retention.days=3"], "retention.days"),
    (["retain", "{d}", "--retention-ms", "-5"], "retention.ms"),
    (["compact", "{d}", "--topic", "orders"], "cleanup.policy"),
    (["compact", "{d}", "--topic", "nope"], "nope"),
    (["compact", "{d}", "--dedupe-buffer-bytes", "10"], "dedupe_buffer_bytes"),
    (["config", "{d}", "--topic", "orders", "--set", "segment.bytes=2"], "segment.bytes"),
    (["compact", "s3://bucket/d"], "s3://bucket/d"),
])
def test_bad_input_is_one_line_and_touches_nothing(data, args, names):
    before = files(data)
    done = run_cli(*[a.format(d=data) for a in args])
    assert done.returncode == 2, done.stdout + done.stderr
    first = done.stderr.splitlines()[0]
    assert first.startswith("segmentlog: ") and names in first, first
    assert "Traceback" not in done.stderr
    assert files(data) == before


def test_a_partition_a_writer_holds(data):
    before = files(data / "events-1")
    with PartitionLog.open_for_append(str(data / "events-1")):
        done = run_cli("retain", data, "--topic", "events", "--retention-ms", "1",
                       "--lock-timeout-ms", "0")
    assert done.returncode == 2
    assert "events-1" in done.stderr and "locked" in done.stderr
    assert files(data / "events-1") == before
