"""A new user's first hour (issue #35): what `show(5)` prints besides its rows, the bytes a read
plans and reads seen from Python, and timestamps a person can type."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import segmentlog_source
from segmentlog_source.cli.generate import generate_log
from tests.conftest import read_segmentlog as read, shared_fixture

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def big_log(tmp_path_factory) -> Path:
    """One partition of ~65 MB: more than a task hands over before show(5) has its rows."""
    path = tmp_path_factory.mktemp("first-hour") / "logs"
    generate_log(str(path), topics=["t"], partitions=1, records=300_000, value_size=200, seed=7)
    return path


# PySpark's daemon (pyspark/daemon.py, worker()) flushes a task's output after the task; when
# the JVM has stopped reading (show(5) had its rows), that flush fails and the daemon prints
# the BrokenPipeError. The rows are right and the query succeeds; docs/troubleshooting.md says
# so. This is the only Python traceback such a read may print.
DAEMON_BROKEN_PIPE = re.compile(
    r"Traceback \(most recent call last\):\n"
    r"(  File \"[^\"]*pyspark/daemon\.py\", line \d+, in (manager|worker)\n)+"
    r"BrokenPipeError: \[Errno 32\] Broken pipe\n")


def test_show_and_limit_print_their_rows_and_at_most_pysparks_broken_pipe(big_log):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-m", "tests.spark.show_child", str(big_log)],
                            capture_output=True, text=True, cwd=REPO, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "\n".join(line for line in out.splitlines() if line.startswith("|")) == "\n".join([
        "|topic|partition|offset|",
        *(f"|    t|        0|     {i}|" for i in range(5))])
    assert "collected offsets [0, 1, 2, 3, 4]" in out
    everything = result.stdout + result.stderr
    rest = DAEMON_BROKEN_PIPE.sub("", everything)
    assert "Traceback" not in rest and "Error" not in rest, rest[-3000:]
    assert "segmentlog_source" not in DAEMON_BROKEN_PIPE.sub("", result.stderr)


# -- the bytes a read plans and reads, from Python ---------------------------------------------

SOURCE = ("kafka-real", "suryavansh-food-ordering", "_confluent-metrics-4")
OPTIONS = {"startingTimestamp": "2024-04-27T09:30:00Z", "endingTimestamp": "2024-04-27T09:50:00Z"}


def test_a_read_planned_and_read_bytes_seen_from_python(spark):
    path = shared_fixture(*SOURCE)
    plan = segmentlog_source.explain(path, **OPTIONS)     # before: what the read will touch
    assert plan.bytes == 2505 and [(r["offsetLo"], r["offsetHi"]) for r in plan.ranges] == \
        [(30, 45)]
    assert "reads 2,505 of 150,125 bytes" in str(plan)
    spark.conf.set("spark.sql.pyspark.worker.logging.enabled", "true")
    try:
        rows = read(spark, path, **OPTIONS).select("offset").collect()
        lines = [r.msg for r in segmentlog_source.logs(spark).collect()]
    finally:
        spark.conf.unset("spark.sql.pyspark.worker.logging.enabled")
    assert sorted(r.offset for r in rows) == list(range(30, 45))
    # after: the plan's line and each task's, in the session's worker logs
    # (the session's worker logs hold every read's lines, in no set order: this read's among them)
    planned = [m for m in lines if m.startswith("segmentlog: planned ")]
    assert [m for m in planned if "2505 bytes of" in m], lines
    tasks = [re.match(r"segmentlog: task read (\d+) bytes in \d+ requests \((\d+) planned\)", m)
             for m in lines]
    tasks = [m for m in tasks if m and m.group(2) == "2505"]
    assert tasks, lines
    assert 2505 <= int(tasks[-1].group(1)) <= 150_125


# -- timestamps a person can type ----------------------------------------------------------------

@pytest.mark.parametrize("iso, ms", [
    ("2024-04-27T09:30:00Z", 1714210200000),
    ("2024-04-27T11:30:00+02:00", 1714210200000),
    ("2024-04-27T09:50:00.500Z", 1714211400500),
])
def test_iso_timestamps_give_the_rows_of_their_milliseconds(spark, iso, ms):
    path = shared_fixture(*SOURCE)
    by_ms = read(spark, path, startingTimestamp=str(ms)).select("offset").collect()
    by_iso = read(spark, path, startingTimestamp=iso).select("offset").collect()
    assert by_iso == by_ms and by_ms
    topic = '{"_confluent-metrics":{"4":"%s"}}'
    by_map = read(spark, path, endingOffsetsByTimestamp=topic % iso).select("offset").collect()
    by_map_ms = read(spark, path, endingOffsetsByTimestamp=topic.replace('"%s"', "%s") % ms
                     ).select("offset").collect()
    assert by_map == by_map_ms and by_map
