"""The valid logs the fuzzer damages, and what every read of them returns (the oracle's R0).

Three families, all small (a few KB to ~100 KB a partition) so a mutant costs milliseconds:

* generated: `segmentlog generate` output for every codec, with headers, transactions, two
  partitions, 2-4 segments each (small segment bytes), jittered timestamps; one of them also gets
  a data-directory `log-start-offset-checkpoint` that starts a partition mid-batch;
* clients: every case of fixtures/kafka-clients (magic 0, 1 and 2, every codec, compacted gaps,
  a large base offset, LogAppendTime, transactions), each as a `<case>-0` partition;
* real: small partitions of fixtures/kafka-real (broker-written, with their indexes, snapshots,
  leader-epoch checkpoints and the data directory's checkpoint files).

`build_originals(root)` writes them under `root`, reads each with every read variant (the
reader's own answer on the unmutated log), checks that answer against an independent account
of the log (the generator's record counts, or the fixture's inspect.txt written by Kafka's
own client or kafka-python) and that `verify` finds no error, then pickles the lot to
`root/originals.pkl` for the worker processes. Nothing under ../shared is ever written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import json
import os
from pathlib import Path
import pickle
import shutil

from tests.conftest import shared_fixture

CACHE_VERSION = 5
START = 1_700_000_000_000

# name -> generate_log options (topics, codecs, segment sizes chosen for 2-4 segments each)
GENERATED = {
    "gen-none-txn": dict(topics=["orders"], partitions=2, records=900, codec="none", headers=2,
                         value_size=40, segment_bytes=14 * 1024, records_per_batch=15,
                         transactions=True, timestamp_jitter_ms=40, seed=11),
    "gen-gzip": dict(topics=["clicks"], partitions=2, records=1500, codec="gzip", headers=1,
                     value_size=60, segment_bytes=5 * 1024, records_per_batch=25,
                     timestamp_jitter_ms=60, seed=12),
    "gen-snappy-txn": dict(topics=["pay"], partitions=2, records=1200, codec="snappy",
                           headers=0, value_size=50, segment_bytes=8 * 1024,
                           records_per_batch=20, transactions=True, timestamp_jitter_ms=30,
                           seed=13),
    "gen-lz4-txn": dict(topics=["ev.t-1"], partitions=2, records=1200, codec="lz4", headers=2,
                        value_size=50, segment_bytes=8 * 1024, records_per_batch=20,
                        transactions=True, timestamp_jitter_ms=50, seed=14),
    "gen-zstd": dict(topics=["z"], partitions=2, records=1600, codec="zstd", headers=1,
                     value_size=60, segment_bytes=5 * 1024, records_per_batch=25,
                     timestamp_jitter_ms=20, seed=15),
    "gen-none-nullkeys": dict(topics=["a", "b"], partitions=1, records=500, codec="none",
                              key_size=0, value_size=30, segment_bytes=8 * 1024,
                              records_per_batch=10, seed=16),
}
# gen-none-txn also gets a log-start-offset-checkpoint: orders-1 starts inside its 3rd batch
LOG_START = {"gen-none-txn": ("orders", 1, 37)}

REAL = [
    "ronem123-rupia/topic_transactions-0",
    "ronem123-rupia/__consumer_offsets-44",
    "donaldy-kafka-2.7.1/__consumer_offsets-28",
    "donaldy-kafka-2.7.1/myTopic-0",
    "agelenler-food-ordering/_schemas-0",
    "agelenler-broker-2/payment-response-0",
    "william0423-kafka/debug_topic-0",
    "berkayakcay-log-collector/topic-logx-001-0",
    "xpxwo100-bullshit/foo-0",
]
DATA_DIR_FILES = ("recovery-point-offset-checkpoint", "log-start-offset-checkpoint",
                  "replication-offset-checkpoint", "cleaner-offset-checkpoint", "meta.properties")


@dataclass(frozen=True)
class BatchInfo:
    position: int
    size: int
    first_offset: int        # of its first record (a legacy wrapper's first inner offset)
    last_offset: int
    magic: int
    codec: int
    is_control: bool
    records: int             # records in the batch (control records included)


@dataclass(frozen=True)
class SegmentInfo:
    base_offset: int
    files: tuple[str, ...]   # the names of the segment's files (.log, .index, ...)
    size: int
    batches: tuple[BatchInfo, ...]

    @property
    def log_name(self) -> str:
        return f"{self.base_offset:020d}.log"


@dataclass(frozen=True)
class PartitionInfo:
    name: str                # the directory name, <topic>-<partition>
    topic: str
    partition: int
    segments: tuple[SegmentInfo, ...]
    files: tuple[str, ...]   # every file of the directory
    snapshots: tuple[int, ...]
    log_start_offset: int
    log_end_offset: int

    @property
    def batches(self) -> list[tuple[int, BatchInfo]]:
        return [(i, b) for i, s in enumerate(self.segments) for b in s.batches]


@dataclass
class Original:
    name: str
    family: str                                  # generated, clients, real
    root: str                                    # holds the data directory `data`
    partitions: dict[str, PartitionInfo]
    data_dir_files: tuple[str, ...]
    variants: dict[str, dict[str, str]]          # read variant -> Spark options (no path)
    expected: dict[str, dict[str, list[tuple]]] = field(default_factory=dict)  # R0
    transactional: bool = False
    log_start_checkpoint: dict[tuple[str, int], int] = field(default_factory=dict)
    expected_nostart: dict[str, list[tuple]] = field(default_factory=dict)  # full, no checkpoint
    # partitions where consistency.py's independent decoder reads what the reader reads
    independent_ok: set[str] = field(default_factory=set)

    @property
    def data(self) -> str:
        return os.path.join(self.root, "data")


# -- building ----------------------------------------------------------------------------------

def _writable(path: Path) -> None:
    for p in [path, *path.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)


def _build_generated(name: str, dest: Path) -> dict:
    from segmentlog_source.cli.generate import generate_log

    result = generate_log(str(dest / "data"), start_timestamp=START, **GENERATED[name])
    for lock in (dest / "data").rglob(".segmentlog.lock"):
        lock.unlink()
    if name in LOG_START:
        topic, partition, offset = LOG_START[name]
        (dest / "data" / "log-start-offset-checkpoint").write_text(
            f"0\n1\n{topic} {partition} {offset}\n")
    return dict(records=result.total_records)


def client_cases() -> list[Path]:
    root = shared_fixture("kafka-clients")
    return sorted(p.parent for p in root.glob("*/inspect.txt"))


def _build_client(case: Path, dest: Path) -> dict:
    from tests.fixture_inspect import parse_inspect

    part = dest / "data" / f"{case.name}-0"
    part.mkdir(parents=True)
    for log in case.glob("*.log"):
        shutil.copy(log, part / log.name)
    _writable(dest / "data")
    inspect = parse_inspect(case / "inspect.txt")
    return dict(inspect={f"{case.name}-0": inspect})


def _build_real(rel: str, dest: Path) -> dict:
    from tests.fixture_inspect import parse_inspect

    src = shared_fixture("kafka-real", *rel.split("/"))
    data = dest / "data"
    data.mkdir(parents=True)
    for name in DATA_DIR_FILES:
        if (src.parent / name).is_file():
            shutil.copy(src.parent / name, data / name)
    shutil.copytree(src, data / src.name, ignore=shutil.ignore_patterns("inspect.txt"))
    _writable(data)
    return dict(inspect={src.name: parse_inspect(src / "inspect.txt")})


def _layout(data: Path) -> dict[str, PartitionInfo]:
    """The batches of every segment, by the project's own scan of the (valid) log; build_originals
    cross-checks the rows against an independent account."""
    from segmentlog_source.format.record_decoder import decode_batch
    from segmentlog_source.storage.log.partition_log import PartitionLog
    from segmentlog_source.storage.log.log_directory import find_partitions
    from segmentlog_source.storage.log_files import kind_of

    parts = {}
    for pdir in find_partitions(str(data)):
        log = PartitionLog.open(pdir.path)
        names = sorted(os.listdir(pdir.path))
        segments = []
        for seg in log.segments:
            batches = []
            for header, entry in seg.iter_entries(verify_crc=True):
                records = decode_batch(entry, header).records
                first = records[0].offset if records else header.base_offset
                batches.append(BatchInfo(header.position, header.size, first, header.last_offset,
                                         header.magic, header.codec, header.is_control,
                                         len(records)))
            files = tuple(n for n in names if kind_of(n) and kind_of(n)[0] == seg.base_offset
                          and not n.endswith(".snapshot"))
            segments.append(SegmentInfo(seg.base_offset, files, seg.size, tuple(batches)))
        snapshots = tuple(sorted(kind_of(n)[0] for n in names
                                 if kind_of(n) and n.endswith(".snapshot")))
        parts[pdir.path.rsplit("/", 1)[1]] = PartitionInfo(
            os.path.basename(pdir.path), pdir.topic, pdir.partition, tuple(segments),
            tuple(names), snapshots, log.log_start_offset, log.log_end_offset)
    return parts


def _variants(parts: dict[str, PartitionInfo], full: dict[str, list[tuple]],
              transactional: bool) -> dict[str, dict[str, str]]:
    """The read variants: a full read, failOnDataLoss=false, an offset range, a time range, a
    read split at index positions, and read_committed where there are transactions."""
    variants = {"full": {}, "lossy": {"failOnDataLoss": "false"}}
    starting, ending = {}, {}
    for name, part in parts.items():
        rows = full.get(name, [])
        if len(rows) >= 3:
            starting.setdefault(part.topic, {})[str(part.partition)] = rows[len(rows) // 3][0]
            ending.setdefault(part.topic, {})[str(part.partition)] = rows[2 * len(rows) // 3][0] + 1
    if starting:
        variants["range"] = {"startingOffsets": json.dumps(starting),
                             "endingOffsets": json.dumps(ending)}
    stamps = sorted(r[1] for rows in full.values() for r in rows if r[1] >= 0)
    if len(stamps) >= 4:
        # the arrow column is in microseconds; the options take milliseconds
        lo, hi = stamps[len(stamps) // 3] // 1000, stamps[3 * len(stamps) // 4] // 1000
        if hi > lo:
            variants["time"] = {"startingTimestamp": str(lo), "endingTimestamp": str(hi),
                                "startingOffsetsByTimestampStrategy": "latest"}
    variants["split"] = {"minPartitions": "9"}
    if transactional:
        variants["committed"] = {"isolationLevel": "read_committed"}
    return variants


def _check_against_inspect(name: str, full: dict[str, list[tuple]], inspect: dict) -> None:
    """The reader's rows of an unmutated fixture are the data records its inspect.txt lists."""
    from tests.fixture_inspect import same_bytes

    for part, ins in inspect.items():
        expected = [r for b in ins.batches if not b.is_control for r in b.records]
        got = full.get(part, [])
        if [r.offset for r in expected] != [r[0] for r in got]:
            raise AssertionError(f"{name}/{part}: the reader's offsets differ from inspect.txt")
        for want, row in zip(expected, got):
            if not (same_bytes(want.key, row[3]) and same_bytes(want.value, row[4])):
                raise AssertionError(f"{name}/{part}: offset {want.offset} differs from "
                                     "inspect.txt")


