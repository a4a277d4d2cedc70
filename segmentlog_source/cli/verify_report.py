"""What `segmentlog verify` reports: problems per file, and one partition's report.

A broken index can disagree with its log a million times: each kind of problem is listed a few
times per file, then counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import CorruptDataError

MAX_REPORTS_PER_KIND = 5   # per file and kind of problem


@dataclass
class Problem:
    severity: str  # "error" or "warning"
    path: str
    position: int | None
    message: str

    def __str__(self) -> str:
        where = self.path if self.position is None else f"{self.path} at byte {self.position}"
        return f"{self.severity}: {where}: {self.message}"


@dataclass
class PartitionReport:
    name: str
    path: str
    segments: int = 0
    batches: int = 0
    records: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    size: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    def summary(self) -> str:
        offsets = ("no records" if self.first_offset is None
                   else f"offsets {self.first_offset}..{self.last_offset}")
        text = (f"{self.path}: {_count(self.segments, 'segment')}, "
                f"{_count(self.batches, 'batch')}, {_count(self.records, 'record')}, {offsets}, "
                f"{_count(self.size, 'byte')}")
        counts = [_count(len(group), word)
                  for group, word in ((self.errors, "error"), (self.warnings, "warning")) if group]
        status = "FAIL" if self.errors else "ok  "
        return f"{status} {text}" + (f": {', '.join(counts)}" if counts else "")


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}{'es' if word.endswith('ch') else 's'}"


class Reporter:
    """Problems of one partition; repeated kinds of problem in one file are counted, not listed."""

    def __init__(self, report: PartitionReport):
        self.report = report
        self._seen: dict[tuple[str, str, str], int] = {}

    def add(self, severity: str, path: str, position: int | None, message: str,
            kind: str | None = None) -> None:
        key = (severity, path, kind or message)
        count = self._seen[key] = self._seen.get(key, 0) + 1
        if count <= MAX_REPORTS_PER_KIND:
            self.report.problems.append(Problem(severity, path, position, message))

    def error(self, path, position, message, kind=None):
        self.add("error", path, position, message, kind)

    def warning(self, path, position, message, kind=None):
        self.add("warning", path, position, message, kind)

    def located(self, err: CorruptDataError, path: str) -> None:
        self.error(err.path or path, err.position, err.reason)

    def finish(self) -> None:
        for (severity, path, kind), count in self._seen.items():
            if count > MAX_REPORTS_PER_KIND:
                self.report.problems.append(Problem(
                    severity, path, None, f"... and {count - MAX_REPORTS_PER_KIND} more like "
                    f"the above ({kind})"))
