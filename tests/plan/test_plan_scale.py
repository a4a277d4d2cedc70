"""Planning cost follows the segments a read touches: index positions are asked for only where a
group is cut, and a log of more segments than open files allowed is still planned."""

import json
import subprocess
import sys
import textwrap
from collections.abc import Mapping

import numpy as np

from segmentlog_source.plan.scan_plan import ScanTask, group_tasks


class CountingPositions(Mapping):
    """Index positions that count who asked for them."""

    def __init__(self, positions):
        self._positions, self.asked = positions, []

    def __getitem__(self, path):
        self.asked.append(path)
        return self._positions[path]

    def __iter__(self):
        return iter(self._positions)

    def __len__(self):
        return len(self._positions)


def test_index_positions_are_read_only_where_a_cut_falls():
    tasks = [ScanTask("t", 0, f"s{i}", 0, 1000, 0, 10) for i in range(1000)]
    positions = CountingPositions({t.path: np.arange(100, 1000, 100) for t in tasks})
    groups = group_tasks(tasks, positions, max_bytes=100_000, min_groups=None)
    assert len(groups) == 10
    assert sum(t.nbytes for g in groups for t in g) == 1_000_000
    # the equal shares fall at task edges here: at most one task's positions per cut
    assert len(positions.asked) <= 9


def test_more_groups_than_tasks_cut_at_index_positions():
    tasks = [ScanTask("t", 0, f"s{i}", 0, 1000, 0, 10) for i in range(3)]
    positions = CountingPositions({t.path: np.arange(100, 1000, 100) for t in tasks})
    groups = group_tasks(tasks, positions, max_bytes=10**9, min_groups=30)
    assert len(groups) == 30
    assert all(t.start % 100 == 0 and t.end % 100 == 0 for g in groups for t in g)


_CHILD = textwrap.dedent("""
    import json, resource, sys
    from segmentlog_source.cli.generate import generate_log
    from segmentlog_source.plan.options import parse_read_options
    from segmentlog_source.plan.read_plan import plan_read

    path, limit = sys.argv[1], int(sys.argv[2])
    # ~170 segments of ~1.5 KB, each with a mapped time index, timestamps 1 s apart
    generate_log(path, quiet=True, records=6000, key_size=0, value_size=20,
                 records_per_batch=5, segment_bytes=1500, timestamp_step_ms=1000,
                 start_timestamp=1_700_000_000_000)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, resource.getrlimit(
        resource.RLIMIT_NOFILE)[1]))
    full = plan_read(parse_read_options({"path": path}))
    ranged = plan_read(parse_read_options({"path": path,
                                           "startingTimestamp": "1700005000000",
                                           "endingTimestamp": "1700005100000"}))
    print(json.dumps({"tasks": sum(len(g.tasks) for g in full.groups),
                      "ranged": [(t.offset_lo, t.offset_hi) for g in ranged.groups
                                 for t in g.tasks]}))
""")


def test_a_log_of_more_segments_than_open_files_is_planned(tmp_path):
    # Each mapped index holds a file descriptor: a planner that kept every segment's indexes
    # open failed with EMFILE on a tree of tens of thousands of segments.
    done = subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path / "log"), "100"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    segments = len(list((tmp_path / "log" / "events-0").glob("*.log")))
    assert segments > 100 and got["tasks"] == segments
    assert got["ranged"] and all(hi - lo == 100 for lo, hi in got["ranged"])
