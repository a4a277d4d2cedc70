"""What a Spark user does with a remote tier beyond tests/storage/test_tiered_damage.py: the
views, ranges, pushdown, record splitting and read_committed across the tier boundary (and
across a copy cut short by a later one), DeleteRecords' log start inside a copy, Aiven's key
prefixes and key ids, options and paths that point at the wrong place (issue #23). Each read is
planned and scanned in-process as Spark's driver and tasks would.

A test here either holds the rows (or error) a user must get, or shows a defect: it fails until
the defect is fixed.
"""

from __future__ import annotations

import datetime
import json
import shutil
import struct
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql.datasource import (EqualTo, GreaterThan, GreaterThanOrEqual, In, LessThan,
                                    LessThanOrEqual)

from segmentlog_source.cli.generate import generate_log
from segmentlog_source.cli.main import main
from segmentlog_source.errors import (BadOptionError, CorruptDataError, DataLossError,
                                      LogNotFoundError)
from segmentlog_source.spark.source import SegmentLogPushdownReader, SegmentLogReader
from tests.storage.remote_metadata_log import write_metadata
from tests.storage.tier_cases import (RECORDS, SEGMENT_300, SEGMENT_350, Tier, broker,
                                      events, generate_partition, plain, starts_inside)
from tests.storage.tiered_layouts import copy_to_aiven_tier, copy_to_tier, topic_id_of

T0 = 1_700_000_000_000           # the generator's first timestamp; record i's is T0 + i ms
ERRORS = (CorruptDataError, DataLossError, LogNotFoundError, BadOptionError)
AIVEN = Path(__file__).resolve().parents[1] / "fixtures" / "tiered" / "aiven"
AIVEN_KEY = AIVEN / "test-rsa-private.pem"


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    """a: offsets 0..1249 in segments of 300 (0, 300, 600, 900; active 1200); b350: the same
    records in segments of 350; txn: transactions, a third aborted, in ~146-offset segments;
    two: topic t with partitions 0 and 1 (segments 0 and 300 each)."""
    root = tmp_path_factory.mktemp("tiered-attacks")
    generate_partition(root / "a", 5, SEGMENT_300)
    generate_partition(root / "b350", 5, SEGMENT_350)
    generate_log(str(root / "txn"), quiet=True, topics=["t"], partitions=1, records=1500,
                 value_size=100, segment_bytes=20_000, records_per_batch=7, seed=3,
                 transactions=True)
    generate_log(str(root / "two"), quiet=True, topics=["t"], partitions=2, records=1200,
                 value_size=100, segment_bytes=40_000, records_per_batch=50, seed=5)
    return root


def _scan(reader) -> list[dict]:
    return [row for partition in reader.partitions() for batch in reader.read(partition)
            for row in pa.Table.from_batches([batch]).to_pylist()]


def _read(path, **options) -> list[dict]:
    return _scan(SegmentLogReader({"path": str(path), **options}))


def _mode(mode: str, tier: Tier, data: Path) -> tuple[Path, dict]:
    if mode == "alone":
        return tier.root, {"remoteLogMetadata": str(data)}
    return data, {"remoteTier": str(tier.root)}


def _offsets(rows) -> list[int]:
    return sorted(r["offset"] for r in rows)


def _by_partition(rows) -> dict[tuple[str, int], list[int]]:
    found: dict[tuple[str, int], list[int]] = {}
    for r in rows:
        found.setdefault((r["topic"], r["partition"]), []).append(r["offset"])
    return {k: sorted(v) for k, v in sorted(found.items())}


def _index_entries(prefix: str, suffix: str, base: int, below: int | None) -> int:
    """Entries of a copy's .index (8 bytes) or .timeindex (12), those below `below` only."""
    data = Path(prefix + suffix).read_bytes()
    width, at = (8, 0) if suffix == ".index" else (12, 8)
    relatives = [struct.unpack_from(">i", data, i + at)[0]
                 for i in range(0, len(data) - width + 1, width)]
    return sum(1 for r in relatives if below is None or base + r < below)


# == defects ====================================================================================

