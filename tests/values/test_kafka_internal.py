"""`__consumer_offsets`, `__transaction_state` and `__share_group_state` decoded
(values/kafka_internal), and `segmentlog dump --offsets-decoder / --transaction-log-decoder /
--share-group-state-decoder` against Kafka 4.4's own DumpLogSegments.

Real records: every `__consumer_offsets` partition of the shared fixtures (Kafka 0.10 to 3.9)
decodes, and every offset committed for a partition the same data directory holds lies in that
partition's log. Made records (internal_samples.py): every record type and value version,
tombstones, every truncation, unknown types and versions, broken lengths, strings Jackson must
escape; DumpLogSegments prints the same lines for them, in four JVM runs.
"""

from __future__ import annotations

import io
import json
import random
import struct
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from segmentlog_source.cli.dump import dump_files
from segmentlog_source.cli.dump_context import DumpOptions
from segmentlog_source.errors import CorruptDataError, MalformedValueError
from segmentlog_source.format.record_decoder import decode_batch
from segmentlog_source.format.record_encoder import encode_batch
from segmentlog_source.format.records import Record
from segmentlog_source.storage.log.partition_log import PartitionLog
from segmentlog_source.values.kafka_internal.columns import (KEY_ARROW_TYPE, KEY_TYPE,
                                                             VALUE_ARROW_TYPE, VALUE_TYPE,
                                                             decode_internal)
from segmentlog_source.values.kafka_internal.kafka_json import java_double
from segmentlog_source.values.kafka_internal.messages import COORDINATORS
from segmentlog_source.values.kafka_internal.records import (InternalRecordError, decode_key,
                                                             decode_value, dump_texts)
from tests.cli.helpers import run_cli
from tests.cli.test_dump_vs_kafka import kafka_dump
from tests.conftest import shared_fixture
from tests.values import internal_samples as samples

OFFSETS, TXN, SHARE = "__consumer_offsets", "__transaction_state", "__share_group_state"
DECODERS = {"--offsets-decoder": OFFSETS, "--transaction-log-decoder": TXN,
            "--remote-log-metadata-decoder": "__remote_log_metadata",
            "--share-group-state-decoder": SHARE}


def decoder_dump(files: list[Path], flags: tuple[str, ...]) -> tuple[bytes, bytes]:
    """segmentlog's dump with a decoder flag (tests/cli's our_dump knows no decoders)."""
    decoder = next(topic for flag, topic in DECODERS.items() if flag in flags)
    options = DumpOptions(skip_record_metadata="--skip-record-metadata" in flags,
                          decoder=decoder)
    out, err = io.StringIO(), io.StringIO()
    dump_files([str(f) for f in files], options, out, err)
    return out.getvalue().encode("utf-8"), err.getvalue().encode("utf-8")


def assert_same_lines(kafka_out: bytes, out: bytes) -> None:
    if kafka_out != out:
        kafka_lines, lines = kafka_out.split(b"\n"), out.split(b"\n")
        i = next((i for i, (a, b) in enumerate(zip(kafka_lines, lines)) if a != b),
                 min(len(kafka_lines), len(lines)))
        pytest.fail(f"stdout differs at line {i + 1} of {len(kafka_lines)}:\n"
                    f"  DumpLogSegments: {kafka_lines[i:i + 1]!r:.600}\n"
                    f"  segmentlog:      {lines[i:i + 1]!r:.600}")


def partition_records(path: Path) -> tuple[str, list]:
    """(topic, the records of every non-control batch) of a partition directory."""
    log = PartitionLog.open(str(path))
    return log.topic, [r for _, header, entry in log.iter_entries() if not header.is_control
                       for r in decode_batch(entry, header).records]


def write_log(directory: Path, pairs: list, per_batch: int = 40) -> Path:
    directory.mkdir(parents=True)
    records = [Record(i, 1_700_000_000_000 + i, k, v) for i, (k, v) in enumerate(pairs)]
    log = directory / "00000000000000000000.log"
    log.write_bytes(b"".join(encode_batch(records[i:i + per_batch], base_offset=i)
                             for i in range(0, len(records), per_batch)))
    return log


