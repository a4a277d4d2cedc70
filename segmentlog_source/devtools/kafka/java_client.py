"""KafkaClient.java (beside this module) as a Python call: compiled once per source and Kafka
version into `~/.cache/segmentlog/classes/`, then run with a list of commands in one JVM.

    client = KafkaClient(broker.bootstrap)
    answers = client.run([["create-topic", "orders", "--partitions", "2"],
                          ["produce", "orders", "--codec", "zstd", "--count", "100"]])
    # -> [{"line": 1, "op": "create-topic", "topic": "orders", "topicId": "...", ...}, ...]

The commands and what each answers are listed at the top of KafkaClient.java.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from . import jars
from .jvm import javac, run_java

SOURCE = Path(__file__).resolve().with_name("KafkaClient.java")
MAIN_CLASS = "KafkaClient"


class KafkaClientError(RuntimeError):
    """A command failed (the message holds the command and the client's stderr tail)."""


def compiled_classes() -> Path:
    """The folder of KafkaClient's classes, compiling the source when it changed."""
    source = SOURCE.read_bytes()
    digest = hashlib.sha256(source + jars.KAFKA_VERSION.encode()).hexdigest()[:16]
    out = jars.cache_root().parent / "classes" / f"kafka-client-{digest}"
    if (out / f"{MAIN_CLASS}.class").is_file():
        return out
    tmp = out.with_name(f"{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    result = subprocess.run([javac(), "-nowarn", "-encoding", "UTF-8", "-d", str(tmp),
                             "-cp", jars.classpath("kafka"), str(SOURCE)],
                            capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise KafkaClientError(f"javac {SOURCE.name} failed:\n{result.stdout}{result.stderr}")
    try:
        tmp.rename(out)  # another process may have won the race: its classes are the same
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


class KafkaClient:
    def __init__(self, bootstrap: str, *, timeout: float = 300):
        self.bootstrap = bootstrap
        self.timeout = timeout
        self.last_seconds = 0.0  # how long the last run took (JVM start included)

    def run(self, commands: list[list[str]], *, keep_going: bool = False) -> list[dict]:
        """Run `commands` in one JVM; their answers, in order (one command may answer with
        several objects, e.g. list-offsets with one per partition). `keep_going`: a failing
        command answers {"op": "failed", "error": ...} instead of ending the run."""
        script = "\n".join(" ".join(str(word) for word in command) for command in commands)
        classpath = f"{compiled_classes()}{os.pathsep}{jars.classpath('kafka')}"
        args = ["--bootstrap", self.bootstrap] + (["--keep-going"] if keep_going else [])
        started = time.monotonic()
        result = run_java(MAIN_CLASS, args, classpath,
                          timeout=self.timeout, stdin=script,
                          jvm_flags=("-Dlog4j2.level=WARN",))
        self.last_seconds = time.monotonic() - started
        # KafkaClient escapes everything outside ASCII, so its answers are one per b"\n"
        answers = [json.loads(row) for row in result.stdout.split(b"\n") if row.startswith(b"{")]
        if result.returncode != 0:
            done = answers[-1]["line"] if answers else 0
            failed = commands[done] if done < len(commands) else commands[-1]
            raise KafkaClientError(
                f"KafkaClient failed (exit {result.returncode}) at command {done + 1} of "
                f"{len(commands)}: {' '.join(map(str, failed))}\n"
                f"{result.stderr.decode('utf-8', 'replace')[-4000:]}")
        return answers

    def one(self, *command: str) -> list[dict]:
        return self.run([list(command)])