# -- an Aiven key.prefix that does not end in "/" ----------------------------------------------
def _prefixed_aiven(logs: Path, tmp_path: Path, prefix: str) -> tuple[Path, Path]:
    """Both partitions of `two` uploaded as Aiven's plugin does with key.prefix `prefix` (it
    concatenates the prefix and the key without a separator), and a data directory that keeps
    their segments from 300 on."""
    tier = tmp_path / "store"
    for p in (0, 1):
        copy_to_aiven_tier(logs / "two" / f"t-{p}", tier, chunk_size=4096, key_prefix=prefix)
    data = tmp_path / "data"
    for p in (0, 1):
        shutil.copytree(logs / "two" / f"t-{p}", data / f"t-{p}")
        for file in (data / f"t-{p}").glob("0" * 20 + ".*"):
            file.unlink()
    return tier, data


def test_an_aiven_key_prefix_without_a_slash_reads_the_topic_by_its_name(logs, tmp_path):
    """key.prefix=`pfx-` puts the objects under `pfx-t-<topic id>/`. The README says to load
    `storage root + key prefix`: that is refused as no such file, and load(<storage root>)
    reads the prefix into the topic's name (rows of topic `pfx-t`)."""
    tier, _ = _prefixed_aiven(logs, tmp_path, "pfx-")
    try:
        rows = _read(f"{tier}/pfx-")
    except ERRORS:
        rows = []
    assert _by_partition(rows) == {("t", 0): list(range(300)), ("t", 1): list(range(300))}
    try:
        topics = {r["topic"] for r in _read(tier)}
    except ERRORS:
        topics = set()
    assert "pfx-t" not in topics, "the key prefix read as part of the topic name"


def test_an_aiven_key_prefix_without_a_slash_below_a_data_directory(logs, tmp_path):
    """Below a data directory (option remoteTier) such a tier's copies are silently not read:
    the remote tier's offsets 0..299 are missing with no error (only the generic warning that
    no __remote_log_metadata was given). Every offset of both partitions, or an error."""
    tier, data = _prefixed_aiven(logs, tmp_path, "pfx-")
    expected = _by_partition(_read(logs / "two"))
    for remote in (f"{tier}/pfx-", str(tier)):
        try:
            rows = _read(data, remoteTier=remote)
        except ERRORS as err:
            assert "pfx-" in str(err), str(err)
            continue
        assert _by_partition(rows) == expected, f"remoteTier={remote}: rows missing"


# -- a partition directory whose segments are all remote ---------------------------------------
def test_a_partition_with_no_local_segment_left_is_not_dropped(logs, tmp_path):
    """t-0's directory is there (partition.metadata, leader-epoch-checkpoint) but all it held
    is in the remote tier; t-1 is whole. Reading both tiers drops t-0 without a word, and
    assign names it as missing. Its remote offsets, or an error naming it."""
    tier = tmp_path / "tier"
    copy_to_tier(logs / "two" / "t-0", tier)        # 0..299 (300.. was the active segment)
    data = tmp_path / "data"
    for p in (0, 1):
        shutil.copytree(logs / "two" / f"t-{p}", data / f"t-{p}")
    for file in (data / "t-0").glob("0" * 10 + "*"):
        file.unlink()
    assert (data / "t-0" / "partition.metadata").exists()
    try:
        rows = _read(data, remoteTier=str(tier))
    except ERRORS as err:
        assert "t-0" in str(err), str(err)
        return
    assert _by_partition(rows).get(("t", 0)) == list(range(300)), "t-0 silently dropped"


# -- the listing's copy that starts inside another ---------------------------------------------
def test_a_copy_starting_inside_another_is_named_by_its_file(logs, tmp_path):
    """Without metadata a copy 0..349 and a later copy from 300: the README promises an error
    naming both; the later one is named `00000000000000000300.log`, a file that does not
    exist (its name is `00000000000000000300-<segment id>.log`)."""
    tier, data, _ = starts_inside(logs, tmp_path, metadata=False)
    later = tier.copies[1]
    assert later.base == 300
    with pytest.raises(ERRORS) as caught:
        _read(tier.root)
    assert str(tier.copies[0].prefix) in str(caught.value) or \
        tier.copies[0].segment_id in str(caught.value), str(caught.value)
    assert later.segment_id in str(caught.value), str(caught.value)


