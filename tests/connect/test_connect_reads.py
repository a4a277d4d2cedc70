"""spark.read.format("segmentlog") from a Spark Connect client: the server finds the source by
itself (discovery of pyspark_segmentlog by the server's Python), register() from the client
works too, and records, views, ranges, decoded values and a remote tier read over Connect give
the rows the same read gives in this process (the scan run in-process, no Spark). The CLI's
`segmentlog explain` plans the read that a Connect client's DataFrame runs."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

import segmentlog_source
from segmentlog_source.cli.generate import generate_log
from tests.cli.helpers import run_cli
from tests.conftest import read_segmentlog, shared_fixture
from tests.connect.conftest import client_session
from tests.spark.test_view_damage import view_rows
from tests.values.logs import write_partition

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("connect")]

BROKER = shared_fixture("kafka-real", "agelenler-broker-2")   # 43 records a broker wrote
AIVEN = Path(__file__).resolve().parents[1] / "fixtures" / "tiered" / "aiven" / "plain"
START = 1_700_000_000_000


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory) -> Path:
    """Two partitions of several segments, 20-record batches, no transactions (so the offsets a
    read keeps are contiguous and explain's ranges count them)."""
    path = tmp_path_factory.mktemp("connect-reads")
    generate_log(str(path), topics=["t"], partitions=2, records=3000, codec="lz4",
                 value_size=40, key_size=6, records_per_batch=20, segment_bytes=16 * 1024,
                 timestamp_step_ms=10, seed=3, start_timestamp=START)
    return path


def _plain(row: dict) -> tuple:
    """A row with its timestamp as Kafka's milliseconds (Spark's are naive UTC times here, the
    in-process scan's aware ones)."""
    return tuple(round(v.replace(tzinfo=dt.timezone.utc).timestamp() * 1000)
                 if isinstance(v, dt.datetime) else v for v in row.values())


def assert_same_rows(df, path: Path, view: str = "records", **options) -> int:
    over_connect = sorted((_plain(r.asDict()) for r in df.collect()), key=repr)
    in_process = sorted((_plain(r) for r in view_rows(path, view, **options)), key=repr)
    assert over_connect == in_process
    return len(over_connect)


def test_found_on_the_server_without_register_and_register_from_the_client(connect,
                                                                          connect_server):
    fresh = client_session(connect_server)   # a server session nobody registered anything in
    try:
        assert fresh.read.format("segmentlog").load(str(BROKER)).count() == 43
        source = segmentlog_source.register(fresh)   # the fallback: pickled to the server
        assert source.name() == "segmentlog"
        assert fresh.read.format("segmentlog").load(str(BROKER)).count() == 43
        pushdown = segmentlog_source.register(fresh, pushdown=True)   # sets the session's conf
        assert pushdown.pushdown_default
        assert fresh.conf.get("spark.sql.python.filterPushdown.enabled") == "true"
        df = fresh.read.format("segmentlog").load(str(BROKER))
        assert df.where("offset = 0").count() == df.where("offset = 0").count() > 0
    finally:
        fresh.stop()


def test_records_of_a_broker_written_log(connect):
    assert assert_same_rows(read_segmentlog(connect, BROKER, includeHeaders="true"), BROKER,
                            includeHeaders="true") == 43


def test_batches_and_segments_views(connect, log_dir):
    for view in ("batches", "segments"):
        assert assert_same_rows(read_segmentlog(connect, log_dir, view=view), log_dir,
                                view) > 2


def test_offset_and_timestamp_ranges(connect, log_dir):
    offsets = dict(startingOffsets=json.dumps({"t": {"0": 100, "1": -2}}),
                   endingOffsets=json.dumps({"t": {"0": 900, "1": 40}}))
    assert assert_same_rows(read_segmentlog(connect, log_dir, **offsets), log_dir,
                            **offsets) == 800 + 40
    times = dict(startingTimestamp=str(START + 5_000), endingTimestamp=str(START + 9_000))
    assert assert_same_rows(read_segmentlog(connect, log_dir, **times), log_dir, **times) > 0


def test_json_values_decoded_on_the_server(connect, tmp_path):
    write_partition(tmp_path, "j", [(b"k1", b'{"id": 1, "name": "a"}'), (b"k2", b"not json")])
    rows = (read_segmentlog(connect, tmp_path, keyFormat="string", valueFormat="json",
                            valueSchema="id BIGINT, name STRING")
            .orderBy("offset").collect())
    assert [r.key_decoded for r in rows] == ["k1", "k2"]
    assert (rows[0].value_decoded.id, rows[0].value_decoded.name) == (1, "a")
    assert rows[1].value_decoded is None and "not JSON" in rows[1].value_error


def test_a_remote_tier_reads_as_the_brokers_local_segments(connect):
    remote = read_segmentlog(connect, AIVEN / "remote", isolationLevel="read_committed")
    local = read_segmentlog(connect, AIVEN / "local", isolationLevel="read_committed")
    rows = sorted(remote.collect(), key=repr)
    assert len(rows) > 500 and rows == sorted(local.collect(), key=repr)


def test_explain_plans_the_read_a_connect_client_runs(connect, log_dir, capsys):
    pairs = ["startingOffsets=" + json.dumps({"t": {"0": 250, "1": 1200}}),
             "endingOffsets=" + json.dumps({"t": {"0": 1400, "1": -1}})]
    result = run_cli("explain", log_dir, *[a for p in pairs for a in ("--option", p)], "--json")
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)
    options = dict(p.split("=", 1) for p in pairs)
    from pyspark.sql import functions as F

    df = read_segmentlog(connect, log_dir, **options)
    df.explain()
    assert "BatchScan segmentlog" in capsys.readouterr().out
    rows = df.select("partition", "offset", F.spark_partition_id().alias("task")).collect()
    kept = {}
    for r in plan["ranges"]:
        kept.setdefault(r["partition"], set()).update(range(r["offsetLo"], r["offsetHi"]))
    read = {}
    for r in rows:
        read.setdefault(r.partition, set()).add(r.offset)
    assert read == kept and len(rows) == sum(len(v) for v in kept.values())
    assert len({r.task for r in rows}) == plan["tasks"]
