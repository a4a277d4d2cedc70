"""examples/pipelines with the real `spark-pipelines` command (Spark Declarative Pipelines):
the streaming table holds each record of the log once, decoded, after a first run, and after a
second run over the grown log (the stream resumes from its checkpoint in the spec's storage).

`spark-pipelines run` starts a Spark Connect server in the JVM that spark-submit starts for it
(`--remote local`, its default), and the server finds format("segmentlog") by discovery: the
JVM runs PYSPARK_DRIVER_PYTHON (else PYSPARK_PYTHON), this interpreter, to look for pyspark_*
modules."""

from __future__ import annotations

import decimal
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from segmentlog_source.devtools.local_cluster import HOST, parent_death_signal
from tests.conftest import REPO
from tests.values.logs import write_partition

pytestmark = [pytest.mark.spark, pytest.mark.slow]

EXAMPLE = REPO / "examples" / "pipelines"
STORAGE_LINE = "storage: file:///tmp/segmentlog-orders-pipeline"


def orders(partition: int, count: int) -> list[tuple[bytes, bytes]]:
    return [(f"c{i % 5}".encode(),
             json.dumps({"id": partition * 10_000 + i, "customer": f"c{i % 5}",
                         "amount": f"{i}.25"}).encode()) for i in range(count)]


def run_pipeline(project: Path) -> str:
    """`spark-pipelines run` in `project`; its output. Everything it started is killed after."""
    command = [str(Path(sys.executable).parent / "spark-pipelines"),
               "--conf", "spark.sql.catalogImplementation=hive", "run"]
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE")}
    env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP=HOST)
    proc = subprocess.Popen(command, cwd=project, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, preexec_fn=parent_death_signal())
    try:
        out, _ = proc.communicate(timeout=600)
    finally:
        try:   # its JVM's Python processes, should any outlive it
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    assert proc.returncode == 0, out[-4000:]
    assert "Run is COMPLETED" in out, out[-4000:]
    return out


def table_rows(project: Path) -> list[dict]:
    """The `orders` table's rows, read from its Parquet files (not through Spark)."""
    return ds.dataset(project / "spark-warehouse" / "orders", format="parquet").to_table() \
        .to_pylist()


def check(rows: list[dict], logged: dict[int, list[tuple[bytes, bytes]]]) -> None:
    assert len(rows) == sum(len(v) for v in logged.values())
    assert len({(r["partition"], r["offset"]) for r in rows}) == len(rows)   # no duplicates
    for r in rows:
        value = json.loads(logged[r["partition"]][r["offset"]][1])
        assert (r["id"], r["customer"], r["amount"], r["value_error"]) == \
            (value["id"], value["customer"], decimal.Decimal(value["amount"]), None)


def test_the_example_pipeline_run_twice_holds_each_record_once(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project)
    spec = project / "spark-pipeline.yml"
    text = spec.read_text()
    assert STORAGE_LINE in text
    spec.write_text(text.replace(STORAGE_LINE, f"storage: {(tmp_path / 'storage').as_uri()}"))
    logged = {0: orders(0, 120), 1: orders(1, 80)}
    for partition, records in logged.items():
        write_partition(project / "data", "orders", records, partition=partition)

    run_pipeline(project)
    check(table_rows(project), logged)

    logged[0] = orders(0, 150)       # the log grew: 30 more records in partition 0
    write_partition(project / "data", "orders", logged[0], partition=0)
    run_pipeline(project)
    check(table_rows(project), logged)
