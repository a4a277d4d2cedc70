"""Finding `java` and `javac`, and running one short-lived JVM (a tool, not the broker)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

# Keys, values and file names go through stdout as text: always UTF-8, whatever the locale
# (Java 17 otherwise encodes System.out with the platform charset, '?' for the rest).
UTF8_FLAGS = ("-Dfile.encoding=UTF-8", "-Dsun.stdout.encoding=UTF-8",
              "-Dsun.stderr.encoding=UTF-8")
# A tool runs for a second or two: start fast rather than optimise.
SHORT_LIVED_FLAGS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
                     "-Djava.awt.headless=true")


class JavaNotFound(RuntimeError):
    pass


def java() -> str:
    return _tool("java")


def javac() -> str:
    return _tool("javac")


def _tool(name: str) -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / name).is_file():
        return str(Path(home) / "bin" / name)
    found = shutil.which(name)
    if found is None:
        raise JavaNotFound(f"`{name}` not found: the Kafka tests need a JDK 17 or later "
                           "(set JAVA_HOME or put it on PATH)")
    return found


def run_java(main: str, args: list[str], classpath: str, *, heap: str = "256m",
             timeout: float = 300, jvm_flags: tuple[str, ...] = (),
             stdin: str | None = None) -> subprocess.CompletedProcess:
    """Run `main` in a new JVM; stdout and stderr are the bytes it printed (UTF-8). Callers
    decode them, and split lines on b"\n" only: a payload's "\r" or \x85 is not a line end."""
    cmd = [java(), f"-Xmx{heap}", *SHORT_LIVED_FLAGS, *UTF8_FLAGS, *jvm_flags,
           "-cp", classpath, main, *args]
    return subprocess.run(cmd, input=None if stdin is None else stdin.encode("utf-8"),
                          capture_output=True, timeout=timeout)
