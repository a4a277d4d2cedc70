"""Reading a topic both ways, collected at once (the broker's files change as the session goes
on, so nothing here is read lazily later)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Read:
    """One read: its rows ordered by topic, partition and offset, and its schema; or the error
    it raised (the test of that read reports it)."""

    rows: list | None = None
    schema: object = None
    error: str | None = None


def collect(reader, options: dict, path: str | None = None) -> Read:
    for name, value in options.items():
        reader = reader.option(name, value)
    try:
        df = reader.load(path) if path else reader.load()
        df = df.orderBy("topic", "partition", "offset")
        return Read(df.collect(), df.schema)
    except Exception as err:  # noqa: BLE001 - any failure is the read's result
        return Read(error=short_error(err))


def short_error(err: Exception) -> str:
    """The first line of an error and the causes in a Java stack trace, not the frames."""
    lines = str(err).split("\n")
    causes = [line.strip() for line in lines[1:]
              if line.startswith(("Caused by:", ": org.", ": java."))
              or ("Exception: " in line and not line.lstrip().startswith("at "))]
    return "\n".join([f"{type(err).__name__}: {lines[0]}", *dict.fromkeys(causes)])[:4000]


def kafka_read(spark, broker, options: dict) -> Read:
    """Spark's own Kafka source, reading from the running broker."""
    reader = spark.read.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap)
    return collect(reader, options)


def segmentlog_read(spark, path, options: dict) -> Read:
    return collect(spark.read.format("segmentlog"), options, str(path))