def _build_one(name: str, family: str, builder, dest: Path) -> Original:
    from segmentlog_source.cli.verify import verify_paths
    from tests.fuzz.oracle import read_rows

    facts = builder(dest)
    parts = _layout(dest / "data")
    full = read_rows(str(dest / "data"), {})
    transactional = any(b.is_control for p in parts.values() for _, b in p.batches)
    nostart = {}
    if name in LOG_START:
        bare = dest / "no-checkpoint"
        shutil.copytree(dest / "data", bare)
        (bare / "log-start-offset-checkpoint").unlink()
        nostart = read_rows(str(bare), {})
        shutil.rmtree(bare)
        topic, partition, offset = LOG_START[name]
        if full != {p: [r for r in rows if p != f"{topic}-{partition}" or r[0] >= offset]
                    for p, rows in nostart.items()}:
            raise AssertionError(f"{name}: the log start offset checkpoint is not applied")
    counted = sum(map(len, (nostart or full).values()))
    if "records" in facts and counted != facts["records"]:
        raise AssertionError(f"{name}: read {counted} rows, the generator wrote "
                             f"{facts['records']}")
    if "inspect" in facts:
        _check_against_inspect(name, full, facts["inspect"])
    for report in verify_paths([str(dest / "data")]):
        if report.errors:
            raise AssertionError(f"{name}: verify finds errors in the unmutated log: "
                                 f"{report.errors}")
    data_files = tuple(sorted(n for n in os.listdir(dest / "data")
                              if (dest / "data" / n).is_file()))
    original = Original(name, family, str(dest), parts, data_files,
                        _variants(parts, full, transactional), transactional=transactional)
    for variant, options in original.variants.items():
        original.expected[variant] = read_rows(original.data, options)
    # Reads that must agree with the full read on a valid log
    if original.expected["split"] != full or original.expected["lossy"] != full:
        raise AssertionError(f"{name}: a split or failOnDataLoss=false read differs from the "
                             "full read of the unmutated log")
    if "range" in original.variants:
        bounds = {(t, int(p)): (lo, json.loads(original.variants["range"]["endingOffsets"])[t][p])
                  for t, ps in json.loads(original.variants["range"]["startingOffsets"]).items()
                  for p, lo in ps.items()}
        want = {}
        for pname, rows in full.items():
            part = parts[pname]
            lo, hi = bounds.get((part.topic, part.partition), (-1, 2**63))
            kept = [r for r in rows if lo <= r[0] < hi]
            if kept:
                want[pname] = kept
        if original.expected["range"] != want:
            raise AssertionError(f"{name}: the offset-range read of the unmutated log is not the "
                                 "full read's rows in that range")
    if name in LOG_START:
        topic, partition, offset = LOG_START[name]
        original.log_start_checkpoint = {(topic, partition): offset}
        original.expected_nostart = nostart
    original.independent_ok = _independent_agrees(original)
    return original


