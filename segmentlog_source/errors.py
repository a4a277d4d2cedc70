"""The one error vocabulary of segmentlog.

Every layer raises these, where the fact is known, and nobody re-wraps them into vaguer messages.
A user reading an error should learn *which* file (and byte position) or *which* option is wrong.
"""

from __future__ import annotations


class SegmentLogError(Exception):
    """Base class of every error segmentlog raises on purpose."""


class CorruptDataError(SegmentLogError):
    """Bytes that are not what a Kafka broker writes: bad CRC, truncated batch, absurd lengths...

    `path` and `position` locate the problem; `position` is a byte position in `path`
    (for records inside a batch, the position of the batch).
    """

    def __init__(self, message: str, path: str | None = None, position: int | None = None,
                 hint: str | None = None):
        self.reason = message
        self.path = path
        self.position = position
        self.hint = hint
        super().__init__(self._render())

    def _render(self) -> str:
        if self.hint is not None:
            return self._render_hinted()
        where = ""
        if self.path is not None:
            where = f"{self.path}"
            if self.position is not None:
                where += f" at byte {self.position}"
            where += ": "
        elif self.position is not None:
            where = f"at byte {self.position}: "
        return where + self.reason

    def _render_hinted(self) -> str:
        # A Spark user reads the first line after a long traceback: what is wrong, where, and
        # what to do, short enough to read at a glance. The file is named there by its last two
        # parts (<topic>-<partition>/<segment>), which any path may make long; the whole path
        # follows on the next line.
        short = None if self.path is None else "/".join(self.path.rstrip("/").split("/")[-2:])
        where = "" if short is None else short
        if self.position is not None:
            where += f" at byte {self.position}" if where else f"at byte {self.position}"
        first = f"{where}: {self.reason}" if where else self.reason
        first = f"{first}; {self.hint}"
        return first if self.path is None else f"{first}\nfile: {self.path}"

    def located(self, path: str | None = None, offset: int = 0) -> "CorruptDataError":
        """The same error, placed in a file: `offset` is added to the position.

        Format code works on buffers and knows positions relative to the buffer; the storage
        layer, which knows the file and where the buffer came from, calls this to complete it.
        """
        position = None if self.position is None else self.position + offset
        err = type(self)(self.reason, path if path is not None else self.path, position)
        return err

    def hinted(self, hint: str) -> "CorruptDataError":
        """The same error with what to do, for a Spark user (the reader adds it: the storage
        layer that raises it does not know which option the reader was given)."""
        return type(self)(self.reason, self.path, self.position, hint)

    def __reduce__(self):
        return (type(self), (self.reason, self.path, self.position, self.hint))


class FileChangedError(CorruptDataError):
    """A file that is not what the read was planned on (replaced, or shorter than planned):
    its byte positions no longer describe it, so nothing is salvaged from it."""


class BadOptionError(SegmentLogError, ValueError):
    """An option (Spark reader/writer option, CLI flag, config) with an unusable value.

    The first line names the option and says what is wrong and what to do; `detail`, when
    given, follows on the next lines (long lists, the full text of a value). `value` None: the
    value is not shown (an unknown option's value may be a secret).
    """

    def __init__(self, name: str, value: object, reason: str, detail: str | None = None):
        self.name = name
        self.value = value
        self.reason = reason
        self.detail = detail
        given = "" if value is None else f"={_shown(value)}"
        message = f"option {name}{given}: {reason}"
        super().__init__(message if detail is None else f"{message}\n{detail}")

    def __reduce__(self):
        return (type(self), (self.name, self.value, self.reason, self.detail))


# A value longer than this (a JSON map of offsets) is cut in an error's first line.
_SHOWN_CHARS = 60


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS - 3] + "..."


class NeedsNewerPySparkError(SegmentLogError, ValueError):
    """A feature the installed PySpark's Python Data Source API lacks (compat.py knows which),
    refused at load() or start(): one line names the feature (and the option asking for it)
    and the PySpark release that has it."""

    def __init__(self, feature: str, release: str, installed: str, option: str | None = None):
        self.feature, self.release, self.installed, self.option = \
            feature, release, installed, option
        message = (f"{feature} needs PySpark {release} or later (this is PySpark {installed}); "
                   "upgrade PySpark")
        super().__init__(message if option is None else f"option {option}: {message} or "
                         "remove the option")

    def __reduce__(self):
        return (type(self), (self.feature, self.release, self.installed, self.option))


class UnrepresentableValueError(SegmentLogError):
    """A value the log holds that Spark's types cannot (a timestamp whose microseconds pass a
    long): Spark's Kafka source fails on it too, with an ArithmeticException."""


class MalformedValueError(SegmentLogError):
    """A record's key or value that its declared format cannot decode (unknown schema id, bad
    magic byte, truncated body, wrong schema, an internal topic's unknown record version): the
    message names the topic, partition, offset and, where there is one, the schema id."""


class DataLossError(SegmentLogError):
    """Requested offsets that the log no longer (or never) holds."""


class LogNotFoundError(SegmentLogError, FileNotFoundError):
    """A path that is not, or does not contain, a Kafka log directory; or a file that is not
    there (its `missing_path`, where the error is about one file: a planner that listed the
    file knows it was deleted since, by retention). (Not OSError's `filename`, which would
    turn the message into "[Errno None] None: ...".)"""

    missing_path: str | None = None

    @classmethod
    def of_file(cls, message: str, path: str) -> "LogNotFoundError":
        err = cls(message)
        err.missing_path = path
        return err


class LogLockedError(SegmentLogError):
    """Another writer holds a partition's lock."""


class StorageAccessError(SegmentLogError, PermissionError):
    """A store refused a request for lack of rights (wrong or missing credentials)."""


class StorageRequestError(SegmentLogError, OSError):
    """A store request that kept failing after its retries (throttled, unreachable, 5xx)."""


class ReadOnlyStoreError(SegmentLogError):
    """A write aimed at a store segmentlog only reads (object stores, HDFS)."""