# -- options that do nothing -------------------------------------------------------------------
@pytest.mark.parametrize("option", ["remoteLogMetadata", "remoteTierPrivateKey"])
def test_a_remote_tier_option_without_a_remote_tier_is_refused(logs, tmp_path, option):
    """load(<data dir>) without remoteTier: remoteLogMetadata (even a path that does not
    exist) and remoteTierPrivateKey (a key file that does not exist) are accepted and do
    nothing; the user believes the tier is read. An error naming the option."""
    value = str(tmp_path / "no-such-dir")
    with pytest.raises(BadOptionError, match=option):
        _read(logs / "a", **{option: value})


# -- paths at the wrong level of a tier --------------------------------------------------------
def _tier_paths(logs, tmp_path) -> dict[str, Path]:
    tier, _ = plain(logs, tmp_path)
    return {"a partition directory inside kafka-tiered-storage": tier.copies[0].prefix.parent,
            "an Aiven storage root above its key prefix": AIVEN / "zstd" / "remote",
            "a topic directory inside an Aiven tier":
                next((AIVEN / "zstd" / "remote" / "pfx-zstd").iterdir())}


def test_load_at_the_wrong_level_of_a_tier_says_so(logs, tmp_path):
    """Each is refused with `no Kafka partition directories ... point load() at a broker's
    log.dirs`: nothing says it is (part of) a remote tier, nor where load() should point."""
    for what, path in _tier_paths(logs, tmp_path).items():
        with pytest.raises(ERRORS) as caught:
            _read(path, remoteTierPrivateKey=str(AIVEN_KEY))
        assert "remote tier" in str(caught.value) or "key prefix" in str(caught.value), \
            f"{what}: {caught.value}"


@pytest.mark.parametrize("command", ["verify", "stats", "dump"])
def test_the_cli_on_a_remote_tier_says_it_is_one(logs, tmp_path, capsys, command):
    """`segmentlog verify|stats <tier>` says there are no partition directories holding .log
    files (the tier holds them, named <offset>-<segment id>.log); `dump --files <copy>.log`
    says the name must start with the base offset, which it does. Either the CLI reads the
    copy, or it says it is a remote tier's."""
    tier, _ = plain(logs, tmp_path)
    argv = ["dump", "--files", str(tier.copies[1].file())] if command == "dump" \
        else [command, str(tier.root)]
    try:
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    out = capsys.readouterr()
    if code == 0:
        assert "300" in out.out
        return
    assert "remote tier" in out.err or "tiered" in out.err.replace(str(tier.root), ""), \
        out.err


# == what held ==================================================================================

def _tiers(logs, tmp_path, shape: str):
    if shape == "plain":
        tier, data = plain(logs, tmp_path)
        return tier, data, {}
    tier, data, _ = starts_inside(logs, tmp_path)
    return tier, data, {tier.copies[0].segment_id: 300}


@pytest.mark.parametrize("mode", ["alone", "both"])
@pytest.mark.parametrize("shape", ["plain", "cut"])
def test_the_views_describe_the_copies(logs, tmp_path, mode, shape):
    """view=segments: a row per copy read (then per local segment), its path the copy's, its
    offsets and index entry counts the copy's files' (a cut copy's up to the cut); view=batches:
    each offset in exactly one batch."""
    tier, data, cuts = _tiers(logs, tmp_path, shape)
    path, options = _mode(mode, tier, data)
    segments = sorted(_read(path, view="segments", **options), key=lambda r: r["segment"])
    remote = [c for c in tier.copies if mode == "alone" or c.base < 900]
    for copy, row in zip(remote, segments):
        cut = cuts.get(copy.segment_id)
        assert row["path"] == str(copy.file())
        assert (row["segment"], row["firstOffset"]) == (copy.base, copy.base)
        assert row["lastOffset"] == (cut or copy.base + 300) - 1
        assert row["offsetIndexEntries"] == _index_entries(str(copy.prefix), ".index",
                                                           copy.base, cut)
        assert row["timeIndexEntries"] == _index_entries(str(copy.prefix), ".timeindex",
                                                         copy.base, cut)
    local = segments[len(remote):]
    assert [r["segment"] for r in local] == ([] if mode == "alone" else [900, 1200])
    end = 1249 if mode == "both" else 1199
    covered = sorted(o for b in _read(path, view="batches", **options)
                     for o in range(b["baseOffset"], b["lastOffset"] + 1))
    assert covered == list(range(end + 1))


