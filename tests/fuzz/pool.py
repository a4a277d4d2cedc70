"""Persistent worker processes that run mutants under a time and memory limit.

Importing the package (numba kernels, pyarrow) takes seconds, so workers live across mutants.
A worker reports each stage as it starts (the mutation, then each tool), so when the watchdog
kills one over the time limit (a HANG) or the memory limit (MEMORY) the report says what it was
doing. The worker's peak RSS is reset before each mutant (/proc/self/clear_refs) so the growth
each mutant causes is measured on its own; the watchdog also samples RSS while it runs.
"""

from __future__ import annotations

import multiprocessing as mp
from multiprocessing.connection import wait
import os
from pathlib import Path
import shutil
import signal
import time

TIME_LIMIT = 20.0                    # seconds per mutant, all tools together
RSS_FLAG = 1024 * 1024 * 1024        # growth worth flagging
RSS_KILL = 4 * 1024 * 1024 * 1024    # growth at which the watchdog kills the worker


def _status_kb(pid: int | str, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _worker(conn, originals_root: str, work_root: str) -> None:
    # The parent decides when a worker dies; a Ctrl-C in the terminal is the parent's to handle.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Warnings are captured per read (oracle.py); nothing else should reach the terminal.
    import logging
    logging.getLogger().addHandler(logging.NullHandler())
    from tests.fuzz.originals import load_originals
    from tests.fuzz.oracle import read_rows, run_mutant

    originals = load_originals(originals_root)
    first = next(iter(originals.values()))
    read_rows(first.data, {})                 # warm the imports and the numba kernels
    work = Path(work_root) / f"w{os.getpid()}"
    conn.send(("ready", None))
    while True:
        spec = conn.recv()
        if spec is None:
            break
        _reset_peak()
        base = _status_kb("self", "VmRSS")
        started = time.monotonic()
        try:
            result = run_mutant(spec, originals, work,
                                hook=lambda stage: conn.send(("stage", stage)))
        except Exception as exc:    # noqa: BLE001 - a harness bug must not pass silently
            import traceback
            result = {"spec": spec, "harness_error": traceback.format_exc()[-2000:],
                      "outcome": "HARNESS ERROR", "tools": {}}
            print(f"harness error on {spec}: {exc!r}", flush=True)
        result["seconds"] = round(time.monotonic() - started, 3)
        result["rss_growth"] = max(0, _status_kb("self", "VmHWM") - base) * 1024
        conn.send(("result", result))
    shutil.rmtree(work, ignore_errors=True)


class _Slot:
    def __init__(self, ctx, originals_root: str, work_root: str):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child, originals_root, work_root),
                                daemon=True)
        self.proc.start()
        child.close()
        self.ready = False
        self.spec = None
        self.started = 0.0
        self.stage = None
        self.mutation = None
        self.base_rss = 0

    def kill(self) -> None:
        try:
            os.kill(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.join(5)


class WorkerPool:
    """`with WorkerPool(originals_root, workers) as pool: results = pool.run(specs)`."""

    def __init__(self, originals_root: str, workers: int = 2, time_limit: float = TIME_LIMIT,
                 work_root: str | None = None, rss_kill: int = RSS_KILL):
        self.originals_root = str(originals_root)
        self.workers = workers
        self.time_limit = time_limit
        self.rss_kill = rss_kill
        self.work_root = work_root or os.path.join(self.originals_root, "mutants")
        self.ctx = mp.get_context("spawn")
        self.slots: list[_Slot] = []
        self.restarts = 0

    def __enter__(self):
        os.makedirs(self.work_root, exist_ok=True)
        self.slots = [self._start() for _ in range(self.workers)]
        return self

    def __exit__(self, *exc):
        for slot in self.slots:
            try:
                slot.conn.send(None)
            except (OSError, BrokenPipeError):
                pass
        for slot in self.slots:
            slot.proc.join(10)
            if slot.proc.is_alive():
                slot.kill()
        shutil.rmtree(self.work_root, ignore_errors=True)

    def _start(self) -> _Slot:
        return _Slot(self.ctx, self.originals_root, self.work_root)

    def _replace(self, slot: _Slot) -> _Slot:
        slot.kill()
        shutil.rmtree(os.path.join(self.work_root, f"w{slot.proc.pid}"), ignore_errors=True)
        self.restarts += 1
        new = self._start()
        self.slots[self.slots.index(slot)] = new
        return new

    def _killed(self, slot: _Slot, outcome: str, why: str) -> dict:
        tools = {"watchdog": {"outcome": outcome, "why": why, "stage": slot.stage}}
        return {"spec": slot.spec, "mutation": slot.mutation, "operator": slot.spec.operator,
                "where": "", "identity": False, "tools": tools, "outcome": outcome,
                "seconds": round(time.monotonic() - slot.started, 3), "rss_growth": 0}

    def run(self, specs, progress=None) -> list[dict]:
        """Results in completion order; `progress(result, done, total)` after each one."""
        todo = list(reversed(specs))
        results = []
        total = len(specs)
        while todo or any(s.spec is not None for s in self.slots):
            for slot in list(self.slots):
                if slot.ready and slot.spec is None and todo:
                    slot.spec = todo.pop()
                    slot.started = time.monotonic()
                    slot.stage, slot.mutation = "mutating", None
                    slot.base_rss = _status_kb(slot.proc.pid, "VmRSS")
                    slot.conn.send(slot.spec)
            conns = {s.conn: s for s in self.slots}
            for conn in wait(list(conns), timeout=0.2):
                slot = conns[conn]
                try:
                    while conn.poll():
                        kind, payload = conn.recv()
                        if kind == "ready":
                            slot.ready = True
                        elif kind == "stage":
                            if payload[0] == "mutation":
                                slot.mutation = payload[1]
                            else:
                                slot.stage = payload[1]
                        elif kind == "result":
                            slot.spec = None
                            results.append(payload)
                            if progress:
                                progress(payload, len(results), total)
                except (EOFError, OSError):
                    # the worker died on its own (a crash in native code): count what it ran
                    if slot.spec is not None:
                        result = self._killed(slot, "BAD-ERROR", f"worker died (exit code "
                                                                 f"{slot.proc.exitcode})")
                        result["outcome"] = "BAD ERROR"
                        results.append(result)
                        if progress:
                            progress(result, len(results), total)
                    self._replace(slot)
            now = time.monotonic()
            for slot in list(self.slots):
                if slot.spec is None:
                    if not slot.ready and not slot.proc.is_alive():
                        raise RuntimeError(f"a fuzz worker failed to start (exit code "
                                           f"{slot.proc.exitcode})")
                    continue
                growth = (_status_kb(slot.proc.pid, "VmRSS") - slot.base_rss) * 1024
                if growth > self.rss_kill:
                    result = self._killed(slot, "MEMORY", f"RSS grew by {growth >> 20} MiB")
                elif now - slot.started > self.time_limit:
                    result = self._killed(slot, "HANG", f"over {self.time_limit:g} s")
                else:
                    continue
                results.append(result)
                if progress:
                    progress(result, len(results), total)
                self._replace(slot)
        return results
