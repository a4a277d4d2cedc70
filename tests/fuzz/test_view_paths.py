"""The batches view's compiled walk (storage/log/header_table.py) against its checked scan, on the
mutation fuzz's mutants: the walk takes a range only when it looks healthy and hands anything
else to the checked scan, so on every mutant, with CRCs checked or not, both paths must give
the same rows or the same error. A difference is a range the walk accepted that the checked
scan would not (or would read otherwise): a wrong row, or a lost error.

The mutants are the fuzz's own (every operator, ~12 per operator, derandomized); the reads run
in-process, each under a time limit.
"""

from __future__ import annotations

import signal

import pyarrow as pa
import pytest

from segmentlog_source.plan.options import parse_read_options
from segmentlog_source.plan.read_plan import plan_read
from segmentlog_source.spark.metadata_views import BatchesScan
from segmentlog_source.spark.partition_scan import SegmentLogInputPartition, scan_partition
from segmentlog_source.spark.reader import GroupScan
from tests.fuzz.mutations import NotApplicable, make_mutant
from tests.fuzz.originals import build_originals
from tests.fuzz.test_mutation_fuzz import draw_specs

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("fuzz")]

BUDGET = 600
# with CRCs and without: as planned (a Spark task's segments walked two at a time, each going on
# where the one before stopped), and cut into ranges inside segments (minPartitions)
READS = [{"verifyChecksums": "true"}, {"verifyChecksums": "false"},
         {"verifyChecksums": "true", "minPartitions": "64"},
         {"verifyChecksums": "false", "minPartitions": "64"}]
SECONDS_PER_READ = 30


def _rows(data: str, **options) -> tuple[str, object]:
    """("rows", the view's rows) or ("error", type and message) of one read of `data`."""
    try:
        opts = parse_read_options({"path": data, "view": "batches", **options})
        plan = plan_read(opts)
        rows = [row for g in plan.groups
                for b in scan_partition(SegmentLogInputPartition(g), opts)
                for row in pa.Table.from_batches([b]).to_pylist()]
        return "rows", rows
    except Exception as exc:      # noqa: BLE001 - compared
        return "error", f"{type(exc).__name__}: {exc}"


def _timed(fn, *args, **kwargs):
    def stop(signum, frame):
        raise TimeoutError(f"a read took over {SECONDS_PER_READ} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(SECONDS_PER_READ)
    try:
        return fn(*args, **kwargs)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module")
def originals(tmp_path_factory):
    return build_originals(tmp_path_factory.mktemp("view-originals"))


def test_the_walk_and_the_checked_scan_agree_on_every_mutant(originals, tmp_path, monkeypatch):
    walked = BatchesScan._scan_tasks
    differ, compared = [], 0
    for n, spec in enumerate(draw_specs(originals, BUDGET)):
        data = tmp_path / f"m{n}"
        try:
            make_mutant(spec, originals[spec.original], data)
        except NotApplicable:
            continue
        for options in READS:
            monkeypatch.setattr(BatchesScan, "_scan_tasks", walked)
            fast = _timed(_rows, str(data), **options)
            # the checked scan alone: every task read as when the walk turns a range down
            monkeypatch.setattr(BatchesScan, "_scan_tasks", GroupScan._scan_tasks)
            slow = _timed(_rows, str(data), **options)
            compared += 1
            if fast != slow:
                differ.append(f"{spec} {options}: walk {str(fast)[:300]} / "
                              f"checked scan {str(slow)[:300]}")
    assert compared >= BUDGET
    assert not differ, f"{len(differ)} of {compared} reads differ:\n" + "\n".join(differ[:20])
