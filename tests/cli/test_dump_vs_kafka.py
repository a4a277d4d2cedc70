"""`segmentlog dump` against Kafka's own DumpLogSegments (what `kafka-dump-log.sh` runs, from the
cached Kafka 4.4 jars), on the same files with the same flags: stdout compared byte for byte,
and the stderr report compared per file and section (Kafka orders files by a hash map).

Files: every segment, index, snapshot and KRaft checkpoint of the shared fixtures (legacy magic
0/1 included), two logs `segmentlog generate` writes (transactions and aborts, headers, zstd,
gzip, null keys), a copy of a fixture with broken indexes, and a log whose values are malformed
UTF-8 and control characters.

Two differences are deliberate (dump.py's docstring says so to users):
- DumpLogSegments 4.3 and 4.4 report "Non-consecutive offsets ... -1 is followed by N" for every
  .log whose first record is not at offset 0 (any segment but the first of a partition): a false
  report, absent from 4.2. segmentlog reports only real gaps. Those lines are removed from
  Kafka's report before comparing.
- --index-sanity-check: Kafka's check looks at the file length and the last entry only, and
  passes an index whose entries are out of order (which makes its lookups land on wrong
  batches); segmentlog's fails it, naming the entry. The crafted broken index is left out of
  that flag set's comparison, and test_sanity_check_is_stricter shows the difference.
Nothing else is normalised.
"""

from __future__ import annotations

import io
import re
import struct
import subprocess
from pathlib import Path

import pytest

from segmentlog_source.cli.dump import dump_files
from segmentlog_source.cli.dump_context import DumpOptions
from segmentlog_source.devtools.kafka import dump_log_segments, jars, jvm
from segmentlog_source.format.record_encoder import encode_batch
from segmentlog_source.format.records import Record
from tests.cli.helpers import run_cli, writable_copy
from tests.conftest import shared_fixture

SUFFIXES = (".log", ".index", ".timeindex", ".snapshot", ".checkpoint", ".txnindex")
FLAG_SETS = {
    "shallow": (),
    "deep-iteration": ("--deep-iteration",),
    "print-data-log": ("--print-data-log",),
    "skip-record-metadata": ("--deep-iteration", "--skip-record-metadata"),
    "data-without-metadata": ("--print-data-log", "--skip-record-metadata"),
    "verify-index-only": ("--verify-index-only",),
    "index-sanity-check": ("--index-sanity-check",),
    "max-bytes": ("--max-bytes", "5000"),
}
SECTION = re.compile(r"^(Mismatches in :|Found timestamp mismatch in :|Found out of order "
                     r"timestamp in :|The following indexed offsets are not found in :|"
                     r"Non-consecutive offsets in )")
FALSE_GAP = re.compile(r"^  -1 is followed by \d+$")
# Values that tell two UTF-8 decoders apart, and characters some line splitters break at.
ODD_VALUES = [b"\xed\xa0\x80 surrogate", b"cut \xed\xa0", b"\xed\xa0A", b"\xf0\x9f\x98",
              b"\xe0\x80\x80 overlong", b"\xc3\x28", b"a\rb", b"x\x85y", "u\u2028v".encode(),
              b"fs\x1cgs\x1d", b"\xff\xfe", "caf\u00e9 \U0001f600".encode(), b"", None]


_KAFKA_RUNS: dict[tuple, tuple[bytes, bytes]] = {}


def kafka_dump(files: list[Path], flags: tuple[str, ...]) -> tuple[bytes, bytes]:
    """DumpLogSegments' stdout and stderr as bytes (one JVM per set of files and flags). (The
    devtools wrapper's run() decodes them as text with universal newlines, which turns a \\r
    inside a payload into a line break.)"""
    key = (tuple(files), flags)
    if key not in _KAFKA_RUNS:
        _KAFKA_RUNS[key] = _run_kafka(files, flags)
    return _KAFKA_RUNS[key]