# -- real records ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fixture_partitions() -> dict[Path, list]:
    """Each fixture __consumer_offsets partition: (offset, key, value) of its records."""
    out = {}
    for path in sorted(shared_fixture("kafka-real").glob("*/__consumer_offsets-*")):
        topic, records = partition_records(path)
        out[path] = []
        for r in records:
            key = decode_key(topic, r.key)
            out[path].append((r.offset, key, decode_value(topic, key, r.value)))
    return out


def test_every_fixture_offsets_record_decodes(fixture_partitions):
    seen = {}
    for path, decoded in fixture_partitions.items():
        assert len(decoded) == len(partition_records(path)[1]) > 0
        for _, key, value in decoded:
            kind = (key.record_type, None if value is None else value.version)
            seen[kind] = seen.get(kind, 0) + 1
    # Kafka 0.10.1 wrote offset commits v1, 2.1 v2, 2.7 to 3.9 v3, >= 3.8 (KRaft) v4 too;
    # group metadata v1 to v3; tombstones of both
    assert seen == {("offset_commit", 1): 855, ("offset_commit", 2): 8201,
                    ("offset_commit", 3): 46, ("offset_commit", 4): 1,
                    ("offset_commit", None): 3, ("group_metadata", 1): 5,
                    ("group_metadata", 2): 1, ("group_metadata", 3): 44,
                    ("group_metadata", None): 5}


def test_committed_offsets_lie_in_their_partitions_logs(fixture_partitions):
    logs: dict[Path, tuple[int, int] | None] = {}
    checked = 0
    for path, decoded in fixture_partitions.items():
        for _, key, value in decoded:
            if key.record_type != "offset_commit" or value is None:
                continue
            part = path.parent / f"{key.fields['topic']}-{key.fields['partition']}"
            if part not in logs:
                log = PartitionLog.open(str(part)) if part.is_dir() else None
                logs[part] = log and (log.log_start_offset, log.log_end_offset)
            if logs[part] is None:
                continue
            start, end = logs[part]
            assert start <= value.fields["offset"] <= end, (path, key.json(), value.json())
            checked += 1
    assert checked >= 30 and sum(1 for r in logs.values() if r) >= 8


# -- made records: decoding ------------------------------------------------------------------

@pytest.mark.parametrize("topic", [OFFSETS, TXN, SHARE])
def test_every_record_type_and_version_reads_back(topic):
    pairs = samples.samples(topic, per_version=4)
    kinds = set()
    for key, value in pairs:
        k = decode_key(topic, key)
        v = decode_value(topic, k, value)
        kinds.add((k.version, None if v is None else v.version))
        assert k.json().startswith(f'{{"type":"{k.version}","data":{{')
        if v is not None:
            st = COORDINATORS[topic][k.version].value
            assert samples.encode_struct(st.struct, v.fields, v.version,
                                         v.version in st.flexible) == value[2:]
    expected = {(t, v) for t, kind in COORDINATORS[topic].items()
                for v in [None, *range(kind.value.valid.lo, kind.value.valid.hi + 1)]}
    assert kinds == expected


@pytest.mark.parametrize("topic", [OFFSETS, TXN, SHARE])
def test_every_truncation_is_refused(topic):
    refused = 0
    for key, value in samples.samples(topic, per_version=1, seed=3):
        for cut in range(len(key)):
            with pytest.raises(MalformedValueError):
                decode_key(topic, key[:cut])
            refused += 1
        k = decode_key(topic, key)
        for cut in range(len(value or b"")):
            with pytest.raises(MalformedValueError, match=f"^{topic} value"):
                decode_value(topic, k, value[:cut])
            refused += 1
    assert refused > 150


def sample(topic: str, type_id: int, version: int) -> tuple[bytes, bytes]:
    rng = random.Random(type_id * 100 + version)
    return (samples.key_bytes(topic, type_id, rng),
            samples.value_bytes(topic, type_id, version, rng))


def test_trailing_bytes_are_refused_unless_read_as_kafka_reads():
    key, value = sample(OFFSETS, 1, 3)
    with pytest.raises(MalformedValueError, match="2 bytes follow the message"):
        decode_key(OFFSETS, key + b"\x00\x01")
    k = decode_key(OFFSETS, key)
    with pytest.raises(MalformedValueError, match="1 bytes follow the message"):
        decode_value(OFFSETS, k, value + b"\x00")
    loose = decode_value(OFFSETS, decode_key(OFFSETS, key + b"!", strict=False), value + b"!",
                         strict=False)
    assert loose == decode_value(OFFSETS, k, value)


