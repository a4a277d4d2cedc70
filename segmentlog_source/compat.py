"""The installed PySpark's Python Data Source API: the one module that knows how releases differ.

Read from the installed sources of PySpark 4.0.5, 4.1.4, 4.2.1 and 4.3.0
(`pyspark/sql/datasource.py`, `pyspark/sql/streaming/datasource.py`,
`pyspark/sql/streaming/python_streaming_source_runner.py`, `pyspark/sql/pandas/types.py`):

    what                                              4.0   4.1   4.2   4.3
    DataSourceReader.pushFilters, the Filter classes   -    yes   yes   yes
    DataSourceStreamArrowWriter                        -    yes   yes   yes
    pyspark.sql.types.TimeType                         -    yes   yes   yes
    pyspark.sql.streaming.datasource: read limits,     -     -    yes   yes
      latestOffset(start, limit), AvailableNow
    to_arrow_type / to_arrow_schema                 timestamp_utc=   timezone= (keyword only)

On 4.0 and 4.1 the stream runner calls `latestOffset()` with no argument and never asks for a
read limit, and Spark's engine runs Trigger.AvailableNow over such a stream itself (it asks for
the latest offsets once, at the start). What a release lacks is detected by looking for it, not
by its version number; `require` refuses it in one line naming the release that has it.
"""

from __future__ import annotations

import datetime as dt
import inspect
from typing import Iterable, Iterator

import pyarrow as pa
import pyspark
from pyspark.sql import datasource as _datasource
from pyspark.sql import types as _types
from pyspark.sql.pandas import types as _pandas_types

from .errors import NeedsNewerPySparkError

VERSION = pyspark.__version__

# -- what this PySpark has ----------------------------------------------------------------------
HAS_FILTER_PUSHDOWN = hasattr(_datasource.DataSourceReader, "pushFilters")
HAS_STREAM_ARROW_WRITER = hasattr(_datasource, "DataSourceStreamArrowWriter")
HAS_TIME_TYPE = hasattr(_types, "TimeType")
try:
    from pyspark.sql.streaming import datasource as _stream_datasource
except ImportError:     # 4.0, 4.1
    _stream_datasource = None
HAS_READ_LIMITS = _stream_datasource is not None

# feature -> (whether this PySpark has it, the first release that has it, what it is)
FEATURES = {
    "pushdown": (HAS_FILTER_PUSHDOWN, "4.1", "WHERE-clause pushdown"),
    "read limits": (HAS_READ_LIMITS, "4.2", "a read limit on a stream"),
    "time type": (HAS_TIME_TYPE, "4.1", "an Avro time-micros field (Spark's TIME type)"),
}

# The stream options that set read limits (plan/stream_options.py parses them).
READ_LIMIT_OPTIONS = ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay")


def require(feature: str, option: str | None = None) -> None:
    """Nothing when this PySpark has `feature`; else the one-line refusal."""
    present, release, what = FEATURES[feature]
    if not present:
        raise NeedsNewerPySparkError(what, release, VERSION, option)


def require_read_limits(options) -> None:
    """A stream's options: refused when they set a read limit this PySpark cannot apply."""
    given = {k.lower() for k, v in dict(options).items() if v is not None}
    for name in READ_LIMIT_OPTIONS:
        if name.lower() in given:
            require("read limits", option=name)


def register_data_source(spark, source_class) -> None:
    """`spark.dataSource.register(source_class)`. PySpark 4.0 refuses a name already registered
    (DATA_SOURCE_ALREADY_EXISTS: by discovery of pyspark_segmentlog, or an earlier call) where
    4.1 on replace it; the source registered under that name stays then."""
    try:
        spark.dataSource.register(source_class)
    except Exception as err:  # noqa: BLE001 - pyspark's AnalysisException, Connect's or not
        if "DATA_SOURCE_ALREADY_EXISTS" not in str(err):
            raise


# -- the classes a release may lack --------------------------------------------------------------
class _Absent:
    """A stand-in for a class this PySpark lacks: nothing is ever an instance of it."""


if HAS_READ_LIMITS:
    ReadAllAvailable = _stream_datasource.ReadAllAvailable
    ReadLimit = _stream_datasource.ReadLimit
    ReadMaxRows = _stream_datasource.ReadMaxRows
    ReadMinRows = _stream_datasource.ReadMinRows
    SupportsTriggerAvailableNow = _stream_datasource.SupportsTriggerAvailableNow