def _run_kafka(files: list[Path], flags: tuple[str, ...]) -> tuple[bytes, bytes]:
    command = [jvm.java(), "-Xmx512m", *jvm.SHORT_LIVED_FLAGS, *jvm.UTF8_FLAGS,
               "-cp", jars.classpath("kafka"), dump_log_segments.dump_class(),
               "--files", ",".join(map(str, files)), *flags]
    result = subprocess.run(command, capture_output=True, timeout=600)
    assert result.returncode == 0, result.stderr.decode("utf-8", "replace")[-3000:]
    return result.stdout, result.stderr


def our_dump(files: list[Path], flags: tuple[str, ...]) -> tuple[bytes, bytes]:
    options = DumpOptions(deep_iteration="--deep-iteration" in flags,
                          print_data_log="--print-data-log" in flags,
                          verify_index_only="--verify-index-only" in flags,
                          index_sanity_check="--index-sanity-check" in flags,
                          skip_record_metadata="--skip-record-metadata" in flags,
                          **({"max_bytes": int(flags[flags.index("--max-bytes") + 1])}
                             if "--max-bytes" in flags else {}))
    out, err = io.StringIO(), io.StringIO()
    dump_files([str(f) for f in files], options, out, err)
    return out.getvalue().encode("utf-8"), err.getvalue().encode("utf-8")


def report(stderr: bytes, drop_false_gaps: bool = False) -> tuple[dict, list]:
    """({section header: entries}, other lines, sorted) of a stderr report."""
    sections: dict[bytes, list[bytes]] = {}
    other, entries = [], None
    for line in stderr.split(b"\n"):
        if not line:
            continue
        if SECTION.match(line.decode("utf-8", "replace")):
            entries = sections.setdefault(line, [])
        elif entries is not None and (line.startswith(b"  ") or line.startswith(b"Indexed")):
            if not (drop_false_gaps and FALSE_GAP.match(line.decode())):
                entries.append(line)
        else:
            other.append(line)
            entries = None
    return {h: e for h, e in sections.items() if e}, sorted(other)


def _odd_values_log(directory: Path) -> Path:
    """A v2 log whose keys and values are the ODD_VALUES, in two batches."""
    records = [Record(i, 1_700_000_000_000 + i, None if i % 3 == 0 else b"k%d" % i, value)
               for i, value in enumerate(ODD_VALUES)]
    half = len(records) // 2
    directory.mkdir(parents=True)
    log = directory / "00000000000000000000.log"
    log.write_bytes(encode_batch(records[:half]) + encode_batch(records[half:]))
    return log


def _broken_indexes(directory: Path) -> list[Path]:
    """A copy of a fixture partition whose .index and .timeindex disagree with its .log in
    every way DumpLogSegments checks (entries stay sorted: its sanity check would throw)."""
    part = writable_copy(shared_fixture("kafka-real", "william0423-kafka",
                                        "__consumer_offsets-28"), directory)
    index = part / "00000000000000000000.index"
    entries = [struct.unpack_from(">ii", index.read_bytes(), i)
               for i in range(0, index.stat().st_size, 8)]
    entries[3] = (entries[3][0], entries[2][1])          # an earlier batch
    entries[7] = (entries[7][0], entries[5][1])
    index.write_bytes(b"".join(struct.pack(">ii", *e) for e in entries))
    time_index = part / "00000000000000000000.timeindex"
    times = [struct.unpack_from(">qi", time_index.read_bytes(), i)
             for i in range(0, time_index.stat().st_size, 12)]
    times[2] = (times[2][0] - 1, times[2][1])            # a timestamp the batch does not have
    times[4] = (times[1][0], times[4][1])                # out of order
    times[6] = (times[6][0], times[-1][1] + 1000)        # past the last batch
    time_index.write_bytes(b"".join(struct.pack(">qi", *t) for t in times))
    return [index, time_index]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, list[Path]]:
    root = tmp_path_factory.mktemp("dump-vs-kafka")
    for name, args in (("zstd", ["--codec", "zstd", "--transactions", "--headers", "2"]),
                       ("gzip", ["--codec", "gzip", "--key-size", "0",
                                 "--timestamp-jitter-ms", "20", "--transactions"])):
        result = run_cli("generate", root / name, "--topics", "t", "--partitions", "2",
                         "--records", "3000", "--segment-bytes", "60000",
                         "--records-per-batch", "25", "--seed", "3", *args)
        assert result.returncode == 0, result.stderr
    fixtures = [shared_fixture("kafka-clients"), shared_fixture("kafka-real")]
    return {
        "fixtures": sorted(p for r in fixtures for p in r.rglob("*")
                           if p.suffix in SUFFIXES and p.is_file()),
        "generated": sorted(p for p in root.rglob("*") if p.suffix in SUFFIXES),
        "crafted": _broken_indexes(root / "broken" / "c-0")
        + [_odd_values_log(root / "odd" / "o-0")],
    }


