"""Helpers for the CLI tests: run the real console script, dump into strings, copy fixtures."""

from __future__ import annotations

import io
import shutil
import struct
import subprocess
import sys
from pathlib import Path

from crc32c import crc32c

from segmentlog_source.cli.dump import DumpOptions, dump_files
from tests.conftest import shared_fixture

SEGMENTLOG = Path(sys.executable).parent / "segmentlog"  # the installed console script


def run_cli(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([str(SEGMENTLOG), *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def dump(*files, **options) -> tuple[str, str]:
    """(stdout, stderr) of `segmentlog dump` on `files`, called in-process."""
    out, err = io.StringIO(), io.StringIO()
    dump_files([str(f) for f in files], DumpOptions(**options), out, err)
    return out.getvalue(), err.getvalue()


def client_cases() -> list[Path]:
    """The kafka-clients fixture cases: a directory with one .log and inspect.txt each."""
    root = shared_fixture("kafka-clients")
    return sorted(p.parent for p in root.glob("*/inspect.txt"))


def client_log(case: Path) -> Path:
    (log,) = case.glob("*.log")
    return log


def client_case_as_partition(case: Path, root: Path, topic: str = "case") -> Path:
    """A writable `<topic>-0` partition directory holding a copy of the case's segment."""
    partition = root / f"{topic}-0"
    partition.mkdir(parents=True)
    log = client_log(case)
    shutil.copy(log, partition / log.name)
    (partition / log.name).chmod(0o644)
    return partition


def writable_copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for f in [dst, *dst.rglob("*")]:
        f.chmod(0o755 if f.is_dir() else 0o644)
    return dst


def break_first_record(path: Path, batch_position: int) -> None:
    """Make the first record of an uncompressed v2 batch undecodable, keeping the CRC valid
    (its length varint becomes -64), as a writer with a bug would."""
    data = bytearray(path.read_bytes())
    size = 12 + struct.unpack_from(">i", data, batch_position + 8)[0]
    data[batch_position + 61] = 0x7F
    struct.pack_into(">I", data, batch_position + 17,
                     crc32c(bytes(data[batch_position + 21:batch_position + size])))
    path.write_bytes(bytes(data))


def flip_byte(path: Path, position: int) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= 0xFF
    path.write_bytes(bytes(data))
