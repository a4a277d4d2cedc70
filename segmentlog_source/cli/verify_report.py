"""What `segmentlog verify` reports: problems per file, and one partition's report.

A broken index can disagree with its log a million times: each kind of problem is listed a few
times per file, then counted. A problem that follows from another (an index entry that disagrees
with a batch whose CRC failed: the batch, not the index, is damaged) names it as its `cause`; the
report lists the causes first, each followed by what follows from it, marked as such.
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
    cause: "Problem | None" = None   # the problem this one follows from

    def __str__(self) -> str:
        where = self.path if self.position is None else f"{self.path} at byte {self.position}"
        return f"{self.severity}: {where}: {self.message}"

    def lines(self, consequences: list["Problem"]) -> list[str]:
        """This problem's line, then those of the problems that follow from it."""
        return [str(self)] + [f"  follows from the above, not a separate fault: {c}"
                              for c in consequences]


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
    def causes(self) -> list[Problem]:
        """The problems that follow from no other, in the order found."""
        return [p for p in self.problems if p.cause is None]

    def report_lines(self) -> list[str]:
        """Each cause, then what follows from it (what follows from a problem not listed, past
        the few of its kind, is listed as a cause)."""
        listed = {id(p) for p in self.problems}
        roots = [p for p in self.problems if p.cause is None or id(p.cause) not in listed]
        lines = []
        for root in roots:
            lines += root.lines([p for p in self.problems
                                 if p.cause is root and p is not root])
        return lines

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    def summary(self) -> str:
        offsets = ("no records" if self.first_offset is None
                   else f"offsets {self.first_offset}..{self.last_offset}")
        text = (f"{self.path}: {_count(self.segments, 'segment')}, "
                f"{_count(self.batches, 'batch')}, {_count(self.records, 'record')}, {offsets}, "
                f"{_count(self.size, 'byte')}")
        causes = self.causes
        counts = [_count(n, word) for n, word in (
            (sum(p.severity == "error" for p in causes), "error"),
            (sum(p.severity == "warning" for p in causes), "warning")) if n]
        following = len(self.problems) - len(causes)
        if following:
            counts.append(f"{_count(following, 'more problem')} following from "
                          f"{'it' if len(causes) == 1 else 'them'}")
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
            kind: str | None = None, cause: Problem | None = None) -> Problem:
        key = (severity, path, kind or message)
        count = self._seen[key] = self._seen.get(key, 0) + 1
        problem = Problem(severity, path, position, message, cause)
        if count <= MAX_REPORTS_PER_KIND:
            self.report.problems.append(problem)
        return problem

    def error(self, path, position, message, kind=None, cause=None) -> Problem:
        return self.add("error", path, position, message, kind, cause)

    def warning(self, path, position, message, kind=None, cause=None) -> Problem:
        return self.add("warning", path, position, message, kind, cause)

    def located(self, err: CorruptDataError, path: str, cause: Problem | None = None) -> Problem:
        return self.error(err.path or path, err.position, err.reason, cause=cause)

    def finish(self) -> None:
        for (severity, path, kind), count in self._seen.items():
            if count > MAX_REPORTS_PER_KIND:
                self.report.problems.append(Problem(
                    severity, path, None, f"... and {count - MAX_REPORTS_PER_KIND} more like "
                    f"the above ({kind})"))
