"""A Spark Connect server on this machine: PySpark's own server, as its own JVM process.

    with ConnectServer(log_dir) as server:
        spark = SparkSession.builder.remote(server.url).create()

The server is `org.apache.spark.sql.connect.service.SparkConnectServer` from the jars the
installed pyspark ships (pyspark/jars/spark-connect_*.jar), started through pyspark's
`bin/spark-submit` (what `sbin/start-connect-server.sh` of a Spark distribution runs; pip's
pyspark has no sbin/) with a `local[n]` master, listening on 127.0.0.1 only, on a free port.
Its Python processes (the data source planner and lookup, the executors' workers) run this
interpreter, so a package installed here is installed on the server: Spark's discovery of
`pyspark_*` modules finds `segmentlog` on the server with no register() call. The server's
output goes to `log_dir/connect-server.log`; its warehouse and scratch space under `log_dir`.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from .local_cluster import (HOST, ClusterError, Service, free_port, parent_death_signal,
                            require_java)

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


class ConnectServer(Service):
    """A Spark Connect server started on `__enter__` (or start()), stopped on `__exit__`.

    Starting waits until the server listens on its port, or raises ClusterError (with the
    tail of its log) when it exits or `timeout` seconds pass first. The listener must be the
    server's own socket (on Linux, /proc says whose it is): another process may take the port
    between free_port() and the JVM binding it, and its listener is no server. If the server
    then exits with "Address already in use", it is started once more on another port. If the
    process that started it dies without stopping it, the kernel kills the server (Linux).
    """

    def __init__(self, log_dir, *, master: str = "local[2]", memory: str = "1g",
                 timeout: float = 120.0, conf: dict[str, str] | None = None):
        self.log_dir = Path(log_dir)
        self.master, self.memory, self.timeout = master, memory, timeout
        self.conf = dict(conf or {})
        self.port = free_port()
        self.url = f"sc://{HOST}:{self.port}"   # what SparkSession.builder.remote takes
        self.log_file = self.log_dir / "connect-server.log"
        self._proc: subprocess.Popen | None = None

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def start(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for attempt in (1, 2):
            command, env = self._command()
            with open(self.log_file, "wb") as log:
                # spark-submit execs spark-class, which execs java: this pid is the server's JVM
                self._proc = subprocess.Popen(command, env=env, cwd=self.log_dir,
                                              stdin=subprocess.DEVNULL, stdout=log,
                                              stderr=subprocess.STDOUT,
                                              preexec_fn=parent_death_signal())
            try:
                self._wait_until_listening()
                return
            except ClusterError:
                if attempt == 2 or not self._port_was_taken():
                    raise
            # another process took the port before the server bound it: once more, elsewhere
            self.stop()
            self.port = free_port()
            self.url = f"sc://{HOST}:{self.port}"

    def _port_was_taken(self) -> bool:
        """The server's log says its port was in use (gRPC: "Failed to bind to address
        /127.0.0.1:<port>" caused by "Address already in use")."""
        tail = self.log_tail(200) if self.log_file.exists() else ""
        return "address already in use" in tail.lower() and f":{self.port}" in tail

    def _command(self) -> tuple[list[str], dict[str, str]]:
        from pyspark.find_spark_home import _find_spark_home

        require_java()
        spark_home = _find_spark_home()
        conf = {
            "spark.connect.grpc.binding.address": HOST,
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.driver.host": HOST,
            "spark.driver.bindAddress": HOST,
            "spark.ui.enabled": "false",
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.shuffle.partitions": "2",
            "spark.sql.warehouse.dir": str(self.log_dir / "warehouse"),
            "spark.local.dir": str(self.log_dir / "scratch"),
            "spark.pyspark.python": sys.executable,
            "spark.pyspark.driver.python": sys.executable,
            **self.conf,
        }
        command = [os.path.join(spark_home, "bin", "spark-submit"), "--class", SERVER_CLASS,
                   "--name", "segmentlog Spark Connect server", "--master", self.master,
                   "--driver-memory", self.memory]
        for key, value in conf.items():
            command += ["--conf", f"{key}={value}"]
        # The JVM reads these when it looks up Python data sources (discovery of pyspark_*
        # modules): it runs PYSPARK_DRIVER_PYTHON, else PYSPARK_PYTHON.
        env = {k: v for k, v in os.environ.items()
               if k not in ("SPARK_REMOTE", "SPARK_LOCAL_REMOTE", "SPARK_CONNECT_MODE_ENABLED",
                            "SPARK_API_MODE")}
        env.update(SPARK_HOME=spark_home, SPARK_LOCAL_IP=HOST, PYSPARK_PYTHON=sys.executable,
                   PYSPARK_DRIVER_PYTHON=sys.executable)
        return command, env

    def _wait_until_listening(self) -> None:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                self._fail(f"the server exited with status {self._proc.returncode}")
            if self._port_was_taken():
                self._fail(f"another process took port {self.port} first")
            if self._listening():
                return
            time.sleep(0.25)
        self._fail(f"the server did not listen on {HOST}:{self.port} within "
                   f"{self.timeout:.0f} s")

    def _listening(self) -> bool:
        """The server's own socket listens on the port. Where /proc does not say whose a
        socket is (not Linux), any listener counts."""
        owned = listener_of(self._proc.pid, self.port)
        if owned is not None:
            return owned
        try:
            with socket.create_connection((HOST, self.port), timeout=1):
                return True
        except OSError:
            return False

    def log_tail(self, n: int = 40) -> str:
        lines = self.log_file.read_text(errors="replace").splitlines()
        return "\n".join(lines[-n:])

    def _fail(self, what: str) -> None:
        raise ClusterError(f"Spark Connect server {self.url}: {what}\n"
                           f"--- {self.log_file.name} (last lines) ---\n{self.log_tail()}")

    def stop(self) -> None:
        """SIGTERM (the server stops its SparkContext and Python workers), then SIGKILL if it is
        still running 15 s later."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


_LISTEN = "0A"   # the state of a listening socket in /proc/net/tcp


def listener_of(pid: int, port: int) -> bool | None:
    """Whether process `pid` owns a socket listening on TCP `port` (on any address); None when
    /proc cannot say (not Linux)."""
    inodes, tables = set(), 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        tables += 1
        for row in rows:
            fields = row.split()
            # sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            if (len(fields) > 9 and fields[3] == _LISTEN
                    and int(fields[1].rsplit(":", 1)[1], 16) == port):
                inodes.add(f"socket:[{fields[9]}]")
    if not tables or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:    # exited (its exit status says more)
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                return True
        except OSError:    # closed meanwhile
            continue
    return False
