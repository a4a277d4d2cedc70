"""Kafka's own DumpLogSegments (what `kafka-dump-log.sh` runs), from the cached Kafka jars.

Up to 4.2 it is `kafka.tools.DumpLogSegments` in kafka_2.13; since 4.3 it is
`org.apache.kafka.tools.DumpLogSegments` in kafka-tools. The class is picked by looking inside
the jars, so changing KAFKA_VERSION (and pom.xml) is all a version switch takes.

It exits 0 even when it finds problems (they are on stderr, after all files), and exits non-zero
only on an exception, which ends the whole run. Its output comes back as bytes: a payload may
hold "\r", \x85 or \u2028, which text decoding or str.splitlines() would turn into line breaks.
"""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

from . import jars
from .jvm import run_java

CLASSES = ("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments")
_class_cache: dict[str, str] = {}


def dump_class() -> str:
    folder = jars.fetch("kafka")
    if str(folder) not in _class_cache:
        entries = {cls.replace(".", "/") + ".class": cls for cls in CLASSES}
        found = None
        for jar in sorted(folder.glob("kafka*.jar")):
            with zipfile.ZipFile(jar) as z:
                names = set(z.namelist())
            found = next((cls for entry, cls in entries.items() if entry in names), None)
            if found is not None and found == CLASSES[0]:
                break
        if found is None:
            raise RuntimeError(f"no DumpLogSegments class ({' or '.join(CLASSES)}) in {folder}")
        _class_cache[str(folder)] = found
    return _class_cache[str(folder)]


def run(files: list[str | Path], flags: list[str] | tuple[str, ...] = (),
        timeout: float = 600) -> subprocess.CompletedProcess:
    """One DumpLogSegments run over `files` (in this order) with `flags`; stdout and stderr
    are bytes."""
    args = ["--files", ",".join(str(f) for f in files), *flags]
    return run_java(dump_class(), args, jars.classpath("kafka"), heap="512m", timeout=timeout)