FILTERS = {
    "offsets across 300": ([GreaterThanOrEqual(("offset",), 280), LessThan(("offset",), 320)],
                           lambda o: 280 <= o < 320),
    "offsets in": ([In(("offset",), (0, 299, 300, 349, 350, 899, 900, 1199, 1200))],
                   lambda o: o in (0, 299, 300, 349, 350, 899, 900, 1199, 1200)),
    "after 1150": ([GreaterThan(("offset",), 1150)], lambda o: o > 1150),
    "times across 300": ([GreaterThanOrEqual(("timestamp",), T0 + 290),
                          LessThan(("timestamp",), T0 + 310)], lambda o: 290 <= o < 310),
    "partition 0": ([EqualTo(("partition",), 0), LessThanOrEqual(("offset",), 300)],
                    lambda o: o <= 300),
    "partition 1": ([EqualTo(("partition",), 1)], lambda o: False),
}


def _filters(name: str):
    filters, keep = FILTERS[name]
    converted = []
    for f in filters:
        if f.attribute == ("timestamp",):
            f = type(f)(f.attribute, datetime.datetime.fromtimestamp(
                f.value / 1000, datetime.timezone.utc))
        converted.append(f)
    return converted, keep


@pytest.mark.parametrize("mode", ["alone", "both"])
@pytest.mark.parametrize("shape", ["plain", "cut"])
def test_pushdown_and_record_splits_across_the_tier_boundary(logs, tmp_path, mode, shape):
    """WHERE clauses on offset, timestamp and partition (pushdown=true), alone and with
    maxRecordsPerPartition (which cuts inside copies, the cut one too) and minPartitions:
    exactly the matching offsets, each once."""
    tier, data, _ = _tiers(logs, tmp_path, shape)
    path, options = _mode(mode, tier, data)
    end = 1249 if mode == "both" else 1199
    for name in FILTERS:
        filters, keep = _filters(name)
        for extra in ({}, {"maxRecordsPerPartition": "40"}, {"minPartitions": "7"}):
            reader = SegmentLogPushdownReader({"path": str(path), "pushdown": "true",
                                               **options, **extra})
            assert not list(reader.pushFilters(filters) or ())
            got = _offsets(_scan(reader))
            assert got == [o for o in range(end + 1) if keep(o)], (name, extra)


@pytest.mark.parametrize("mode", ["alone", "both"])
def test_ranges_by_offset_and_time_across_a_cut_copy(logs, tmp_path, mode):
    tier, data, _ = _tiers(logs, tmp_path, "cut")
    path, options = _mode(mode, tier, data)
    end = 1249 if mode == "both" else 1199
    cases = [({"startingOffsets": '{"t":{"0":280}}', "endingOffsets": '{"t":{"0":950}}'},
              range(280, 950)),
             ({"startingOffsetsByTimestamp": json.dumps({"t": {"0": T0 + 320}})},
              range(320, end + 1)),
             ({"startingTimestamp": str(T0 + 290), "endingTimestamp": str(T0 + 330)},
              range(290, 330)),
             ({"endingOffsetsByTimestamp": json.dumps({"t": {"0": T0 + 1000}})},
              range(0, 1000))]
    for extra, expected in cases:
        assert _offsets(_read(path, **options, **extra)) == list(expected), extra