def test_unknown_types_versions_and_short_buffers_say_what_they_are():
    key, value = sample(OFFSETS, 1, 2)
    for type_id in (9, 18, 24, -1):
        with pytest.raises(InternalRecordError, match=f"unknown record type {type_id} ") as e:
            decode_key(OFFSETS, struct.pack(">h", type_id) + key[2:])
        assert e.value.unknown_type == type_id
    k = decode_key(OFFSETS, key)
    with pytest.raises(InternalRecordError, match=r"\(OffsetCommitValue\): unknown version 5 "
                                                  r"\(known: 0-4\)"):
        decode_value(OFFSETS, k, b"\x00\x05" + value[2:])
    with pytest.raises(InternalRecordError, match="1 byte.* too short for its leading int16"):
        decode_key(TXN, b"\x00")
    with pytest.raises(InternalRecordError, match="without a key"):
        decode_key(TXN, None)
    with pytest.raises(ValueError, match="topic"):
        decode_key("orders", key)
    legacy = decode_key(OFFSETS, b"\x00\x00" + key[2:])
    assert legacy.record_type == "legacy_offset_commit"
    with pytest.raises(InternalRecordError, match="unknown version 1"):   # as Kafka 4.4
        decode_value(OFFSETS, legacy, b"\x00\x01" + value[2:])


def test_a_failure_names_the_field_and_byte():
    key = struct.pack(">hh", 2, 5) + b"group"
    k = decode_key(OFFSETS, key)
    value = struct.pack(">hh", 3, 8) + b"consumer" + struct.pack(">ih", 1, -1) \
        + struct.pack(">h", -1) + struct.pack(">qi", 5, 1) + struct.pack(">h", 2) + b"m1" \
        + struct.pack(">h", 30)
    with pytest.raises(InternalRecordError) as e:
        decode_value(OFFSETS, k, value)
    assert e.value.reason == (
        "__consumer_offsets value of record type 2 (GroupMetadataValue v3): "
        "members[0].groupInstanceId: 30 bytes at byte 38, 0 left")
    assert e.value.kafka == ("Could not read record with version 3 from value's buffer due to: "
                             "Error reading byte array of 30 byte(s): only 0 byte(s) available.")


def test_doubles_print_as_java_does():
    assert [java_double(d) for d in (1.0, 100.0, 1e7, 1.2345678e7, 0.001, 1e-4, -2.5e-5,
                                     123456.789, 0.0, -0.0, 1e21, float("nan"))] == [
        "1.0", "100.0", "1.0E7", "1.2345678E7", "0.001", "1.0E-4", "-2.5E-5", "123456.789",
        "0.0", "-0.0", "1.0E21", "NaN"]


# -- made records: DumpLogSegments -----------------------------------------------------------

