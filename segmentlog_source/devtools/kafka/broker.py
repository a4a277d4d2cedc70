"""One Kafka broker for tests: a single KRaft node (broker and controller in one JVM) on loopback.

    broker = KafkaBroker(workdir)
    broker.start()               # StorageTool format on first use, then start and wait until ready
    broker.bootstrap             # "127.0.0.1:<port>"
    broker.stop()                # SIGTERM: a clean shutdown, which writes .kafka_cleanshutdown
    broker.start()               # the same data, same ports
    broker.kill()                # SIGKILL: no marker, so the next start recovers every log

`workdir` holds server.properties, log4j2.properties, data/ (log.dirs) and logs/ (server.log,
the broker's own log; broker.out, the JVM's output; format.out). Nothing is ever deleted: when a
test fails, its broker's files are there to read, and `log_tail()` is in every start error.
A broker left running when the Python process exits is killed (atexit).
"""

from __future__ import annotations

import atexit
import base64
import os
import signal
import struct
import subprocess
import time
from pathlib import Path

from . import jars
from .jvm import java
from .readiness import HOST, free_ports, metadata

START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 60.0
CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"

# The broker's own log, at INFO for Kafka (log loading, recovery, truncation are all INFO/WARN).
_LOG4J2 = """\
status = warn
name = segmentlog-test-broker
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = ${sys:segmentlog.broker.log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.raft.name = org.apache.kafka.raft
logger.raft.level = WARN
"""

_RUNNING: set["KafkaBroker"] = set()


@atexit.register
def _kill_leftovers() -> None:
    for broker in list(_RUNNING):
        broker.kill()


class BrokerError(RuntimeError):
    """The broker could not be formatted or started; the message ends with its log's tail."""