@pytest.mark.parametrize("keep", [1, 3, 10])
@pytest.mark.parametrize("mode", ["alone", "both"])
def test_read_committed_across_the_tiers(logs, tmp_path, mode, keep):
    """Transactions span segment boundaries: some aborted batches sit in remote copies with
    their markers (and .txnindex entries) in the local log, and the reverse. read_committed
    gives what the whole local partition gives, split or not."""
    source = logs / "txn" / "t-0"
    bases = sorted(int(p.stem) for p in source.glob("*.log"))
    tier = Tier(tmp_path / "tier", topic_id_of(source))
    tier.add(source, seed=1)
    data = broker(source, tmp_path / "data", keep_from=bases[keep])
    write_metadata(data, events(tier, tier.copies))
    path, options = _mode(mode, tier, data)
    last = 1 << 62 if mode == "both" else bases[-1] - 1
    if mode == "alone" and keep == 10:
        last = bases[-2] - 1       # (the tier ends in an open transaction: read below it)
        options["endingOffsets"] = json.dumps({"t": {"0": bases[-2]}})
    expected = sorted((r["offset"], r["value"])
                      for r in _read(logs / "txn", isolationLevel="read_committed")
                      if r["offset"] <= last)
    for extra in ({}, {"maxRecordsPerPartition": "33"}, {"minPartitions": "5"}):
        rows = _read(path, isolationLevel="read_committed", **options, **extra)
        assert sorted((r["offset"], r["value"]) for r in rows) == expected, extra


def test_delete_records_inside_a_remote_copy(logs, tmp_path):
    """The log-start-offset-checkpoint at 450 (DeleteRecords), inside remote copy 300..599."""
    tier, data = plain(logs, tmp_path)
    (data / "log-start-offset-checkpoint").write_text("0\n1\nt 0 450\n")
    both = {"remoteTier": str(tier.root)}
    assert _offsets(_read(data, **both)) == list(range(450, 1250))
    assert _offsets(_read(data, startingOffsets='{"t":{"0":-2}}', **both)) == \
        list(range(450, 1250))
    assert _offsets(_read(data, startingTimestamp=str(T0 + 100), **both)) == \
        list(range(450, 1250))
    assert [(b["baseOffset"]) for b in sorted(_read(data, view="batches", **both),
                                              key=lambda b: b["baseOffset"])][:2] == [450, 500]
    with pytest.raises(DataLossError, match="450"):
        _read(data, startingOffsets='{"t":{"0":100}}', **both)
    (data / "log-start-offset-checkpoint").write_text("0\n1\nt 0 1000\n")
    assert _offsets(_read(data, **both)) == list(range(1000, 1250))


def test_a_partition_whose_local_log_is_an_empty_active_segment(logs, tmp_path):
    """What the real broker left (tests/fixtures/tiered/kafka-4.4-local-tiered-storage): all
    closed segments copied and deleted, an empty active segment where the tier ends."""
    tier, data = plain(logs, tmp_path, keep_from=1 << 40)
    for suffix in (".log", ".index", ".timeindex"):
        (data / "t-0" / f"{1200:020d}{suffix}").write_bytes(b"")
    assert _offsets(_read(data, remoteTier=str(tier.root))) == list(range(1200))
    # the empty active segment is a row, with no offsets, as in a local log
    rows = _read(data, remoteTier=str(tier.root), view="segments")
    assert [r["segment"] for r in rows] == [0, 300, 600, 900, 1200]
    assert (rows[-1]["size"], rows[-1]["firstOffset"], rows[-1]["lastOffset"]) == (0, None, None)


def _aiven(variant: str) -> Path:
    prefix = {"plain": "", "zstd": "pfx-zstd", "encrypted": "pfx-encrypted",
              "enczstd": "pfx-enczstd"}[variant]
    tier = AIVEN / variant / "remote" / prefix
    assert tier.is_dir(), f"missing fixture {tier}"
    return tier


@pytest.mark.parametrize("variant", ["encrypted", "enczstd"])
def test_aiven_private_keys_by_key_pair_id(variant):
    """`k1=<pem>` (the fixtures' key pair id), with an unused pair beside it; `k2=<pem>` alone
    names k1, the pair the segment needs; a public key is refused as one."""
    tier = _aiven(variant)
    expected = sorted((r["offset"], r["value"]) for r in _read(AIVEN / variant / "local"))
    for option in (f"k1={AIVEN_KEY}", f"k2={AIVEN / 'nope.pem'},k1={AIVEN_KEY}"):
        rows = _read(tier, remoteTierPrivateKey=option)
        assert sorted((r["offset"], r["value"]) for r in rows) == expected
    with pytest.raises(BadOptionError, match="'k1'"):
        _read(tier, remoteTierPrivateKey=f"k2={AIVEN_KEY}")
    with pytest.raises(BadOptionError, match="public key"):
        _read(tier, remoteTierPrivateKey=str(AIVEN / "test-rsa-public.pem"))


@pytest.mark.parametrize("variant", ["plain", "zstd", "encrypted", "enczstd"])
def test_an_aiven_tier_below_a_data_directory(tmp_path, variant):
    """The broker's local copy keeps only segment 2906 (with the transaction markers); the
    Aiven tier below it gives the rest: the broker's rows, read_committed too, split by records
    too, and the batches view byte positions of the broker's own files."""
    local = AIVEN / variant / "local"
    data = tmp_path / "data"
    (data / "aborts-0").mkdir(parents=True)
    for file in (local / "aborts-0").glob(f"{2906:020d}.*"):
        shutil.copy(file, data / "aborts-0" / file.name)
    both = {"remoteTier": str(_aiven(variant)), "remoteTierPrivateKey": str(AIVEN_KEY)}
    for extra in ({}, {"isolationLevel": "read_committed"}, {"maxRecordsPerPartition": "100"}):
        want = sorted((r["offset"], r["value"]) for r in _read(
            local, **{k: v for k, v in extra.items() if k == "isolationLevel"}))
        assert sorted((r["offset"], r["value"]) for r in _read(data, **both, **extra)) == want
    batches = sorted((b["baseOffset"], b["position"], b["size"], b["isControl"])
                     for b in _read(data, view="batches", **both))
    assert batches == sorted((b["baseOffset"], b["position"], b["size"], b["isControl"])
                             for b in _read(local, view="batches"))


def test_load_of_the_kafka_tiered_storage_directory_itself(logs, tmp_path):
    """load(<root>/kafka-tiered-storage), and remoteTier given that directory: as its root."""
    tier, data = plain(logs, tmp_path)
    inner = tier.root / "kafka-tiered-storage"
    assert _offsets(_read(inner, remoteLogMetadata=str(data))) == list(range(1200))
    assert _offsets(_read(data, remoteTier=str(inner))) == list(range(1250))


# == from a review of the fixes ==================================================================

def test_a_partition_with_no_local_segment_and_its_metadata(logs, tmp_path):
    """All of t-0 is remote, its directory keeps partition.metadata and the
    leader-epoch-checkpoint, __remote_log_metadata beside it: the remote offsets (the lineage
    check has no local log end to hold the copies against)."""
    tier = Tier(tmp_path / "tier", topic_id_of(logs / "a" / "t-0"))
    tier.add(logs / "a" / "t-0", seed=1)
    data = broker(logs / "a" / "t-0", tmp_path / "data", keep_from=1 << 40)
    write_metadata(data, events(tier, tier.copies))
    assert [r["offset"] for r in _read(data, remoteTier=str(tier.root))] == list(range(1200))


def test_the_last_copy_reaching_into_the_local_log(logs, tmp_path):
    """Replicas roll at other offsets: the only copy, 0..349, is the old leader's; this broker
    rolled at 300 and its retention dropped 0..299. Offsets from 300 are read locally, once."""
    tier = Tier(tmp_path / "tier", topic_id_of(logs / "a" / "t-0"))
    old = tier.add(logs / "b350" / "t-0", seed=2, segments=1)
    data = broker(logs / "a" / "t-0", tmp_path / "data", keep_from=300)
    write_metadata(data, events(tier, old))
    for metadata in (True, False):
        if not metadata:
            shutil.rmtree(next(data.glob("__remote_log_metadata-*")))
        assert [r["offset"] for r in _read(data, remoteTier=str(tier.root))] == \
            list(range(RECORDS)), metadata


