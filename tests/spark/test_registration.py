"""Both ways of registering the source: discovery after pip install, and register()."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import shared_fixture

pytestmark = pytest.mark.spark

FIXTURE = shared_fixture("kafka-real", "agelenler-broker-2")

SCRIPT = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    print("ROWS", spark.read.format("segmentlog").load(sys.argv[1]).count())
    spark.stop()
""")


def test_discovered_without_register_in_a_fresh_session(tmp_path):
    """Spark imports the top-level pyspark_segmentlog module and finds its DefaultSource."""
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    script = tmp_path / "discover.py"
    script.write_text(SCRIPT)
    out = subprocess.run([sys.executable, str(script), str(FIXTURE)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "ROWS 43" in out.stdout


def test_discovery_shim_is_cheap_and_names_the_source():
    import pyspark_segmentlog

    assert pyspark_segmentlog.DefaultSource.name() == "segmentlog"


def test_register_is_safe_to_repeat_and_sets_the_pushdown_conf(spark):
    import segmentlog_source

    segmentlog_source.register(spark)
    assert spark.read.format("segmentlog").load(str(FIXTURE)).count() == 43
    try:
        source = segmentlog_source.register(spark, pushdown=True)
        assert source.pushdown_default
        assert spark.conf.get("spark.sql.python.filterPushdown.enabled") == "true"
        df = spark.read.format("segmentlog").load(str(FIXTURE))
        assert df.where("offset = 0").count() == df.where("offset = 0").count()
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
        segmentlog_source.register(spark)
