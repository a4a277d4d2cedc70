"""A function run in one Spark task, where the executors see the files (a Spark Connect client
may not see them at all), and its answer brought back to the driver as JSON.

A segmentlog error the function raises comes back as the same error (its class and its
constructor's arguments cross the process boundary as plain data), so the caller sees the
BadOptionError or CorruptDataError naming the config or the file, not a Python worker's
traceback wrapped by Spark. Built on DataFrame operations only (`spark.range` and a Python UDF),
never on `sparkContext`, so it runs on classic and Spark Connect sessions alike.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from .. import errors


def plain_udf(function, return_type: str):
    """A plain (not Arrow) Python UDF marked nondeterministic: a classic session then needs no
    pandas, and the optimizer never runs it twice for a row."""
    from pyspark.sql.functions import udf

    return udf(function, return_type, useArrow=False).asNondeterministic()


def run_in_one_task(spark, function: Callable[[], Any]) -> Any:
    """`function()` (its result JSON-serializable) run in one Spark task; its result, or the
    segmentlog error it raised, raised here."""

    def call(_) -> str:
        try:
            return json.dumps({"answer": function()})
        except errors.SegmentLogError as err:
            return json.dumps({"error": type(err).__name__, "args": err.__reduce__()[1]},
                              default=str)

    answer = json.loads(spark.range(0, 1, 1, 1).select(plain_udf(call, "string")("id"))
                        .first()[0])
    if "error" in answer:
        raise rebuilt(answer["error"], answer["args"])
    return answer["answer"]


def rebuilt(name: str, args: list) -> errors.SegmentLogError:
    """The segmentlog error of class `name` made from `args` (a SegmentLogError saying so when
    no such class exists)."""
    cls = getattr(errors, name, None)
    if not (isinstance(cls, type) and issubclass(cls, errors.SegmentLogError)):
        return errors.SegmentLogError(f"{name}: {args}")
    return cls(*args)
