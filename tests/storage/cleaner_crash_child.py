"""The log manager test_cleaner_crash.py kills: compaction or retention of a data directory,
in a process of its own that SIGKILLs itself just before its N-th change to the file system.

Every call that changes a file or a directory entry goes through one of the `os` functions
wrapped here (local.py is the only module that touches data files, and it calls them through
`os.`): file creation, pwrite, (f)truncate, utime, replace/rename, remove. Counting them gives
every state the swap protocol can leave behind (`.cleaned` half written, `.cleaned` -> `.swap`,
old -> `.deleted`, `.swap` -> live, snapshots, checkpoints). fsyncs are neither counted nor
made: a process crash loses nothing the kernel already has. An uninterrupted run (KILL_AT 0)
lists the changes, `op name` a line, in TRACE: the test picks its kill points from it.
"""

from __future__ import annotations

import os
import signal
import sys
import traceback

from segmentlog_source.storage.log.log_manager import LogManager

TOPIC = "orders"
SEGMENT_BYTES = 2500
DELETE_RETENTION_MS = 3_600_000
START_MS = 1_700_000_000_000       # the first record's timestamp
SETUP_NOW_MS = START_MS + 86_400_000
# The killed compaction runs well past the horizons the setup's cleaning gave its tombstones
# and markers (so it removes them), yet sets new horizons it does not reach itself: a rerun
# after a crash then decides every record as an uninterrupted run does.
CRASH_NOW_MS = SETUP_NOW_MS + 10 * DELETE_RETENTION_MS
DEDUPE_BUFFER_BYTES = 1024         # 37 keys a pass: compaction needs several passes

COMPACT_OVERRIDES = {"cleanup.policy": "compact", "segment.bytes": str(SEGMENT_BYTES),
                     "delete.retention.ms": str(DELETE_RETENTION_MS)}
RETAIN_OVERRIDES = {"cleanup.policy": "delete", "segment.bytes": str(SEGMENT_BYTES),
                    "retention.bytes": str(5 * SEGMENT_BYTES), "retention.ms": "-1"}
# every segment is older than this: retention rolls a new active segment, then deletes all
RETAIN_ALL_OVERRIDES = {"cleanup.policy": "delete", "segment.bytes": str(SEGMENT_BYTES),
                        "retention.ms": "1000"}


def overrides(mode: str) -> dict[str, str]:
    return {"compact": COMPACT_OVERRIDES, "retain": RETAIN_OVERRIDES,
            "retain-all": RETAIN_ALL_OVERRIDES}[mode]


def manager(data_dir: str, mode: str, now_ms: int = CRASH_NOW_MS) -> LogManager:
    return LogManager(data_dir, overrides=overrides(mode), clock_ms=lambda: now_ms,
                      dedupe_buffer_bytes=DEDUPE_BUFFER_BYTES)


def run(data_dir: str, mode: str, now_ms: int = CRASH_NOW_MS) -> None:
    log_manager = manager(data_dir, mode, now_ms)
    if mode == "compact":
        log_manager.compact()
    else:
        log_manager.retain()


class _Counter:
    def __init__(self, kill_at: int, data_dir: str):
        self.kill_at, self.count, self.trace, self.data_dir = kill_at, 0, [], data_dir

    def step(self, op: str, name) -> None:
        self.count += 1
        if self.count == self.kill_at or self.kill_at == 0:
            step = f"{op} {name() if callable(name) else os.path.basename(name)}"
            self.trace.append(step)
        if self.count == self.kill_at:
            # Where it died, for the test to match with the trace (written with the builtin
            # open, which the wrappers do not see: no change of the log's).
            with open(self.data_dir + ".killed-at", "w") as f:
                f.write(step)
            os.kill(os.getpid(), signal.SIGKILL)


def _fd_name(fd: int):
    return lambda: os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))


def install(counter: _Counter) -> None:
    real = {name: getattr(os, name) for name in
            ("open", "pwrite", "ftruncate", "truncate", "utime", "replace", "rename", "remove",
             "unlink")}

    def open_(path, flags, *args, **kwargs):
        if flags & os.O_CREAT and not os.path.lexists(path):
            counter.step("create", path)
        return real["open"](path, flags, *args, **kwargs)

    def pwrite(fd, data, position):
        counter.step("pwrite", _fd_name(fd))
        return real["pwrite"](fd, data, position)

    def ftruncate(fd, size):
        counter.step("truncate", _fd_name(fd))
        return real["ftruncate"](fd, size)

    def truncate(path, size):
        counter.step("truncate", path)
        return real["truncate"](path, size)

    def utime(path, *args, **kwargs):
        counter.step("utime", path)
        return real["utime"](path, *args, **kwargs)

    def renamer(name):
        def rename(src, dst, *args, **kwargs):
            counter.step("rename", lambda: f"{os.path.basename(src)} {os.path.basename(dst)}")
            return real[name](src, dst, *args, **kwargs)
        return rename

    def remover(name):
        def remove(path, *args, **kwargs):
            if os.path.lexists(path):   # removing what is not there changes nothing
                counter.step("remove", path)
            return real[name](path, *args, **kwargs)
        return remove

    os.open, os.pwrite, os.ftruncate, os.truncate, os.utime = (open_, pwrite, ftruncate,
                                                               truncate, utime)
    os.replace, os.rename = renamer("replace"), renamer("rename")
    os.remove, os.unlink = remover("remove"), remover("unlink")
    # Nothing a process crash can lose waits for an fsync; skipping them keeps kills cheap.
    os.fsync = lambda fd: None


def serve() -> None:
    """Run jobs as stdin asks, `DATA_DIR<TAB>MODE<TAB>KILL_AT<TAB>TRACE` a line, each in a
    process forked from this one (the imports are done once: a kill costs milliseconds, not a
    Python start). KILL_AT `warm`: the job runs in this process, uncounted, so that the forks
    inherit the kernels it loaded. TRACE `-`: none is written. Answers `killed`, or
    `exit <status>` (a failure's traceback is written to DATA_DIR + ".error")."""
    for line in sys.stdin:
        data_dir, mode, kill_at, trace_path = line.rstrip("\n").split("\t")
        if kill_at == "warm":
            print(f"exit {_job(data_dir, mode, None, trace_path)}", flush=True)
            continue
        pid = os.fork()
        if pid == 0:
            os._exit(_job(data_dir, mode, int(kill_at), trace_path))
        _, status = os.waitpid(pid, 0)
        killed = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        print("killed" if killed else f"exit {os.waitstatus_to_exitcode(status)}", flush=True)


def _job(data_dir: str, mode: str, kill_at: int | None, trace_path: str) -> int:
    """Run the job, counting its changes (unless kill_at is None); 0, or 1 on an error."""
    try:
        if kill_at is not None:
            counter = _Counter(kill_at, data_dir)
            install(counter)
        run(data_dir, mode)
        if kill_at == 0 and trace_path != "-":
            with open(trace_path, "w") as f:
                f.write("".join(line + "\n" for line in counter.trace))
        return 0
    except BaseException:
        with open(data_dir + ".error", "w") as f:
            f.write(traceback.format_exc())
        return 1


if __name__ == "__main__":
    serve()
