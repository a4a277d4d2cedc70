"""A real Spark standalone cluster on this machine: a master and two workers, each its own JVM.

In `local[n]` mode tasks run inside the driver's JVM and share its Python daemon, so code that
only works there (state on the driver, paths relative to the driver's directory, a package
importable on the driver only) goes unnoticed. On this cluster every executor is a separate JVM
started by a worker, with Python workers of its own, as on a real cluster:

    with LocalCluster(log_dir) as cluster:
        spark = session_builder(cluster.master_url).getOrCreate()

Everything listens on 127.0.0.1 only. Each daemon's output goes to `log_dir/<name>.log`, and the
executors' output under `log_dir/work-<n>/` (the worker's work directory).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HOST = "127.0.0.1"


class ClusterError(RuntimeError):
    """The cluster could not start; the message ends with the tail of the daemons' logs."""


def free_port() -> int:
    # The port is free now; another process could take it before the JVM binds it, which then
    # fails the start with "Address already in use" in the master's log.
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def session_builder(master_url: str, executors: int = 2):
    """A SparkSession builder for a driver in this process that uses the cluster at `master_url`
    with `executors` executors of one core each (what a LocalCluster's workers offer)."""
    from pyspark.sql import SparkSession

    # The driver's JVM reads these from the environment when the session starts: Python data
    # source lookup runs this interpreter, and the JVM binds to loopback like the daemons.
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = HOST
    conf = {
        "spark.master": master_url,
        "spark.executor.cores": "1",
        "spark.executor.memory": "1g",
        "spark.cores.max": str(executors),
        "spark.driver.host": HOST,
        "spark.driver.bindAddress": HOST,
        # executors start Python workers with this interpreter, where segmentlog is installed
        "spark.pyspark.python": sys.executable,
        "spark.executorEnv.PYSPARK_PYTHON": sys.executable,
        # Jobs wait until every executor registered: otherwise the first ones may all run on
        # whichever executor came up first.
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "90s",
    }
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder


def executor_of_this_process() -> dict:
    """Called in a task: the pid of its Python worker, and the pid and executor id of the JVM
    that started it (the first `java` ancestor, whose command line names the executor; in local
    mode that is the driver's JVM, with no executor id). Linux only: it reads /proc."""
    pid = os.getpid()
    while pid > 1:
        if Path(f"/proc/{pid}/comm").read_text().strip() == "java":
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            executor_id = (argv[argv.index(b"--executor-id") + 1].decode()
                           if b"--executor-id" in argv else None)
            return {"python_pid": os.getpid(), "jvm_pid": pid, "executor_id": executor_id}
        pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    return {"python_pid": os.getpid(), "jvm_pid": None, "executor_id": None}


def require_java() -> None:
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        raise ClusterError("Spark needs Java 17 or later: there is no `java` on PATH and no "
                           "JAVA_HOME")


def parent_death_signal():
    """A function for `preexec_fn` that makes the kernel SIGKILL the child when the process that
    started the cluster dies without stopping it (SIGKILL, a crash), instead of leaking JVMs.
    (Strictly, when the thread that started it ends: stop the cluster from that thread.) Linux
    only. prctl is looked up here, so that the child, forked from a process that may run
    threads, makes only this one C call before exec."""
    if sys.platform != "linux":
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    return lambda: prctl(1, int(signal.SIGKILL))   # 1 = PR_SET_PDEATHSIG


class Service:
    """A thing of processes started on `__enter__` (start()) and stopped on `__exit__`
    (stop()), stopped too when starting fails half way."""

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


class LocalCluster(Service):
    """A standalone master and `workers` workers, started on `__enter__`, stopped on `__exit__`.

    Each worker offers `cores` cores and `memory` of executor memory. Starting waits until the
    master reports every worker alive, or raises ClusterError after `timeout` seconds.
    """

    def __init__(self, log_dir, *, workers: int = 2, cores: int = 1, memory: str = "1g",
                 timeout: float = 120.0):
        self.log_dir = Path(log_dir)
        self.workers, self.cores, self.memory, self.timeout = workers, cores, memory, timeout
        self.port, self.webui_port = free_port(), free_port()
        self.master_url = f"spark://{HOST}:{self.port}"   # what SparkSession.builder.master takes
        self.webui_url = f"http://{HOST}:{self.webui_port}"
        self._procs: list[tuple[str, subprocess.Popen]] = []

    def start(self) -> None:
        from pyspark.find_spark_home import _find_spark_home

        require_java()
        spark_home = _find_spark_home()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, SPARK_HOME=spark_home, SPARK_LOCAL_IP=HOST,
                   PYSPARK_PYTHON=sys.executable,
                   # the daemons only pass messages; their default 1 GiB heap each is wasted
                   SPARK_DAEMON_MEMORY="256m")
        spark_class = os.path.join(spark_home, "bin", "spark-class")
        self._launch("master", env, spark_class, "org.apache.spark.deploy.master.Master",
                     "--host", HOST, "--port", str(self.port),
                     "--webui-port", str(self.webui_port))
        for n in range(1, self.workers + 1):
            work_dir = self.log_dir / f"work-{n}"
            work_dir.mkdir(exist_ok=True)
            self._launch(f"worker-{n}", env, spark_class, "org.apache.spark.deploy.worker.Worker",
                         self.master_url, "--cores", str(self.cores), "--memory", self.memory,
                         "--work-dir", str(work_dir), "--host", HOST, "--webui-port", "0")
        self._wait_for_workers()

    def _launch(self, name: str, env: dict, *command: str) -> None:
        with open(self.log_dir / f"{name}.log", "wb") as log:
            # spark-class execs java, so this pid is the daemon's JVM itself
            proc = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, preexec_fn=parent_death_signal())
        self._procs.append((name, proc))

    def status(self) -> dict:
        """The master's view of the cluster (its web UI's JSON): workers, apps, cores."""
        with urllib.request.urlopen(f"{self.webui_url}/json/", timeout=5) as response:
            return json.load(response)

    def _wait_for_workers(self) -> None:
        deadline = time.monotonic() + self.timeout
        alive = 0
        while time.monotonic() < deadline:
            for name, proc in self._procs:
                if proc.poll() is not None:
                    self._fail(f"the {name} exited with status {proc.returncode}")
            try:
                alive = self.status().get("aliveworkers", 0)
            except (OSError, ValueError):   # the master's web UI is not up yet
                pass
            if alive >= self.workers:
                return
            time.sleep(0.5)
        self._fail(f"{alive} of {self.workers} workers registered within {self.timeout:.0f} s")

    def _fail(self, what: str) -> None:
        tails = []
        for name, _ in self._procs:
            lines = (self.log_dir / f"{name}.log").read_text(errors="replace").splitlines()
            tails.append(f"--- {name}.log (last lines) ---\n" + "\n".join(lines[-25:]))
        raise ClusterError(f"Spark standalone cluster at {self.master_url}: {what}\n"
                           + "\n".join(tails))

    def stop(self) -> None:
        """SIGTERM to every daemon (a worker stops its executors on the way out), then SIGKILL
        to any still running 15 s later."""
        procs = [p for _, p in reversed(self._procs) if p.poll() is None]
        for proc in procs:
            proc.terminate()
        deadline = time.monotonic() + 15
        for proc in procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs = []
