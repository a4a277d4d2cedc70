"""KRaft snapshots read and checked (storage/log/kraft_snapshot.py) and their records decoded
(values/kafka_internal/metadata_snapshot.py): the shared fixtures' snapshots, made ones, and
broken ones (no header, no footer, a batch after the footer, a bad CRC, an offset gap, a cut,
an undecodable record), each an error naming the file, byte and offset; the dump prints what
DumpLogSegments prints for them and says what is wrong on stderr."""

from __future__ import annotations

import base64
import io
import json
import struct
import subprocess
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from segmentlog_source.cli.dump import dump_files
from segmentlog_source.cli.dump_context import DumpOptions
from segmentlog_source.devtools.kafka import jars, jvm
from segmentlog_source.errors import CorruptDataError
from segmentlog_source.format.batch import iter_headers
from segmentlog_source.format.control import SNAPSHOT_FOOTER, SNAPSHOT_HEADER
from segmentlog_source.format.record_decoder import decode_batch
from segmentlog_source.format.record_encoder import encode_batch
from segmentlog_source.format.records import Record
from segmentlog_source.storage.io.filesystem import filesystem_for
from segmentlog_source.storage.log.kraft_snapshot import read_kraft_snapshot
from segmentlog_source.values.kafka_internal.metadata_messages import CLUSTER_METADATA
from segmentlog_source.values.kafka_internal.metadata_snapshot import snapshot_metadata
from tests.cli.test_dump_vs_kafka import kafka_dump
from tests.conftest import shared_fixture
from tests.values import metadata_samples as ms

NAME = "00000000000000000123-0000000004.checkpoint"
TS = 1_700_000_000_000


def control(offset: int, kind: int) -> bytes:
    key = struct.pack(">hh", 0, kind)
    value = struct.pack(">hq", 0, TS) + b"\x00" if kind == SNAPSHOT_HEADER \
        else struct.pack(">h", 0) + b"\x00"
    return encode_batch([Record(offset, TS, key, value)], is_control=True)


def snapshot_bytes(values: list[bytes], *, header=True, footer=True, per_batch=4) -> bytes:
    out, offset = bytearray(), 0
    if header:
        out += control(0, SNAPSHOT_HEADER)
        offset = 1
    for i in range(0, len(values), per_batch):
        chunk = values[i:i + per_batch]
        out += encode_batch([Record(offset + j, TS, None, v) for j, v in enumerate(chunk)])
        offset += len(chunk)
    if footer:
        out += control(offset, SNAPSHOT_FOOTER)
    return bytes(out)


def read(path: Path):
    fs, p = filesystem_for(str(path))
    return snapshot_metadata(fs, p)


VALUES = [v for *_, v in ms.every_type(per_version=1)] + ms.secret_records()


def test_fixture_snapshots_read_whole():
    real = shared_fixture("kafka-real")
    files = sorted(real.glob("*/__cluster_metadata-0/*.checkpoint")) + sorted(
        real.glob("*/bootstrap.checkpoint"))
    counts = {}
    for path in files:
        snapshot, records = read(path)
        counts[path.name] = len(records)
        assert [o for o, _ in records] == list(range(1, len(records) + 1))
        assert records[0][1].record_type == "FEATURE_LEVEL_RECORD"
    assert counts["00000000000000063224-0000000009.checkpoint"] == 61
    assert read(files[0])[0].end_offset == int(files[0].name[:20])


def test_a_made_snapshot_reads_back_redacted(tmp_path):
    path = tmp_path / NAME
    path.write_bytes(snapshot_bytes(VALUES))
    snapshot, records = read(path)
    assert (snapshot.end_offset, snapshot.epoch) == (123, 4)
    assert len(records) == len(VALUES)
    assert sum(1 for _, r in records if r.redacted) >= len(ms.SENSITIVE_CONFIGS) + 2
    for _, record in records:
        for secret in ms.SECRET_TEXTS:
            assert secret not in record.json()
    fs, p = filesystem_for(str(path))
    raw = snapshot_metadata(fs, p, redacted=False)[1]
    assert any(r.fields.get("value") and ms.SECRET in r.fields["value"] for _, r in raw)


def _broken() -> dict[str, tuple[bytes, str]]:
    good = snapshot_bytes(VALUES[:10])
    first_data = len(control(0, SNAPSHOT_HEADER))
    flipped = bytearray(good)
    flipped[first_data + 70] ^= 0x40          # a byte of the first data batch's records
    gap = (control(0, SNAPSHOT_HEADER) + encode_batch([Record(3, TS, None, VALUES[0])])
           + control(4, SNAPSHOT_FOOTER))
    bad_record = snapshot_bytes(VALUES[:3] + [b"\x01\x02\x00\x05"])
    return {
        "no-header": (snapshot_bytes(VALUES[:10], header=False),
                      "a metadata record before the SnapshotHeader"),
        "no-footer": (snapshot_bytes(VALUES[:10], footer=False), "no SnapshotFooter"),
        "after-footer": (good + encode_batch([Record(12, TS, None, VALUES[0])]),
                         "a batch follows the SnapshotFooter (offset 12)"),
        "two-headers": (control(0, SNAPSHOT_HEADER) + control(1, SNAPSHOT_HEADER),
                        "a SNAPSHOT_HEADER control record where data or the SnapshotFooter"),
        "bad-crc": (bytes(flipped), "the CRC of the batch at offsets 1-4 is wrong (offset 1)"),
        "gap": (gap, "the batch starts at offset 3, 1 expected"),
        "cut": (good[:-7], "bytes after the last whole batch"),
        "empty": (b"", "no SnapshotHeader"),
        "bad-record": (bad_record, "offset 4: TopicRecord v0: name"),
    }


BROKEN = _broken()


@pytest.mark.parametrize("case", BROKEN)
def test_a_broken_snapshot_is_an_error_naming_file_byte_and_offset(tmp_path, case):
    data, reason = BROKEN[case]
    path = tmp_path / NAME
    path.write_bytes(data)
    with pytest.raises(CorruptDataError) as err:
        read(path)
    assert reason in str(err.value) and err.value.path == str(path)
    assert err.value.position is not None


def test_the_dump_of_broken_snapshots_is_kafkas_and_says_what_is_wrong(tmp_path):
    files = []
    for i, (case, (data, reason)) in enumerate(BROKEN.items()):
        path = tmp_path / case / f"{i:020d}-0000000001.checkpoint"
        path.parent.mkdir()
        path.write_bytes(data)
        files.append(path)
    flags = ("--cluster-metadata-decoder",)
    kafka_out, _ = kafka_dump(files, flags)
    out, err = io.StringIO(), io.StringIO()
    dump_files([str(f) for f in files], DumpOptions(decoder=CLUSTER_METADATA), out, err)
    from tests.values.test_cluster_metadata import assert_same_but_secrets
    assert_same_but_secrets(kafka_out, out.getvalue().encode())
    # the file's shape on stderr; an undecodable record is Kafka's "Error at" payload line
    lines = [x for x in err.getvalue().splitlines() if ": KRaft snapshot: " in x]
    shaped = [(p, r) for p, (case, (_, r)) in zip(files, BROKEN.items()) if case != "bad-record"]
    assert len(lines) == len(shaped)
    for line, (path, reason) in zip(lines, shaped):
        assert line.startswith(f"{path} at byte ") and reason in line
    assert "payload: Error at 4, skipping. Failed to deserialize record with type 2" \
        in out.getvalue()


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_a_changed_byte_is_refused_or_changes_nothing_read(tmp_path, data):
    good = snapshot_bytes(VALUES[:12])
    path = tmp_path / NAME
    path.write_bytes(good)
    expected = [(o, r.json()) for o, r in read(path)[1]]
    at = data.draw(st.integers(0, len(good) - 1))
    bit = data.draw(st.integers(0, 7))
    changed = bytearray(good)
    changed[at] ^= 1 << bit
    path.write_bytes(bytes(changed))
    try:
        records = read(path)[1]
    except CorruptDataError as err:
        assert err.path == str(path) and err.position is not None
    else:   # bytes the CRC does not cover and the reader does not need
        assert [(o, r.json()) for o, r in records] == expected