@pytest.fixture(scope="module")
def crafted(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("internal-topics")
    out = {}
    for topic, seed, count in ((OFFSETS, 11, 3), (TXN, 12, 15), (SHARE, 13, 40)):
        good = samples.samples(topic, per_version=count, seed=seed)
        bad = samples.malformed(topic, samples.samples(topic, per_version=1, seed=seed + 10))
        out[topic] = write_log(root / f"{topic}-0", good + bad)
    key, value = sample(OFFSETS, 1, 3)
    out["no-key"] = write_log(root / "nokey-0", [(key, value), (None, value)])
    return out


def _fixture_logs() -> list[Path]:
    return sorted(shared_fixture("kafka-real").glob("*/__consumer_offsets-*/*.log"))


RUNS = {
    "offsets": (("--offsets-decoder",), lambda c: _fixture_logs() + [c[OFFSETS], c[TXN]]),
    "offsets-skip-record-metadata": (("--offsets-decoder", "--skip-record-metadata"),
                                     lambda c: _fixture_logs()[:4] + [c[OFFSETS]]),
    "transaction-log": (("--transaction-log-decoder",),
                        lambda c: [c[TXN], c[OFFSETS]] + _fixture_logs()[:2]),
    "share-group-state": (("--share-group-state-decoder",),
                          lambda c: [c[SHARE], c[OFFSETS], c[TXN]]),
}


@pytest.mark.parametrize("run", RUNS)
def test_dump_prints_what_dump_log_segments_prints(crafted, run):
    flags, files = RUNS[run][0], RUNS[run][1](crafted)
    kafka_out, _ = kafka_dump(files, flags)
    out, _ = decoder_dump(files, flags)
    assert_same_lines(kafka_out, out)
    lines = out.split(b"\n")
    # the comparison meets tombstones, unreadable records and unknown types
    for needle in (b"payload: <DELETE>", b"Error at offset ", b"Unknown record type 9 at"):
        assert any(needle in line for line in lines), needle
    if run == "offsets":
        assert any(b'"subscription":{"topics":' in line for line in lines)
        assert any(b'"subscription":"' in line for line in lines)   # base64: it did not parse
        assert len(lines) > 20_000
    if run == "share-group-state":
        for needle in (b'"deliveryCompleteCount":', b'"stateBatches":[{"firstOffset":',
                       b'key: {"type":"1","data":{"groupId":'):
            assert any(needle in line for line in lines), needle
    if run == "transaction-log":
        for state in (b'"Empty"', b'"CompleteCommit"', b'"PrepareEpochFence"', b'"8"', b'"-1"'):
            assert any(b'"transactionStatus":' + state in line for line in lines), state


def test_a_record_without_key_ends_the_dump(crafted):
    from segmentlog_source.devtools.kafka import dump_log_segments
    kafka = dump_log_segments.run([crafted["no-key"]], ["--offsets-decoder"])
    message = ("Failed to decode message at offset 1 using the specified decoder (message had "
               "a missing key)")
    assert kafka.returncode != 0 and message in kafka.stderr.decode()
    with pytest.raises(CorruptDataError) as e:
        decoder_dump([crafted["no-key"]], ("--offsets-decoder",))
    assert str(e.value) == f"{crafted['no-key']} at byte 0: {message}"


def test_the_cli_flags(tmp_path):
    """Both flags on the command line (Kafka takes --offsets-decoder then), and --json."""
    pairs = [sample(TXN, 0, 1), (sample(TXN, 0, 0)[0], None)]
    log = write_log(tmp_path / "t-0", pairs)
    both = run_cli("dump", "--transaction-log-decoder", "--offsets-decoder", "--files", log)
    assert both.returncode == 0, both.stderr
    assert both.stdout.encode() == decoder_dump([log], ("--offsets-decoder",))[0]
    assert "key: Error at offset 0, skipping. Could not read record with version 0 from " \
        "key's buffer due to: null." in both.stdout
    as_json = run_cli("dump", "--transaction-log-decoder", "--json", "--files", log)
    records = [json.loads(line) for line in as_json.stdout.splitlines()
               if '"kind": "record"' in line]
    k0 = decode_key(TXN, pairs[0][0])
    v0 = decode_value(TXN, k0, pairs[0][1])
    assert [(r["key"], r["payload"]) for r in records] == [
        (k0.json(), v0.json()), (decode_key(TXN, pairs[1][0]).json(), "<DELETE>")]


# -- columns ---------------------------------------------------------------------------------

def test_the_column_types_are_sparks_own_arrow_types():
    from pyspark.sql.pandas.types import to_arrow_type
    assert KEY_ARROW_TYPE == to_arrow_type(KEY_TYPE, timezone="UTC")
    assert VALUE_ARROW_TYPE == to_arrow_type(VALUE_TYPE, timezone="UTC")
    assert str(VALUE_ARROW_TYPE.field("transaction").type.field("start_timestamp").type) \
        == "timestamp[us, tz=UTC]"


def _column_rows(topic: str, pairs: list) -> tuple[list, list, list]:
    keys, values, errors = decode_internal(topic, pa.array([k for k, _ in pairs], pa.binary()),
                                           pa.array([v for _, v in pairs], pa.binary()))
    assert keys.type == KEY_ARROW_TYPE and values.type == VALUE_ARROW_TYPE
    return keys.to_pylist(), values.to_pylist(), errors


def test_fixture_records_as_columns(fixture_partitions):
    path = next(p for p in fixture_partitions if p.parent.name == "agelenler-broker-2")
    topic, records = partition_records(path)
    keys, values, errors = _column_rows(topic, [(r.key, r.value) for r in records])
    assert errors == [None] * len(records)
    commit = next(i for i, k in enumerate(keys) if k["record_type"] == "offset_commit")
    assert keys[commit] | {"json": None} == {
        "record_type": "offset_commit", "version": 1, "group": "restaurant-approval-topic-"
        "consumer", "topic": "restaurant-approval-request", "partition": 0, "member_id": None,
        "transactional_id": None, "topic_id": None, "json": None}
    oc = values[commit]["offset_commit"]
    assert (oc["offset"], oc["leader_epoch"], oc["metadata"], oc["expire_timestamp"],
            oc["topic_id"]) == (1, -1, "", None, None)
    assert round(oc["commit_timestamp"].timestamp() * 1000) == 1651474235562
    assert values[commit]["group_metadata"] is None and values[commit]["transaction"] is None
    group = next(v["group_metadata"] for v in values if v and v["group_metadata"]
                 and v["group_metadata"]["members"])
    member = group["members"][0]
    assert group["protocol_type"] == "consumer" and group["protocol"] == "range"
    assert member["subscribed_topics"] == ["restaurant-approval-response"]
    assert member["assigned_partitions"][0]["topic"] == "restaurant-approval-response"
    assert member["session_timeout"] == 10000 and member["group_instance_id"] is None
    tombstones = [i for i, r in enumerate(records) if r.value is None]
    assert tombstones and all(values[i] is None and keys[i] for i in tombstones)


def test_made_records_as_columns():
    def value(msg, version, **fields):
        v = samples.draw(msg.struct, version, random.Random(1))
        v.update(fields)
        return struct.pack(">h", version) + samples.encode_struct(
            msg.struct, v, version, version in msg.flexible)

    offsets = COORDINATORS[OFFSETS]
    commit_key = struct.pack(">hh", 1, 1) + b"g" + struct.pack(">h", 1) + b"t" + b"\0\0\0\3"
    pairs = [
        (commit_key, value(offsets[1].value, 1, offset=42, commitTimestamp=1000,
                           expireTimestamp=-1, metadata="m")),
        (commit_key, value(offsets[1].value, 4, offset=43, leaderEpoch=7, commitTimestamp=2**62,
                           topicId="AAAAAAAAAAAAAAAAAAAAAA")),
        (commit_key, b"\x00\x09"),
        (struct.pack(">h", 9), None),
        (struct.pack(">hh", 0, 2) + b"tx",
         value(COORDINATORS[TXN][0].value, 0, transactionStatus=4, producerEpoch=3,
               transactionPartitions=[{"topic": "t", "partitionIds": [0, 2]}],
               transactionStartTimestampMs=-1, transactionLastUpdateTimestampMs=5)),
    ]
    keys, values, errors = _column_rows(OFFSETS, pairs[:4])
    assert values[0]["offset_commit"] == {
        "offset": 42, "leader_epoch": None, "metadata": "m", "expire_timestamp": None,
        "commit_timestamp": values[0]["offset_commit"]["commit_timestamp"], "topic_id": None}
    assert values[0]["offset_commit"]["commit_timestamp"].timestamp() == 1.0
    assert values[1]["offset_commit"]["leader_epoch"] == 7
    assert values[1]["offset_commit"]["commit_timestamp"] is None     # beyond microseconds
    assert values[1]["json"].endswith('"commitTimestamp":4611686018427387904}}')
    assert errors[:2] == [None, None]
    assert keys[2] is None and values[2] is None and "unknown version 9" in errors[2]
    assert keys[3] is None and "unknown record type 9" in errors[3]
    keys, values, errors = _column_rows(TXN, pairs[4:])
    txn = values[0]["transaction"]
    assert keys[0]["transactional_id"] == "tx" and errors == [None]
    assert (txn["state"], txn["producer_epoch"], txn["partitions"], txn["start_timestamp"],
            txn["previous_producer_id"], txn["client_transaction_version"]) == (
        "CompleteCommit", 3, [{"topic": "t", "partitions": [0, 2]}], None, None, None)


def test_share_records_as_columns():
    kinds = COORDINATORS[SHARE]
    rng = random.Random(4)
    key = struct.pack(">hh", 1, 2) + b"sg" + samples._uuid_bytes("AAECAwQFBgcICQoLDA0ODw") \
        + struct.pack(">i", 3)
    batches = [{"firstOffset": 0, "lastOffset": 5, "deliveryState": 2, "deliveryCount": 1},
               {"firstOffset": 6, "lastOffset": 6, "deliveryState": 4, "deliveryCount": 5},
               {"firstOffset": 7, "lastOffset": 7, "deliveryState": 3, "deliveryCount": 1}]
    update = samples.draw(kinds[1].value.struct, 0, rng)
    update.update(startOffset=-1, deliveryCompleteCount=-1, stateBatches=batches)
    snapshot = samples.draw(kinds[0].value.struct, 0, rng)
    snapshot.update(createTimestamp=1000, writeTimestamp=-1, startOffset=12,
                    deliveryCompleteCount=4, stateBatches=[])
    pairs = [(key, b"\0\0" + samples.encode_struct(kinds[1].value.struct, update, 0, True)),
             (b"\0\0" + key[2:], b"\0\0" + samples.encode_struct(kinds[0].value.struct,
                                                                 snapshot, 0, True)),
             (key, None), (key, b"\0\1"), (key[:9], None)]
    keys, values, errors = _column_rows(SHARE, pairs)
    assert keys[0] | {"json": None} == {
        "record_type": "share_update", "version": 1, "group": "sg", "topic": None,
        "partition": 3, "member_id": None, "transactional_id": None,
        "topic_id": "AAECAwQFBgcICQoLDA0ODw", "json": None}
    state = values[0]["share_state"]
    assert (state["start_offset"], state["delivery_complete_count"], state["state_epoch"],
            state["create_timestamp"]) == (None, None, None, None)
    assert [(b["first_offset"], b["last_offset"], b["delivery_state"], b["delivery_count"])
            for b in state["state_batches"]] == [(0, 5, "Acked", 1), (6, 6, "Archived", 5),
                                                 (7, 7, "3", 1)]
    state = values[1]["share_state"]
    assert keys[1]["record_type"] == "share_snapshot" and state["state_batches"] == []
    assert (state["start_offset"], state["delivery_complete_count"],
            state["create_timestamp"].timestamp(), state["write_timestamp"]) == (12, 4, 1.0, None)
    assert state["state_epoch"] == snapshot["stateEpoch"]
    assert values[0]["offset_commit"] is None and values[0]["remote_log_metadata"] is None
    assert errors[:3] == [None] * 3 and keys[2]["record_type"] == "share_update"
    assert values[2] is None                                      # a tombstone
    assert values[3] is None and "unknown version 1" in errors[3]
    assert keys[4] is None and "ShareUpdateKey" in errors[4]


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 1), st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)),
                                   max_size=4),
       st.integers(0, 400), st.binary(max_size=6), st.booleans())
def test_hostile_share_records_decode_or_say_what_is_wrong(type_id, flips, cut, tail, in_key):
    """A share record with bytes flipped, cut or appended, in its key or its value: it decodes,
    or the dump prints Kafka's "Unknown record type" / "Error at offset" line and the decoder
    raises an InternalRecordError that names the field (and byte) and carries Kafka's message."""
    key, value = sample(SHARE, type_id, 0)
    data = bytearray(key if in_key else value)
    for at, byte in flips:
        data[at % len(data)] = byte
    data = bytes(data[:cut]) + tail if cut < len(data) else bytes(data) + tail
    key, value = (data, value) if in_key else (key, data)
    key_text, value_text = dump_texts(SHARE, key, value, 9)
    try:
        k = decode_key(SHARE, key, strict=False)
        v = decode_value(SHARE, k, value, strict=False)
    except InternalRecordError as err:
        assert err.reason and value_text is None
        if err.unknown_type is not None:
            assert key_text == f"Unknown record type {err.unknown_type} at offset 9, skipping."
        else:
            assert key_text == f"Error at offset 9, skipping. {err.kafka}" and err.kafka
    else:
        assert (key_text, value_text) == (k.json(), v.json())