def test_the_files_reach_what_matters(files):
    suffixes = {p.suffix for group in files.values() for p in group}
    assert suffixes == set(SUFFIXES)
    assert len(files["fixtures"]) >= 100
    assert any(p.stat().st_size > 0 for p in files["generated"] if p.suffix == ".txnindex")


@pytest.mark.parametrize("flags", FLAG_SETS)
def test_dump_prints_what_dump_log_segments_prints(files, flags):
    every = [f for group in files.values() for f in group
             if not (flags == "index-sanity-check" and f.parent.name == "c-0")]
    kafka_out, kafka_err = kafka_dump(every, FLAG_SETS[flags])
    out, err = our_dump(every, FLAG_SETS[flags])
    kafka_lines, lines = kafka_out.split(b"\n"), out.split(b"\n")
    if kafka_out != out:
        i = next((i for i, (a, b) in enumerate(zip(kafka_lines, lines)) if a != b),
                 min(len(kafka_lines), len(lines)))
        pytest.fail(f"stdout differs at line {i + 1} of {len(kafka_lines)}:\n"
                    f"  DumpLogSegments: {kafka_lines[i:i + 1]!r:.300}\n"
                    f"  segmentlog:      {lines[i:i + 1]!r:.300}")
    assert kafka_out.count(b"\nDumping ") + 1 == len(every)
    assert report(err) == report(kafka_err, drop_false_gaps=True)


def test_the_reports_are_exercised(files):
    """The comparison above meets every kind of report (so an empty stderr cannot pass for
    agreement), and the deliberate difference is real."""
    every = [f for group in files.values() for f in group]
    _, deep = kafka_dump(every, ("--deep-iteration",))
    _, indexes = kafka_dump(every, ("--verify-index-only",))
    sections, _ = report(indexes)
    headers = {h.split(b":")[0] for h in sections}
    assert headers == {b"Mismatches in ", b"Found timestamp mismatch in ",
                       b"Found out of order timestamp in ",
                       b"The following indexed offsets are not found in "}
    gaps, _ = report(deep, drop_false_gaps=True)
    assert any(len(e) > 1 for h, e in gaps.items() if h.startswith(b"Non-consecutive"))
    assert len(report(deep)[0]) > len(gaps)   # the false "-1 is followed by" reports


def test_sanity_check_is_stricter(files):
    index = next(f for f in files["crafted"] if f.suffix == ".index")
    kafka_out, _ = kafka_dump([index], ("--index-sanity-check",))
    assert kafka_out.decode().splitlines() == [f"Dumping {index}",
                                               f"{index} passed sanity check."]
    result = run_cli("dump", "--index-sanity-check", "--files", index)
    assert result.returncode == 2
    assert result.stderr.startswith(f"segmentlog: {index} at byte 56: offset index: positions "
                                    "are not increasing: entry 7 ")