def _independent_agrees(original: Original) -> set[str]:
    """The partitions whose every read variant the independent decoder (consistency.py) gets
    exactly as the reader got it from the unmutated log; only these may ever be judged
    UNDETECTABLE."""
    from tests.fuzz.consistency import decode_partition, expected_rows

    agree = set()
    if original.log_start_checkpoint:
        return agree
    for name, part in original.partitions.items():
        batches = decode_partition(os.path.join(original.data, name))
        if batches is None:
            continue
        base = part.segments[0].base_offset if part.segments else 0
        if all(expected_rows(batches, base, part.topic, part.partition, options)
               == original.expected[variant].get(name, [])
               for variant, options in original.variants.items()):
            agree.add(name)
    return agree


def original_builders() -> list[tuple[str, str, object]]:
    builders = [(name, "generated", lambda d, n=name: _build_generated(n, d))
                for name in GENERATED]
    builders += [(f"clients-{case.name}", "clients", lambda d, c=case: _build_client(c, d))
                 for case in client_cases()]
    builders += [(f"real-{rel.replace('/', '-')}", "real", lambda d, r=rel: _build_real(r, d))
                 for rel in REAL]
    return builders


def build_originals(root: str | Path) -> dict[str, Original]:
    """Build (or load, when `root` already holds this version's) the originals under `root`."""
    root = Path(root)
    cache = root / "originals.pkl"
    if cache.exists():
        with open(cache, "rb") as f:
            version, originals = pickle.load(f)
        if version == CACHE_VERSION and all(Path(o.root).is_dir() for o in originals.values()):
            return originals
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    originals = {}
    for name, family, builder in original_builders():
        originals[name] = _build_one(name, family, builder, root / name)
    with open(cache, "wb") as f:
        pickle.dump((CACHE_VERSION, originals), f)
    return originals


def load_originals(root: str | Path) -> dict[str, Original]:
    with open(Path(root) / "originals.pkl", "rb") as f:
        version, originals = pickle.load(f)
    if version != CACHE_VERSION:
        raise RuntimeError(f"{root}: originals of another harness version; rebuild them")
    return originals