def kafka_formatted_snapshot(tmp_path: Path, *extra: str) -> Path:
    """The snapshot Kafka 4.4's StorageTool writes when it formats a controller with
    --standalone (a dynamic quorum, kraft.version 1): header, KRaftVersion and KRaftVoters
    control records in one batch, the bootstrap feature levels, footer."""
    data = tmp_path / "data"
    props = tmp_path / "controller.properties"
    props.write_text("process.roles=controller\nnode.id=1\ncontroller.listener.names=CONTROLLER\n"
                     "listeners=CONTROLLER://127.0.0.1:19093\n"
                     "controller.quorum.bootstrap.servers=127.0.0.1:19093\n"
                     f"log.dirs={data}\n")
    result = subprocess.run(
        [jvm.java(), "-Xmx256m", *jvm.SHORT_LIVED_FLAGS, "-cp", jars.classpath("kafka"),
         "kafka.tools.StorageTool", "format", "-t", "AAAAAAAAAAAAAAAAAAAAAQ", "--standalone",
         "-c", str(props), *extra], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    [snapshot] = (data / "__cluster_metadata-0").glob("*.checkpoint")
    return snapshot


def test_a_dynamic_quorum_snapshot_reads_and_dumps_as_kafka_dumps_it(tmp_path):
    """Kafka 4.4's own snapshot of a --standalone controller: its KRaftVersion and KRaftVoters
    control records are part of a sound snapshot (the checker used to call it damaged, on
    stderr), and DumpLogSegments prints the voters as JSON (`KRaftVoters {...}`, where the
    dump printed `controlType: KRAFT_VOTERS(6)`)."""
    path = kafka_formatted_snapshot(tmp_path)
    snapshot, records = read(path)
    assert [r.record_type for _, r in records] == ["FEATURE_LEVEL_RECORD"] * len(records)
    assert "metadata.version" in [r.fields["name"] for _, r in records]
    for flags in (("--deep-iteration",), ("--cluster-metadata-decoder",)):
        kafka_out, _ = kafka_dump([path], flags)
        out, err = io.StringIO(), io.StringIO()
        dump_files([str(path)], DumpOptions(deep_iteration=True, decoder=CLUSTER_METADATA
                                            if "--cluster-metadata-decoder" in flags else None),
                   out, err)
        assert err.getvalue() == ""
        assert out.getvalue().encode() == kafka_out
        assert " KRaftVoters {\"version\":0,\"voters\":[{\"voterId\":1," in out.getvalue()
    out = io.StringIO()
    dump_files([str(path)], DumpOptions(deep_iteration=True, json=True), out, io.StringIO())
    voters = [json.loads(x)["control"] for x in out.getvalue().splitlines()
              if '"KRAFT_VOTERS"' in x]
    assert voters[0]["voters"][0]["endpoints"] == [
        {"name": "CONTROLLER", "host": "127.0.0.1", "port": 19093}]


def test_a_cut_voters_record_is_an_error_naming_the_file(tmp_path):
    """A KRaftVoters value cut anywhere: the dump stops with an error naming the file and its
    batch, as Kafka's reader fails on it (never a row of guesses)."""
    source = kafka_formatted_snapshot(tmp_path).read_bytes()
    voters_key = struct.pack(">hh", 0, 6)
    first = next(iter_headers(source))
    batch = decode_batch(source[first.position:first.end], first)
    record = next(r for r in batch.records if r.key == voters_key)
    for cut in range(0, len(record.value), 7):
        records = [Record(r.offset, r.timestamp, r.key, r.value[:cut] if r is record else r.value)
                   for r in batch.records]
        path = tmp_path / f"cut{cut}" / NAME
        path.parent.mkdir()
        path.write_bytes(encode_batch(records, is_control=True))
        with pytest.raises(CorruptDataError, match="KRAFT_VOTERS control record value") as info:
            dump_files([str(path)], DumpOptions(deep_iteration=True), io.StringIO(),
                       io.StringIO())
        assert info.value.path == str(path) and info.value.position == 0


def test_the_dump_checks_a_snapshot_in_bounded_memory(tmp_path):
    """The dump's check of a snapshot it printed keeps no record: a 25 MB snapshot peaked at
    its whole size in Python objects (157 MB traced for a 125 MB one), now at a few MB."""
    value = ms.encode(4, 0, ms.fields_of(4, resourceType=2, resourceName="t",
                                         name="retention.ms", value="x" * 800))
    path = tmp_path / NAME
    path.write_bytes(snapshot_bytes([value] * 30000, per_batch=500))
    size = path.stat().st_size
    assert size > 24_000_000
    tracemalloc.start()
    try:
        out, err = io.StringIO(), io.StringIO()
        dump_files([str(path)], DumpOptions(), out, err)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert err.getvalue() == "" and out.getvalue().count("baseOffset: ") == 62
    assert peak < size // 4, (peak, size)
    assert read_kraft_snapshot(*filesystem_for(str(path)), keep_records=False).records == []


def test_kafkas_own_scram_credentials_never_show(tmp_path):
    """`format --add-scram` puts a UserScramCredentialRecord in the snapshot Kafka 4.4 writes:
    DumpLogSegments prints its salt and keys; no dump of segmentlog (decoder, raw, --json)
    shows any of them."""
    path = kafka_formatted_snapshot(
        tmp_path, "--add-scram", "SCRAM-SHA-256=[name=alice,password=alice-secret]")
    kafka_out, _ = kafka_dump([path], ("--deep-iteration", "--cluster-metadata-decoder"))
    line = next(x for x in kafka_out.decode().splitlines() if "USER_SCRAM" in x)
    data = json.loads(line.split("payload: ", 1)[1])["data"]
    secrets = [data[k] for k in ("salt", "storedKey", "serverKey")]
    assert all(len(x) > 20 for x in secrets)
    for options in (DumpOptions(decoder=CLUSTER_METADATA), DumpOptions(print_data_log=True),
                    DumpOptions(decoder=CLUSTER_METADATA, json=True),
                    DumpOptions(print_data_log=True, json=True)):
        out, err = io.StringIO(), io.StringIO()
        dump_files([str(path)], options, out, err)
        assert err.getvalue() == "" and "(redacted)" in out.getvalue()
        for secret in secrets:
            assert secret not in out.getvalue()
            assert base64.b64decode(secret).decode("latin-1") not in out.getvalue()
    _, records = read(path)
    scram = [r for _, r in records if r.record_type == "USER_SCRAM_CREDENTIAL_RECORD"]
    assert [r.fields["name"] for r in scram] == ["alice"]
    assert scram[0].redacted == ("salt", "storedKey", "serverKey")
