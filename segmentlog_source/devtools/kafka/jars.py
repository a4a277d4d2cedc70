"""The pinned jar sets of the Kafka tests, fetched from Maven Central into a cache outside the
repository (`~/.cache/segmentlog/jars/<set>/`, or $SEGMENTLOG_JARS/<set>/).

pom.xml (beside this module) names each set as a Maven profile; `mvn dependency:copy-dependencies`
copies its runtime closure into the set's folder. A set is used only when its folder holds a
`.complete` file, written after Maven succeeded, so a fetch killed half way is fetched again and
never half used; once complete, Maven is not run again (even an offline `mvn` costs 3-5 s).

A failed fetch leaves a `.failed` note with the reason: for FAILURE_MEMORY_S, other callers (the
test processes after `make test`'s fetch step) report that reason instead of waiting for Maven
to fail again. `fetch(force=True)` (the command line) always tries.

    python -m segmentlog_source.devtools.kafka.jars            # fetch every set
    python -m segmentlog_source.devtools.kafka.jars kafka      # one set
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

POM = Path(__file__).resolve().with_name("pom.xml")
COMPLETE = ".complete"
FAILED = ".failed"
FAILURE_MEMORY_S = 900
MAVEN_TIMEOUT_S = 900
CENTRAL = "https://repo.maven.apache.org/maven2"

KAFKA_VERSION = "4.4.0"
# Spark's Kafka connector for the PySpark 4.3.0 runtime: 4.3.0 is not on Maven Central, and the
# 4.2.0 connector works on 4.3.0 (batch and streaming reads, the sink; see the README).
SPARK_KAFKA_VERSION = "4.2.0"


@dataclass(frozen=True)
class JarSet:
    name: str       # what callers ask for
    profile: str    # the Maven profile in pom.xml
    folder: str     # the folder under the cache root
    jars: int       # about how many jars, and how many MB: for the progress line only
    megabytes: float


JAR_SETS = {
    "kafka": JarSet("kafka", "kafka-broker", f"kafka-{KAFKA_VERSION}", 47, 44.0),
    "spark-kafka": JarSet("spark-kafka", "spark-kafka", f"spark-kafka-{SPARK_KAFKA_VERSION}",
                          4, 9.5),
    "spark-avro": JarSet("spark-avro", "spark-avro", f"spark-avro-{SPARK_KAFKA_VERSION}", 1, 0.2),
    # LocalTieredStorage, Kafka's reference RemoteStorageManager, for a broker with tiered storage
    "kafka-tiered": JarSet("kafka-tiered", "kafka-tiered", f"kafka-tiered-{KAFKA_VERSION}", 1,
                           0.05),
}


class JarsUnavailable(RuntimeError):
    """A jar set is not in the cache and could not be fetched; the message says why."""


def cache_root() -> Path:
    env = os.environ.get("SEGMENTLOG_JARS")
    return Path(env) if env else Path.home() / ".cache" / "segmentlog" / "jars"


def folder(name: str) -> Path:
    return cache_root() / _jar_set(name).folder


def is_complete(name: str) -> bool:
    return (folder(name) / COMPLETE).is_file()


def jar_paths(name: str) -> list[Path]:
    """The jars of set `name`, fetched first when the cache does not hold them."""
    return sorted(fetch(name).glob("*.jar"))


def classpath(name: str) -> str:
    return str(fetch(name) / "*")


def fetch(name: str, force: bool = False) -> Path:
    """The folder of jar set `name`, complete; runs Maven (once, under a lock) when needed."""
    jar_set = _jar_set(name)
    out = cache_root() / jar_set.folder
    if (out / COMPLETE).is_file():
        return out
    out.mkdir(parents=True, exist_ok=True)
    with open(out.with_name(out.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be fetching the same set
        if (out / COMPLETE).is_file():
            return out
        failed = out / FAILED
        if not force and failed.is_file() and time.time() - failed.stat().st_mtime \
                < FAILURE_MEMORY_S:
            raise JarsUnavailable(failed.read_text())
        for partial in out.glob("*.jar"):  # a killed fetch's leftovers may be truncated
            partial.unlink()
        try:
            _run_maven(jar_set, out)
        except JarsUnavailable as err:
            failed.write_text(str(err))
            raise
        failed.unlink(missing_ok=True)
    return out


def _jar_set(name: str) -> JarSet:
    try:
        return JAR_SETS[name]
    except KeyError:
        raise ValueError(f"unknown jar set {name!r}: one of {', '.join(JAR_SETS)}") from None


def _run_maven(jar_set: JarSet, out: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsUnavailable(
            f"jar set {jar_set.folder} is not in {out.parent} and there is no `mvn` on PATH to "
            f"fetch it from Maven Central (install Maven 3.6.3+, or copy the jars of "
            f"{POM} profile {jar_set.profile} there and create {out / COMPLETE})")
    # Not -q: the "Downloaded from central" lines feed the progress line.
    cmd = [mvn, "-B", "-f", str(POM), "-P", jar_set.profile,
           f"-Djars.root={out.parent}", "dependency:copy-dependencies"]
    started = time.monotonic()
    progress = _Progress(jar_set, started)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace")
    timed_out = threading.Event()
    watchdog = threading.Timer(MAVEN_TIMEOUT_S, lambda: (timed_out.set(), proc.kill()))
    watchdog.start()
    progress.start()
    output: deque[str] = deque(maxlen=200)
    try:
        for line in proc.stdout:
            output.append(line.rstrip("\n"))
            progress.saw(line)
        proc.wait()
    finally:
        watchdog.cancel()
        progress.stop()
    if timed_out.is_set():
        raise JarsUnavailable(f"fetching jar set {jar_set.folder} with Maven took more than "
                              f"{MAVEN_TIMEOUT_S} s: is {CENTRAL} reachable?")
    if proc.returncode != 0:
        raise JarsUnavailable(_maven_failure(jar_set, list(output)))
    jars = sorted(p.name for p in out.glob("*.jar"))
    if not jars:
        raise JarsUnavailable(f"Maven copied no jars into {out} (profile {jar_set.profile})")
    size = sum((out / j).stat().st_size for j in jars) / 1e6
    (out / COMPLETE).write_text("".join(j + "\n" for j in jars))
    _say(f"jar set {jar_set.folder}: {len(jars)} jars, {size:.1f} MB, in "
         f"{time.monotonic() - started:.1f} s ({progress.files} files, "
         f"{progress.megabytes:.1f} MB downloaded) -> {out}")


_UNREACHABLE = ("Unknown host", "UnknownHostException", "Network is unreachable",
                "Connection refused", "connect timed out", "Read timed out",
                "Could not transfer artifact", "No route to host", "offline mode")


def _maven_failure(jar_set: JarSet, output: list[str]) -> str:
    errors = [line for line in output if line.startswith("[ERROR]")] or output
    tail = "\n".join(errors[-15:])
    if any(s in line for line in output for s in _UNREACHABLE):
        return (f"Maven Central ({CENTRAL}) is unreachable, so jar set {jar_set.folder} "
                f"(needed by the Kafka tests) cannot be fetched. Fix the network (or Maven's "
                f"proxy settings in ~/.m2/settings.xml) and run `make test` again. Maven said:\n"
                f"{tail}")
    return f"Maven failed to fetch jar set {jar_set.folder} (profile {jar_set.profile}):\n{tail}"


# Batch mode (-B) prefixes Maven's lines with the level: "[INFO] Downloaded from central: ..."
_DOWNLOADED = re.compile(
    r"^(?:\[INFO\] )?Downloaded from \S+: \S+ \((\d+(?:\.\d+)?) (B|kB|MB|GB) at")
_UNITS = {"B": 1e-6, "kB": 1e-3, "MB": 1.0, "GB": 1e3}


class _Progress:
    """One progress line while Maven runs: files downloaded so far and their size. On a
    terminal it rewrites itself; elsewhere (CI logs) it prints a line every 10 s."""

    def __init__(self, jar_set: JarSet, started: float):
        self.jar_set, self.started = jar_set, started
        self.files, self.megabytes = 0, 0.0
        self.tty = sys.stderr.isatty()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        _say(f"fetching jar set {self.jar_set.folder} (about {self.jar_set.jars} jars, "
             f"{self.jar_set.megabytes:.0f} MB, plus Maven's plugin on a first run) from "
             f"Maven Central ...")
        self.thread.start()

    def saw(self, line: str) -> None:
        match = _DOWNLOADED.match(line)
        if match:
            self.files += 1
            self.megabytes += float(match.group(1)) * _UNITS[match.group(2)]

    def stop(self) -> None:
        self.done.set()
        self.thread.join()
        if self.tty:
            sys.stderr.write("\n")

    def _run(self) -> None:
        interval = 0.5 if self.tty else 10.0
        while not self.done.wait(interval):
            text = (f"  {self.jar_set.folder}: {self.files} files downloaded, "
                    f"{self.megabytes:.1f} MB, {time.monotonic() - self.started:.0f} s")
            if self.tty:
                sys.stderr.write("\r" + text)
                sys.stderr.flush()
            else:
                _say(text)


def _say(message: str) -> None:
    print(f"[segmentlog kafka] {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    names = (sys.argv[1:] if argv is None else argv) or list(JAR_SETS)
    status = 0
    for name in names:
        try:
            path = fetch(name, force=True)
        except (JarsUnavailable, ValueError) as err:
            _say(f"FAILED: {err}")
            status = 1
        else:
            _say(f"jar set {name}: ready in {path}")
    return status


if __name__ == "__main__":
    sys.exit(main())
