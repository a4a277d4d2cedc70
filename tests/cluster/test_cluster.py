"""segmentlog on a real multi-process Spark cluster: a standalone master and two workers
(devtools.local_cluster), a driver in a subprocess (cluster_job.py), executors that are JVMs
of their own. What a user would check: reads (with WHERE pushdown) give the rows a local[2]
session gives, from a local directory and from an S3 copy (conftest's `s3` server); df.write
copies a log exactly; a streaming write commits every row once.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from segmentlog_source.cli.generate import generate_log
from segmentlog_source.devtools.local_cluster import LocalCluster, require_java
from tests.cluster import cluster_job
from tests.spark import stream_query as sq
from tests.storage.written_logs import assert_valid_log

# One xdist group: the tests share one cluster run (the module's `job`); `--dist loadgroup`
# keeps them on one worker only if they are in one group, otherwise each worker starts a cluster.
pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("cluster")]
REPO = Path(__file__).resolve().parents[2]
JOB_TIMEOUT_S = 240


@pytest.fixture(scope="session", autouse=True)
def java():
    """Before the session fixture starts a JVM: a missing Java fails here, by name."""
    require_java()


@pytest.fixture(scope="module")
def input_log(tmp_path_factory) -> tuple[Path, int]:
    """Two topics of three partitions (lz4 and uncompressed), several segments each, headers,
    out-of-order CreateTime timestamps. Returns the directory and its record count."""
    path = tmp_path_factory.mktemp("cluster-input") / "logs"
    records = 0
    for seed, (topic, codec) in enumerate((("orders", "lz4"), ("clicks", "none"))):
        generated = generate_log(str(path), topics=[topic], partitions=3, records=3000,
                                 codec=codec, value_size=100, key_size=12, headers=1,
                                 records_per_batch=50, segment_bytes=64 * 1024,
                                 start_timestamp=cluster_job.START, timestamp_step_ms=1,
                                 timestamp_jitter_ms=200, seed=seed)
        records += sum(generated.records.values())
    return path, records


@pytest.fixture(scope="module")
def reference(spark, input_log) -> dict:
    """The same queries on the local[2] session, WHERE clauses applied by Spark."""
    return cluster_job.read_results(spark, str(input_log[0]), {}, pushdown=False)


@pytest.fixture(scope="module")
def job(input_log, s3, tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("cluster")
    logs, work = base / "logs", base / "work"
    logs.mkdir()
    work.mkdir()
    s3.create_bucket("cluster")
    s3.upload_tree(input_log[0], "s3://cluster/logs")
    read_paths = [str(input_log[0]), "s3://cluster/logs"]
    with LocalCluster(logs) as cluster:
        command = [sys.executable, "-m", "tests.cluster.cluster_job",
                   "--master", cluster.master_url, "--work", str(work),
                   "--storage-options", json.dumps(s3.storage_options)]
        for path in read_paths:
            command += ["--read-path", path]
        child = subprocess.run(command, cwd=REPO, capture_output=True, text=True,
                               timeout=JOB_TIMEOUT_S)
        assert child.returncode == 0, (f"the cluster job failed (daemon and executor logs in "
                                       f"{logs}):\n{child.stderr[-4000:]}")
        apps = cluster.status()["completedapps"]
    result = json.loads(child.stdout.splitlines()[-1])
    print("cluster job phases (s):", result["seconds"])
    return {**result, "work": work, "logs": logs, "read_paths": read_paths, "apps": apps}


def test_tasks_run_in_two_executor_jvms_apart_from_the_driver(job):
    tasks, driver = job["tasks"], job["driver"]
    assert {t["executor_id"] for t in tasks} == {"0", "1"}, tasks
    assert len({t["jvm_pid"] for t in tasks}) == 2, tasks
    assert driver["jvm_pid"] not in {t["jvm_pid"] for t in tasks}
    assert driver["python_pid"] not in {t["python_pid"] for t in tasks}
    # each worker launched one executor for the job, and the master saw the job finish
    for n in (1, 2):
        assert len(list((job["logs"] / f"work-{n}").glob("app-*/*/stderr"))) == 1
    assert [(a["name"], a["state"], a["cores"]) for a in job["apps"]] == \
        [("segmentlog-cluster-job", "FINISHED", 2)]


def test_reads_with_pushdown_equal_a_local_reference(job, reference, input_log):
    assert reference["full"]["rows"] == input_log[1]
    for name in cluster_job.WHERES:
        assert 0 < reference[name]["rows"] < input_log[1], name   # each query selects some
    assert job["read_paths"] == list(job["reads"])
    for path, results in job["reads"].items():
        for name, summary in results.items():
            assert summary == reference[name], f"{path}: {name}"


def test_a_batch_write_reads_back_exactly(job, reference):
    # the same rows at the same offsets: every partition was copied by one task, in order
    assert job["copy"] == reference["full"]
    assert_valid_log(job["work"] / "copy")


def test_a_streaming_write_commits_every_row_once(job):
    out = job["work"] / "stream" / "out"
    per_file = cluster_job.STREAM_ROWS_PER_FILE
    totals = []
    for run in job["stream"]:
        ids = {int(p): values for p, values in run["ids"].items()}
        for p, offsets in run["offsets"].items():
            assert offsets == list(range(len(offsets))), f"partition {p}"
        assert sq.check_prefix(ids, run["input_files"] * per_file) == \
            run["input_files"] * per_file
        totals.append(sum(len(v) for v in ids.values()))
    files = (cluster_job.STREAM_FIRST_RUN, cluster_job.STREAM_FILES, cluster_job.STREAM_FILES)
    assert totals == [n * per_file for n in files]   # the rerun added nothing
    # kafka-python, the independent decoder, reads the same ids
    assert sq.logged_ids(out) == {int(p): v for p, v in job["stream"][-1]["ids"].items()}
