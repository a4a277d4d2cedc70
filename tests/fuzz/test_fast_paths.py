"""The fast paths against the checked scan, on the mutation fuzz's mutants: the records read's
walked chunks (storage/log/walked_scan.py) and the batches view's compiled walk
(storage/log/header_table.py). Each takes a range only while it looks healthy and hands
anything else to the checked scan, so on every mutant, with CRCs checked or not, both paths
must give the same rows or the same error. A difference is a range a fast path accepted that
the checked scan would not (or would read otherwise): a wrong row, or a lost error.

The mutants are the fuzz's own (every operator, ~12 per operator, derandomized); the reads run
in-process, each under a time limit, as planned and cut into ranges inside segments
(minPartitions), in the usual chunks and in chunks of a few batches (so chunk edges fall
everywhere, and a batch is held across them).
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
from segmentlog_source.storage.io.local import LocalFileSystem
from tests.fuzz.mutations import NotApplicable, make_mutant
from tests.fuzz.originals import build_originals
from tests.fuzz.test_mutation_fuzz import draw_specs

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("fuzz")]

BUDGET = 400
SMALL_CHUNK = 700     # bytes: a few of the originals' batches
# with CRCs and without; as planned (a Spark task's segments walked two at a time, each going on
# where the one before stopped), cut into ranges inside segments, and in small chunks
READS = [({"verifyChecksums": "true"}, None), ({"verifyChecksums": "false"}, None),
         ({"verifyChecksums": "true", "minPartitions": "64"}, None),
         ({"verifyChecksums": "false", "minPartitions": "64"}, None),
         ({"verifyChecksums": "true"}, SMALL_CHUNK), ({"verifyChecksums": "false"}, SMALL_CHUNK)]
SECONDS_PER_READ = 30


def _rows(data: str, **options) -> tuple[str, object]:
    """("rows", the read's rows) or ("error", type and message) of one read of `data`."""
    try:
        opts = parse_read_options({"path": data, "includeHeaders": "true", **options})
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


def _records_fast(monkeypatch, on: bool) -> None:
    monkeypatch.setattr(GroupScan, "_walked_scan", WALKED if on else lambda *args: None)


def _view_fast(monkeypatch, on: bool) -> None:
    # the checked scan alone: every task read as when the walk turns a range down
    monkeypatch.setattr(BatchesScan, "_scan_tasks", WALKED_VIEW if on else GroupScan._scan_tasks)


WALKED, WALKED_VIEW = GroupScan._walked_scan, BatchesScan._scan_tasks
PATHS = {"records": _records_fast, "batches": _view_fast}


@pytest.fixture(scope="module")
def originals(tmp_path_factory):
    return build_originals(tmp_path_factory.mktemp("fast-path-originals"))


@pytest.mark.parametrize("view", sorted(PATHS))
def test_the_fast_path_and_the_checked_scan_agree_on_every_mutant(view, originals, tmp_path,
                                                                  monkeypatch):
    fast_path = PATHS[view]
    differ, compared = [], 0
    for n, spec in enumerate(draw_specs(originals, BUDGET)):
        data = tmp_path / f"m{n}"
        try:
            make_mutant(spec, originals[spec.original], data)
        except NotApplicable:
            continue
        for options, chunk in READS:
            monkeypatch.setattr(LocalFileSystem, "read_ahead_bytes",
                                chunk or LocalFileSystem.read_ahead_bytes)
            fast_path(monkeypatch, True)
            fast = _timed(_rows, str(data), view=view, **options)
            fast_path(monkeypatch, False)
            slow = _timed(_rows, str(data), view=view, **options)
            monkeypatch.undo()
            compared += 1
            if fast != slow:
                differ.append(f"{spec} {options} chunk={chunk}: fast {str(fast)[:300]} / "
                              f"checked scan {str(slow)[:300]}")
    assert compared >= BUDGET
    assert not differ, f"{len(differ)} of {compared} reads differ:\n" + "\n".join(differ[:20])
