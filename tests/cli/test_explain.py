"""`segmentlog explain`: the byte ranges a read would touch, checked against batch positions that
kafka-python reads from the same files (not through segmentlog's indexes or scanner)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kafka.record import MemoryRecords

from segmentlog_source.cli.main import main
from tests.cli.helpers import run_cli

START = 1_700_000_000_000


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """Two topics of two partitions, ~10 segments each, 20-record lz4 batches, out-of-order
    CreateTime (jitter), written by `segmentlog generate`."""
    path = tmp_path_factory.mktemp("explain") / "data"
    result = run_cli("generate", path, "--topics", "orders,clicks", "--partitions", "2",
                     "--records", "20000", "--segment-bytes", "200000", "--records-per-batch",
                     "20", "--timestamp-jitter-ms", "30", "--codec", "lz4")
    assert result.returncode == 0, result.stderr
    return path


def batches_of(partition: Path) -> list[dict]:
    """Every batch of a partition: its file, byte range, offsets and record timestamps."""
    found = []
    for log in sorted(partition.glob("*.log")):
        records, position = MemoryRecords(log.read_bytes()), 0
        while (batch := records.next_batch()) is not None:
            inner = list(batch)
            found.append({"path": str(log), "start": position,
                          "end": position + batch.size_in_bytes,
                          "first": batch.base_offset, "last": batch.last_offset,
                          "records": [(r.offset, r.timestamp) for r in inner]})
            position += batch.size_in_bytes
    return found


def expected_ranges(partition: Path, lo: int, hi: int) -> list[tuple[str, int, int]]:
    """Per segment, from the first batch holding an offset >= lo to the last one holding an
    offset < hi: the byte range the executors must read, and no more."""
    ranges: dict[str, list[int]] = {}
    for b in batches_of(partition):
        if b["last"] >= lo and b["first"] < hi:
            span = ranges.setdefault(b["path"], [b["start"], b["end"]])
            span[1] = b["end"]
    return [(path, start, end) for path, (start, end) in ranges.items()]


def explain_json(capsys, data: Path, *args) -> dict:
    assert main(["explain", str(data), "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def log_bytes(data: Path) -> int:
    return sum(f.stat().st_size for f in data.glob("*/*.log"))


def test_offset_options_touch_exactly_the_batches_holding_them(data, capsys):
    plan = explain_json(capsys, data, "--option", "subscribe=orders",
                        "--option", 'startingOffsets={"orders":{"0":2500,"1":-2}}',
                        "--option", 'endingOffsets={"orders":{"0":5200,"1":40}}')
    got = [(r["path"], r["start"], r["end"]) for r in plan["ranges"]]
    want = (expected_ranges(data / "orders-0", 2500, 5200)
            + expected_ranges(data / "orders-1", 0, 40))
    assert got == [(str(Path(p)), s, e) for p, s, e in want]
    assert len({r["path"] for r in plan["ranges"]}) == 3   # a range crosses a segment roll
    assert plan["bytes"] == sum(e - s for _, s, e in want)
    assert plan["logBytes"] == log_bytes(data)
    assert plan["share"] == pytest.approx(plan["bytes"] / log_bytes(data))
    assert plan["share"] < 0.1
    assert [(r["offsetLo"], r["offsetHi"]) for r in plan["ranges"]] == \
        [(2500, 5200)] * 2 + [(0, 40)]
    # planned from indexes and headers: a sliver of what it reads, and far less than the log
    assert 0 < plan["plannerBytesRead"] < plan["bytes"] / 10


def test_timestamp_options_follow_list_offsets(data, capsys):
    """startingTimestamp / endingTimestamp: per partition, the first offset whose record
    timestamp is >= each (Kafka's ListOffsets, out-of-order timestamps and all)."""
    t0, t1 = START + 12_000, START + 12_500
    plan = explain_json(capsys, data, "--option", f"startingTimestamp={t0}",
                        "--option", f"endingTimestamp={t1}")
    want = []
    for partition in sorted(data.iterdir()):
        records = [r for b in batches_of(partition) for r in b["records"]]
        lo = next(o for o, ts in records if ts >= t0)
        hi = next(o for o, ts in records if ts >= t1)
        want += [(p, s, e, lo, hi) for p, s, e in expected_ranges(partition, lo, hi)]
    got = [(r["path"], r["start"], r["end"], r["offsetLo"], r["offsetHi"])
           for r in plan["ranges"]]
    assert got == [(str(Path(p)), s, e, lo, hi) for p, s, e, lo, hi in want]
    assert plan["share"] < 0.05


def test_where_with_pushdown_plans_as_the_options_do(data, capsys):
    options = explain_json(capsys, data, "--option", 'assign={"orders":[1]}',
                           "--option", 'startingOffsets={"orders":{"1":700}}',
                           "--option", 'endingOffsets={"orders":{"1":9100}}')
    where = explain_json(capsys, data, "--option", "pushdown=true", "--where",
                         "topic = 'orders' AND partition = 1 AND offset >= 700 AND offset < 9100")
    assert where["ranges"] == options["ranges"] and where["ranges"]
    assert where["pushdown"] and where["pushdownBytes"] is None
    assert where["bytes"] == sum(e - s for _, s, e in
                                 expected_ranges(data / "orders-1", 700, 9100))


def test_where_without_pushdown_is_left_to_spark(data, capsys):
    """As in Spark: without pushdown the reader reads the options' range, and the note says
    what pushdown would read."""
    where = "offset BETWEEN 100 AND 199 AND key = 'k1'"
    full = explain_json(capsys, data)
    plain = explain_json(capsys, data, "--where", where)
    pushed = explain_json(capsys, data, "--where", where, "--option", "pushdown=true")
    assert plain["ranges"] == full["ranges"] and plain["bytes"] == log_bytes(data)
    assert plain["pushdownBytes"] == pushed["bytes"]
    assert pushed["bytes"] == sum(e - s for partition in sorted(data.iterdir())
                                  for _, s, e in expected_ranges(partition, 100, 200))
    assert plain["keptBySpark"] == pushed["keptBySpark"] == ["key = 'k1'"]
    assert main(["explain", str(data), "--where", where]) == 0
    text = capsys.readouterr().out
    assert f"with --option pushdown=true it would read {pushed['bytes']:,} bytes" in text
    assert "note: \"key = 'k1'\" is left to Spark" in text


def test_a_timestamp_lower_bound_never_skips_a_matching_row(data, capsys):
    """The time index can only cut whole index intervals (timestamps are out of order): the
    pushdown plan may read more than the matching batches, never less."""
    moment = START + 17_000
    plan = explain_json(capsys, data, "--option", "pushdown=true",
                        "--where", "timestamp >= TIMESTAMP '2023-11-14 22:13:37'")
    assert plan["bytes"] < log_bytes(data) / 2
    for partition in sorted(data.iterdir()):
        ranges = [(r["start"], r["end"]) for r in plan["ranges"]
                  if r["path"].startswith(str(partition) + "/")]
        for b in batches_of(partition):
            if any(ts >= moment for _, ts in b["records"]):
                same = [r for r in plan["ranges"] if r["path"] == str(Path(b["path"]))]
                assert any(r["start"] <= b["start"] and b["end"] <= r["end"] for r in same), \
                    (b["path"], b["start"], ranges)


def test_the_text(data):
    result = run_cli("explain", data, "--option", "subscribe=clicks",
                     "--option", 'endingOffsets={"clicks":{"0":30,"1":30}}')
    assert result.returncode == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["partition", "segment", "from", "byte", "to", "byte", "bytes",
                                "offsets", "kept", "task"]
    rows = [line.split() for line in lines[1:3]]
    want = [expected_ranges(data / f"clicks-{p}", 0, 30)[0] for p in (0, 1)]
    assert rows == [[f"clicks-{p}", "00000000000000000000.log", "0", f"{e:,}", f"{e:,}",
                     "0..29", "0"] for p, (_, _, e) in enumerate(want)]
    total = sum(e for _, _, e in want)
    share = f"{100 * total / log_bytes(data):.1f}%"
    assert lines[3] == (f"reads {total:,} of {log_bytes(data):,} bytes ({share} of the log): "
                        "2 byte ranges in 2 segments of 2 partitions, in 1 Spark task")
    assert lines[4].startswith("planning read ") and lines[4].endswith(", and no record")


def test_contradictory_where_reads_nothing(data, capsys):
    plan = explain_json(capsys, data, "--option", "pushdown=true",
                        "--where", "offset > 10 AND offset < 5")
    assert plan["ranges"] == [] and plan["bytes"] == 0 and plan["tasks"] == 0


# -- a segment without index files (issue #35) --------------------------------------------------

INDEXLESS = ("kafka-real", "suryavansh-food-ordering", "_confluent-metrics-4")   # 150,125 bytes


@pytest.mark.parametrize("options", [
    ["startingTimestamp=1714213000000", "endingTimestamp=1714214000000"],   # 1,000 s
    ["startingTimestamp=1714208944622"],
    ["startingOffsets={\"_confluent-metrics\":{\"4\":100}}",
     "endingOffsets={\"_confluent-metrics\":{\"4\":200}}"],
    ["endingTimestamp=1714227038861"],
])
def test_planning_without_index_files_reads_each_byte_at_most_once(options):
    from tests.conftest import shared_fixture
    partition = shared_fixture(*INDEXLESS)
    assert not list(partition.glob("*.index")) and not list(partition.glob("*.timeindex"))
    args = ["explain", partition, "--json"]
    for option in options:
        args += ["--option", option]
    result = run_cli(*args)
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    log_bytes = (partition / "00000000000000000000.log").stat().st_size
    assert plan["logBytes"] == log_bytes
    assert 0 < plan["plannerBytesRead"] <= log_bytes    # 170,554 bytes in 109 requests before
    assert plan["ranges"]


def test_the_metadata_log_is_explained_as_spark_reads_it(tmp_path, capsys):
    """A `__cluster_metadata-0` directory: explained with valueFormat=kafka-internal, the
    only read Spark allows of it (it used to fail, "no Kafka partition directories"), and
    refused without it, as the read is."""
    from tests.values import metadata_samples as ms
    from tests.values.test_cluster_metadata import write_log

    part = tmp_path / "__cluster_metadata-0"
    log = write_log(part / "00000000000000000000.log", ms.secret_records())
    out = explain_json(capsys, part, "--option", "valueFormat=kafka-internal")
    assert [(r["topic"], r["start"], r["end"]) for r in out["ranges"]] == [
        ("__cluster_metadata", 0, log.stat().st_size)]
    assert main(["explain", str(part)]) == 2
    assert "read only with valueFormat=kafka-internal" in capsys.readouterr().err