class KafkaBroker:
    def __init__(self, workdir: str | Path, *, node_id: int = 1, heap: str = "768m",
                 props: dict[str, str] | None = None):
        self.workdir = Path(workdir).resolve()
        self.node_id = node_id
        self.heap = heap
        self.extra_props = dict(props or {})
        self.broker_port, self.controller_port = free_ports(2)
        self.proc: subprocess.Popen | None = None
        self.timings: dict[str, float] = {}
        self._log_mark = 0

    # -- where things are ------------------------------------------------------------------
    @property
    def data_dir(self) -> Path:
        return self.workdir / "data"

    @property
    def log_file(self) -> Path:
        return self.workdir / "logs" / "server.log"

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.broker_port}"

    @property
    def clean_shutdown_marker(self) -> Path:
        return self.data_dir / CLEAN_SHUTDOWN_MARKER

    def partition_dir(self, topic: str, partition: int = 0) -> Path:
        return self.data_dir / f"{topic}-{partition}"

    def stray_dirs(self) -> list[Path]:
        """Partition directories the broker moved aside (`<topic>-<p>.<hex>-stray`): a copied-in
        directory whose topic id it does not know. It serves an empty partition instead."""
        return sorted(p for p in self.data_dir.iterdir() if p.name.endswith("-stray"))

    # -- configuration ---------------------------------------------------------------------
    def properties(self) -> dict[str, str]:
        listeners = (f"PLAINTEXT://{HOST}:{self.broker_port},"
                     f"CONTROLLER://{HOST}:{self.controller_port}")
        props = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            # static voters: `format` needs no --standalone, and kraft.version stays 0
            "controller.quorum.voters": f"{self.node_id}@{HOST}:{self.controller_port}",
            "listeners": listeners,
            "advertised.listeners": f"PLAINTEXT://{HOST}:{self.broker_port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir),
            "num.partitions": "1",
            "auto.create.topics.enable": "false",
            # one node: internal topics with one replica, and one partition each (not 50)
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "share.coordinator.state.topic.num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0",
            # two cores: few threads, and a 16 MiB cleaner buffer instead of 128 MiB of heap
            "num.network.threads": "1",
            "num.io.threads": "2",
            "background.threads": "2",
            "num.recovery.threads.per.data.dir": "1",
            "log.cleaner.threads": "1",
            "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
            "log.cleaner.backoff.ms": "200",
            # Copied-in segments often carry old timestamps; the default 7-day retention would
            # delete them about 30 s after start. Keep everything.
            "log.retention.ms": "-1",
            # After a SIGKILL the next start waits for the old registration to expire (9 s by
            # default): 3 s makes that restart twice as fast.
            "broker.session.timeout.ms": "3000",
            "broker.heartbeat.interval.ms": "500",
            # KRaft snapshots of the running cluster's metadata (a .checkpoint in
            # __cluster_metadata-0) 2 s after new records, not an hour
            "metadata.log.max.snapshot.interval.ms": "2000",
        }
        props.update(self.extra_props)
        return props

    def _write_config(self) -> None:
        (self.workdir / "logs").mkdir(parents=True, exist_ok=True)
        text = "".join(f"{k}={v}\n" for k, v in self.properties().items())
        (self.workdir / "server.properties").write_text(text)
        (self.workdir / "log4j2.properties").write_text(_LOG4J2)

    def _jvm(self, heap: str) -> list[str]:
        return [java(), f"-Xmx{heap}", "-Xms128m", "-XX:+UseG1GC", "-Djava.awt.headless=true",
                f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}",
                f"-Dsegmentlog.broker.log={self.log_file}", "-cp", jars.classpath("kafka")]

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def formatted(self) -> bool:
        return (self.data_dir / "meta.properties").is_file()

    def format(self) -> None:
        """StorageTool format with a new cluster id (static voters: plain `format`)."""
        self._write_config()
        started = time.monotonic()
        result = subprocess.run(
            self._jvm("256m") + ["kafka.tools.StorageTool", "format", "-t", new_cluster_id(),
                                 "-c", str(self.workdir / "server.properties")],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=180)
        self.timings["format"] = time.monotonic() - started
        (self.workdir / "logs" / "format.out").write_text(result.stdout)
        if result.returncode != 0:
            raise BrokerError(f"StorageTool format failed (exit {result.returncode}) in "
                              f"{self.workdir}:\n{result.stdout[-3000:]}")

    def start(self, timeout: float = START_TIMEOUT_S) -> "KafkaBroker":
        if self.running:
            raise BrokerError(f"the broker in {self.workdir} is already running")
        if not self.formatted:
            self.format()
        self._write_config()
        self._log_mark = self.log_file.stat().st_size if self.log_file.exists() else 0
        started = time.monotonic()
        with open(self.workdir / "logs" / "broker.out", "ab") as out:
            self.proc = subprocess.Popen(
                self._jvm(self.heap) + ["kafka.Kafka", str(self.workdir / "server.properties")],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        _RUNNING.add(self)
        try:
            self._wait_ready(started + timeout)
        except BaseException:
            self.kill()
            raise
        self.timings["start"] = time.monotonic() - started
        return self

    def _wait_ready(self, deadline: float) -> None:
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise BrokerError(f"the broker exited with {self.proc.returncode} while "
                                  f"starting\n{self.log_tail()}")
            try:
                answer = metadata(self.broker_port)
                if answer["controller_id"] >= 0 and any(
                        b[0] == self.node_id for b in answer["brokers"]):
                    return
            except (OSError, struct.error) as err:
                last_error = err
            time.sleep(0.05)
        raise BrokerError(f"the broker was not ready in time (last error: {last_error})\n"
                          f"{self.log_tail()}")

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> bool:
        """SIGTERM, then SIGKILL after `timeout`; True when the broker shut down by itself
        (and so wrote the clean-shutdown marker)."""
        if not self.running:
            _RUNNING.discard(self)
            return True
        started = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
            clean = True
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            clean = False
        self.timings["stop"] = time.monotonic() - started
        _RUNNING.discard(self)
        return clean

    def kill(self) -> None:
        """SIGKILL: no clean-shutdown marker, so the next start recovers every log."""
        if self.running:
            self.proc.kill()
            self.proc.wait()
        _RUNNING.discard(self)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.running else None

    # -- what it said ----------------------------------------------------------------------
    def log_since_start(self) -> list[str]:
        """The lines of server.log written since the last start() began."""
        if not self.log_file.exists():
            return []
        with open(self.log_file, "rb") as f:
            f.seek(self._log_mark)
            return f.read().decode("utf-8", "replace").split("\n")

    def log_tail(self, n: int = 60) -> str:
        parts = []
        for path in (self.log_file, self.workdir / "logs" / "broker.out"):
            if path.exists():
                lines = path.read_text(errors="replace").split("\n")[-n:]
                parts.append(f"--- {path} (last {len(lines)} lines) ---\n" + "\n".join(lines))
        return "\n".join(parts) or f"(no logs in {self.workdir / 'logs'})"

    def __enter__(self) -> "KafkaBroker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def new_cluster_id() -> str:
    """A Kafka Uuid string (22 characters of URL-safe base64). StorageTool's argument parser
    takes one starting with '-' for a flag, so such ids are never chosen."""
    while True:
        text = base64.urlsafe_b64encode(os.urandom(16)).decode("ascii").rstrip("=")
        if not text.startswith("-"):
            return text

