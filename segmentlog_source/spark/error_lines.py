"""An error's useful line first, in what PySpark shows of it.

PySpark's worker sends an exception to the JVM as the text Python's `traceback` module makes of
it (pyspark/util.py, handle_worker_exception), and Spark puts that text after its own prefix
(`[PYTHON_DATA_SOURCE_ERROR] Failed to generate Python data source read partitions: `). With
the simplified traceback (Spark's default) the text is still "Traceback (most recent call
last):", the source's frames, then the message: the file, byte and advice come last. Nothing
in the exception changes that: the simplified traceback drops the `__cause__` (and with it the
`__context__`, which setting the cause suppresses), and keeps every frame outside pyspark.

What PySpark does offer is `SPARK_HIDE_TRACEBACK`, the environment variable that
spark.sql.execution.pyspark.udf.hideTraceback.enabled sets: handle_worker_exception reads it
when it formats the error, and then sends only the exception's own lines. A segmentlog error is
a message meant for a person (what is wrong, where, what to do), not a bug: its frames say
nothing to the user. So `raised_alone` sets that variable in the worker about to report it,
which exits after reporting an error (sys.exit in pyspark/sql/worker/utils.py and worker.py),
so no later error of that process is affected; only a PySpark worker's environment is touched
(SPARK_PYTHON_RUNTIME=PYTHON_WORKER). What a person then sees:

    [PYTHON_DATA_SOURCE_ERROR] Failed to generate Python data source read partitions:
    segmentlog_source.errors.DataLossError: startingOffsets: offset 0 of orders-0 is ...

Any other exception (a bug) keeps its traceback.
"""

from __future__ import annotations

import os

HIDE_TRACEBACK = "SPARK_HIDE_TRACEBACK"


def raised_alone(err: BaseException) -> BaseException:
    """`err`, to be raised from a PySpark worker without its traceback (see above). Anywhere
    else (a reader called in a test's or a user's own process) nothing is changed."""
    if os.environ.get("SPARK_PYTHON_RUNTIME") == "PYTHON_WORKER":   # (pyspark/worker_util.py)
        os.environ[HIDE_TRACEBACK] = "1"
    return err


def errors_alone(method):
    """`method`, its segmentlog errors raised without their traceback (see above)."""
    from functools import wraps

    from ..errors import SegmentLogError

    @wraps(method)
    def wrapper(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except SegmentLogError as err:
            raise raised_alone(err) from None
    return wrapper
