"""The test server is PySpark's own Connect server in a JVM of its own, and it never outlives
the process that started it, not even one killed with SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("connect")]


def _argv(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


def test_the_server_is_a_jvm_of_its_own(connect, connect_server):
    argv = _argv(connect_server.pid)
    assert Path(f"/proc/{connect_server.pid}/comm").read_text().strip() == "java"
    assert "org.apache.spark.sql.connect.service.SparkConnectServer" in argv
    assert connect_server.pid != os.getpid()
    assert connect.range(3).count() == 3


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"


def test_a_server_dies_with_the_process_that_started_it(tmp_path):
    child = subprocess.Popen([sys.executable, "-m", "tests.connect.server_child", str(tmp_path)],
                             cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline()
        assert line.startswith("server "), line
        server = int(line.split()[1])
        assert "org.apache.spark.sql.connect.service.SparkConnectServer" in _argv(server)
    finally:
        child.send_signal(signal.SIGKILL)   # no cleanup code of the child's runs
        child.wait()
    deadline = time.monotonic() + 60
    while not _gone(server) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _gone(server), f"the server (pid {server}) outlived the process that started it"
