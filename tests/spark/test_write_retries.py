"""Failed and retried tasks (a local[2,3] session in a subprocess): no duplicate, no orphan
staging left after the commit, and an aborted job leaves nothing visible."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.spark.retry_child import ROWS
from tests.storage.written_logs import assert_valid_log, kafka_python_rows

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[2]


def test_a_retried_task_commits_once_and_an_aborted_job_leaves_nothing(tmp_path):
    out = tmp_path / "data"
    child = subprocess.run([sys.executable, "-m", "tests.spark.retry_child", str(out)],
                           cwd=REPO, capture_output=True, text=True, timeout=600)
    assert child.returncode == 0, child.stderr[-3000:]
    outcome = [line.split()[:2] for line in child.stdout.splitlines()]
    assert outcome == [["retried", "committed"], ["aborted", "failed"]], child.stdout
    # the failed first attempt had staged a file before failing: an orphan for the commit
    assert (tmp_path / "orphan-seen").exists()
    values = [row[4] for row in kafka_python_rows(out / "retried-0")]
    ids = Counter(int(v.rsplit(b"-", 1)[1]) for v in values)
    assert ids == Counter(range(ROWS))  # every row once: the orphan was never published
    assert sorted(p.name for p in out.iterdir()) == [
        ".lock", "recovery-point-offset-checkpoint", "retried-0"]
    assert_valid_log(out)