def test_delete_records_into_a_copy_with_the_truncated_lineage(logs, tmp_path):
    """DeleteRecords to 450 also truncates the leader-epoch-checkpoint from the start (`0 450`):
    the copy 300..599 is still read from its file's start, the rows from 450."""
    tier = Tier(tmp_path / "tier", topic_id_of(logs / "a" / "t-0"))
    tier.add(logs / "a" / "t-0", seed=1)
    data = broker(logs / "a" / "t-0", tmp_path / "data", keep_from=900, log_start=450,
                  epochs=((0, 450),))
    write_metadata(data, events(tier, tier.copies))
    assert [r["offset"] for r in _read(data, remoteTier=str(tier.root))] == \
        list(range(450, RECORDS))


def test_read_committed_through_a_cut_copy(logs, tmp_path):
    """Transactions in a copy that a later one starts inside (the same batches, rolled at other
    offsets): read_committed gives the partition's committed rows, the cut copy's
    `.txnindex` entries whose markers lie past the cut left to the later copy."""
    for name, size in (("txn-a", 20_000), ("txn-b", 26_000)):
        generate_log(str(tmp_path / name), quiet=True, topics=["t"], partitions=1,
                     records=1500, value_size=100, segment_bytes=size, records_per_batch=7,
                     seed=3, transactions=True)
    a, b = tmp_path / "txn-a" / "t-0", tmp_path / "txn-b" / "t-0"
    tier = Tier(tmp_path / "tier", topic_id_of(a))
    old = tier.add(b, seed=2, segments=1)
    new = tier.add(a, seed=1, skip=1)
    assert old[0].base < new[0].base < int(sorted(b.glob("*.log"))[1].stem)   # inside it
    data = broker(a, tmp_path / "data", keep_from=1 << 40)
    write_metadata(data, events(tier, old) + events(tier, new, event_ts=5000))
    active = int(sorted(a.glob("*.log"))[-1].stem)      # the tier holds what lies below it
    expected = [r["offset"] for r in _read(tmp_path / "txn-a", isolationLevel="read_committed")
                if r["offset"] < active]
    got = [r["offset"] for r in _read(tier.root, remoteLogMetadata=str(data),
                                      isolationLevel="read_committed")]
    assert got == expected and len(got) > 500


def test_a_cut_copy_leaves_aborts_whose_marker_is_past_the_cut(logs):
    """An aborted transaction whose ABORT marker lies at or past the cut is the later copy's to
    list (it holds the same batches): the cut copy's `.txnindex` keeps the ones below."""
    from segmentlog_source.storage.io.local import LOCAL
    from segmentlog_source.storage.tiered.cut_copy import CutCopyFiles

    source = logs / "txn" / "t-0"
    log = next(p for p in sorted(source.glob("*.log"))
               if p.with_suffix(".txnindex").exists() and p.with_suffix(".txnindex").stat()
               .st_size >= 68)
    entries = log.with_suffix(".txnindex").read_bytes()
    markers = [struct.unpack_from(">q", entries, i + 18)[0] for i in range(0, len(entries), 34)]
    cut = sorted(markers)[1]          # the second abort's marker: the first one stays
    files = CutCopyFiles(LOCAL, str(log.with_suffix("")), int(log.stem), cut, log.stat().st_size)
    kept = files.read_all(str(log.with_suffix(".txnindex")))
    assert [struct.unpack_from(">q", kept, i + 18)[0] for i in range(0, len(kept), 34)] == \
        [m for m in markers if m < cut]


@pytest.mark.parametrize("lineage", ["5 0", "0 0\n3 100"])
def test_a_damaged_leader_epoch_checkpoint_is_not_a_quiet_later_start(logs, tmp_path, lineage):
    """The lineage remote copies are held against is a text file no CRC covers: one that
    disowns the copies the log start says are the partition's (an epoch they do not carry)
    is lost data naming it, not a read that quietly starts at the first local segment."""
    tier, data = plain(logs, tmp_path)
    (data / "t-0" / "leader-epoch-checkpoint").write_text(
        f"0\n{lineage.count(chr(10)) + 1}\n{lineage}\n")
    with pytest.raises(DataLossError, match="leader-epoch-checkpoint"):
        _read(data, remoteTier=str(tier.root))
    rows = _read(data, remoteTier=str(tier.root), failOnDataLoss="false")
    assert [r["offset"] for r in rows] == sorted(set(r["offset"] for r in rows))