else:
    ReadAllAvailable = ReadLimit = ReadMaxRows = ReadMinRows = type("ReadLimit", (_Absent,), {})

    class SupportsTriggerAvailableNow:
        """4.0/4.1: Spark's engine runs AvailableNow itself; nothing to mix in."""

# Filter class -> the comparison it is ({} when this PySpark pushes no filters)
FILTER_OPS: dict[type, str] = {}
if HAS_FILTER_PUSHDOWN:
    FILTER_OPS = {_datasource.EqualTo: "=", _datasource.EqualNullSafe: "=",
                  _datasource.GreaterThan: ">", _datasource.GreaterThanOrEqual: ">=",
                  _datasource.LessThan: "<", _datasource.LessThanOrEqual: "<=",
                  _datasource.In: "in"}

if HAS_TIME_TYPE:
    TimeType = _types.TimeType
else:
    class TimeType(_types.DataType):
        """4.0 has no TIME type: building one (an Avro time-micros schema) is refused."""

        def __init__(self, precision: int = 6):
            require("time type")


# -- Arrow types: timestamp_utc= up to 4.1, timezone= from 4.2 -----------------------------------
_TIMEZONE_KEYWORD = "timezone" in inspect.signature(_pandas_types.to_arrow_type).parameters


def to_arrow_type(spark_type: _types.DataType) -> pa.DataType:
    """The Arrow type Spark exchanges `spark_type` in, timestamps in UTC."""
    if _TIMEZONE_KEYWORD:
        return _pandas_types.to_arrow_type(spark_type, timezone="UTC")
    return _pandas_types.to_arrow_type(spark_type, timestamp_utc=True)


def to_arrow_schema(schema: _types.StructType) -> pa.Schema:
    """The Arrow schema Spark expects batches of `schema` in (to the letter)."""
    if _TIMEZONE_KEYWORD:
        return _pandas_types.to_arrow_schema(schema, timezone="UTC")
    return _pandas_types.to_arrow_schema(schema, timestamp_utc=True)


# -- streaming sinks: Arrow batches from 4.1, Rows on 4.0 ----------------------------------------
StreamWriterBase = (_datasource.DataSourceStreamArrowWriter if HAS_STREAM_ARROW_WRITER
                    else _datasource.DataSourceStreamWriter)

# Rows gathered into one Arrow batch by the row-based stream writer (4.0)
ROWS_PER_BATCH = 10_000


def stream_write_batches(rows_or_batches: Iterable, schema: pa.Schema
                         ) -> Iterator[pa.RecordBatch]:
    """What a stream writer's write() was given, as Arrow batches of `schema`: Arrow batches as
    they are (4.1 on), pyspark Rows gathered into batches (4.0's stream writer gets Rows)."""
    rows = iter(rows_or_batches)
    first = next(rows, None)
    if first is None:
        return
    if isinstance(first, pa.RecordBatch):
        yield first
        yield from rows
        return
    timestamps = [i for i, f in enumerate(schema) if pa.types.is_timestamp(f.type)
                  and f.type.tz is not None]
    chunk: list = [first]
    for row in rows:
        if len(chunk) == ROWS_PER_BATCH:
            yield _batch_of_rows(chunk, schema, timestamps)
            chunk = []
        chunk.append(row)
    yield _batch_of_rows(chunk, schema, timestamps)


def _batch_of_rows(rows: list, schema: pa.Schema, timestamps: list[int]) -> pa.RecordBatch:
    columns = [list(c) for c in zip(*rows)]
    for i in timestamps:
        columns[i] = [None if v is None else _instant(v, schema.field(i).name) for v in columns[i]]
    return pa.RecordBatch.from_arrays(
        [pa.array(c, type=f.type) for c, f in zip(columns, schema)], schema=schema)


def _instant(value: dt.datetime, column: str) -> dt.datetime:
    """A Row's timestamp, which PySpark 4.0 gives as the Python worker's local wall time (no
    zone), as the instant it was: refused where that wall time is ambiguous (the hour a clock
    is set back), never guessed."""
    if value.tzinfo is not None:
        return value
    first, second = value.replace(fold=0).astimezone(dt.timezone.utc), \
        value.replace(fold=1).astimezone(dt.timezone.utc)
    if first != second:
        raise NeedsNewerPySparkError(
            f"column {column}: the local time {value} is ambiguous in the Python workers' "
            "time zone (set TZ=UTC for them) and writing its instant exactly", "4.1", VERSION)
    return first
