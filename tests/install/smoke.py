"""Run by an installed wheel's interpreter, outside the repository: what a new user does first.

    python smoke.py cli DIR        the command line on a generated log (no PySpark needed)
    python smoke.py spark DIR      format("segmentlog") found by discovery, a read and a write
    python smoke.py connect DIR    the same from a Spark Connect client, on a Connect server
                                   this interpreter starts (PySpark's own, its own JVM)

Prints one `ok ...` line per step; any failure is an exception (a non-zero exit).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

RECORDS = 3000


def segmentlog(*args: str) -> str:
    bin_dir = Path(sys.executable).parent
    out = subprocess.run([str(bin_dir / "segmentlog"), "--quiet", *args], check=True,
                         capture_output=True, text=True)
    return out.stdout


def cli(root: Path) -> None:
    logs = root / "logs"
    segmentlog("generate", "--topics", "orders", "--partitions", "2", "--records", str(RECORDS),
               str(logs))
    assert "ok" in segmentlog("verify", str(logs)).split()[0]
    print("ok verify")
    assert "2 partitions" in segmentlog("stats", str(logs))
    print("ok stats")
    segment = sorted((logs / "orders-0").glob("*.log"))[0]
    dump = segmentlog("dump", "--files", str(segment))
    assert "baseOffset: 0" in dump, dump[:500]
    print("ok dump")
    assert "reads" in segmentlog("explain", str(logs))
    print("ok explain")
    import segmentlog_source

    assert str(Path(segmentlog_source.__file__)).find("site-packages") > 0, \
        f"segmentlog imported from {segmentlog_source.__file__}, not the installed wheel"
    print(f"ok installed at {Path(segmentlog_source.__file__).parent}")


def read_and_write(spark, logs: Path, copy: Path) -> None:
    df = spark.read.format("segmentlog").load(str(logs))
    assert df.count() == RECORDS, df.count()
    print("ok read (found by discovery)")
    assert df.where("partition = 1").count() + df.where("partition = 0").count() == RECORDS
    (df.select("key", "value").write.format("segmentlog").mode("append")
       .option("topic", "copy").save(str(copy)))
    back = spark.read.format("segmentlog").load(str(copy))
    assert back.count() == RECORDS
    assert back.selectExpr("sum(length(value))").first()[0] == \
        df.selectExpr("sum(length(value))").first()[0]
    print("ok write read back")


def main(argv: list[str]) -> None:
    what, root = argv[0], Path(argv[1])
    if what == "cli":
        cli(root)
        return
    from pyspark.sql import SparkSession

    if what == "spark":
        spark = SparkSession.builder.master("local[1]").appName("wheel-smoke").getOrCreate()
        try:
            read_and_write(spark, root / "logs", root / "copy")
        finally:
            spark.stop()
        return
    from segmentlog_source.devtools.connect_server import ConnectServer

    with ConnectServer(root / "connect-server", master="local[1]") as server:
        spark = SparkSession.builder.remote(server.url).create()
        try:
            read_and_write(spark, root / "logs", root / "connect-copy")
        finally:
            spark.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
