"""Run a child Python module, SIGKILL it at a moment chosen from its output, return its output."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[2]


def run_until_killed(module: str, args: list[str],
                     kill_delay: Callable[[bytes], float | None]) -> list[str]:
    """Start `python -m module args...`; once `kill_delay(output so far)` returns a delay, kill
    the child that many seconds later (or when it has been silent for 30 s). Returns the whole
    lines it printed: what it reported before it died."""
    child = subprocess.Popen([sys.executable, "-m", module, *args], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, deadline = b"", None
    try:
        while True:
            timeout = 30.0 if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([child.stdout], [], [], timeout)
            if not ready:
                break
            chunk = os.read(child.stdout.fileno(), 65536)
            if not chunk:
                raise AssertionError(f"{module} died on its own: {child.stderr.read().decode()}")
            out += chunk
            if deadline is None:
                delay = kill_delay(out)
                if delay is not None:
                    deadline = time.monotonic() + delay
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    out += child.stdout.read()
    child.stdout.close()
    child.stderr.close()
    return out.decode().split("\n")[:-1]
