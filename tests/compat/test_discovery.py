"""The discovery shim (pyspark_segmentlog.py) on every supported PySpark: it imports, and when
segmentlog cannot be imported, Spark still finds the other sources and a warning says why."""

from __future__ import annotations

import os
from pathlib import Path
import subprocess
import sys

import pytest

REPO = Path(__file__).resolve().parents[2]

PROBE = '''
from pyspark.sql.datasource import DataSource, DataSourceReader


class Reader(DataSourceReader):
    def read(self, partition):
        yield (1,)


class DefaultSource(DataSource):
    @classmethod
    def name(cls):
        return "compatprobe"

    def schema(self):
        return "n int"

    def reader(self, schema):
        return Reader()
'''


def test_shim_offers_the_source_on_this_pyspark():
    import pyspark_segmentlog
    from segmentlog_source.spark.source import SegmentLogDataSource

    assert pyspark_segmentlog.DefaultSource is SegmentLogDataSource


def _broken_path(tmp_path: Path) -> dict:
    broken = tmp_path / "segmentlog_source"
    broken.mkdir()
    (broken / "__init__.py").write_text('raise ImportError("compat probe: broken on purpose")\n')
    (tmp_path / "pyspark_compatprobe.py").write_text(PROBE)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(REPO)])
    return env


def test_a_failed_import_is_logged_not_hidden(tmp_path):
    env = _broken_path(tmp_path)
    out = subprocess.run([sys.executable, "-c", "import pyspark_segmentlog as m; "
                          "print(hasattr(m, 'DefaultSource'))"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
    assert ("segmentlog data source could not be offered to Spark: ImportError: compat probe: "
            "broken on purpose") in out.stderr, out.stderr


@pytest.mark.spark
def test_spark_still_finds_other_sources_and_the_warning_reaches_the_driver(tmp_path):
    env = _broken_path(tmp_path)
    out = subprocess.run([sys.executable, "-m", "tests.compat.discovery_child"], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "probe rows: [Row(n=1)]" in out.stdout, out.stdout + out.stderr[-3000:]
    assert "DATA_SOURCE_NOT_FOUND" in out.stdout, out.stdout
    assert "ImportError: compat probe: broken on purpose" in out.stderr, out.stderr[-3000:]
