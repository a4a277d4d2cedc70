"""`segmentlog dump --remote-log-metadata-decoder` against Kafka 4.4's DumpLogSegments, on
`__remote_log_metadata` records a broker wrote (the tiered fixture) and on made ones: every
message kind, custom metadata, repeated epochs, and hostile values (every truncation, unknown
frame versions, apiKeys and versions, varints too large for a short or longer than 5 bytes,
trailing bytes, unknown states, offsets and epochs Kafka's constructors refuse, a null value).
Kafka prints "Error at offset <n>, skipping. <its exception's message>" for those, and so does
segmentlog; outside the dump such a value is an error naming the field and its byte.
"""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from segmentlog_source.format.remote_log_metadata import (RemoteLogMetadataError,
                                                          RemoteLogSegmentMetadata,
                                                          decode_value)
from segmentlog_source.values.kafka_internal.columns import (KEY_ARROW_TYPE, VALUE_ARROW_TYPE,
                                                             decode_internal)
from segmentlog_source.values.kafka_internal.remote_metadata import dump_text
from tests.cli.helpers import run_cli
from tests.cli.test_dump_vs_kafka import kafka_dump
from tests.storage.remote_metadata_log import part_delete, seg, snapshot, upd, uvarint
from tests.values.test_kafka_internal import assert_same_lines, decoder_dump, write_log

FLAG = "--remote-log-metadata-decoder"
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tiered" / \
    "kafka-4.4-local-tiered-storage" / "broker-data"


def good_values(rng: random.Random) -> list[bytes]:
    out = []
    for n in range(1, 13):
        start = rng.randrange(0, 10**6)
        epochs = sorted({(rng.randrange(0, 9), start + rng.randrange(0, 500))
                         for _ in range(rng.randrange(1, 4))})
        custom = rng.choice([None, b"", bytes(rng.randrange(1, 40))])
        topic = rng.choice(["t", "orders-eu", "caf\u00e9", "a.b_c"])
        out += [seg(n, start, start + rng.randrange(0, 999), epochs, state=rng.randrange(4),
                    custom=custom, topic=topic, partition=rng.randrange(0, 99),
                    txn_empty=rng.random() < .5),
                upd(n, rng.randrange(4), custom=custom, topic=topic),
                part_delete(rng.randrange(3), topic=topic, partition=n),
                snapshot(n, start, start + 10, epochs, state=rng.randrange(4), custom=custom,
                         txn_empty=rng.random() < .5)]
    # epochs repeated (the last offset wins) and out of order; a snapshot with offsets Kafka's
    # segment constructor would refuse (the snapshot's does not check them)
    out += [seg(20, 5, 9, [(3, 7), (1, 5), (3, 8)]), snapshot(21, -4, -9, [(0, 0)])]
    return out


def hostile_values(rng: random.Random) -> list[bytes | None]:
    base = [seg(1, 0, 99, [(0, 0), (2, 50)], custom=b"xyz"), upd(1, 1), part_delete(2),
            snapshot(2, 0, 5, [(0, 0)])]
    out: list[bytes | None] = [None, b""]
    for value in base:
        out += [value[:cut] for cut in range(1, len(value))]
        out += [value + b"\x00", value + b"\x00\x07\x01"]
    good = base[0]
    out += [b"\x00" + good[1:], b"\x02" + good[1:], b"\x80\x80\x02" + good[1:],
            b"\xff\xff\xff\xff\x0f" + good[1:], b"\xff\xff\xff\xff\xff" + good[1:],
            good[:1] + uvarint(4) + good[2:], good[:1] + uvarint(7) + good[2:],
            good[:1] + uvarint(40_000) + good[2:], good[:1] + b"\xff\xff\xff\xff\x0f" + good[2:],
            good[:2] + uvarint(1) + good[3:], good[:2] + uvarint(0x7FFF) + good[3:],
            good[:2] + uvarint(0x8000) + good[3:],
            seg(3, 0, 9, [(0, 0)], state=4), seg(3, 0, 9, [(0, 0)], state=-1),
            upd(3, 9), part_delete(3), part_delete(-2), snapshot(3, 0, 9, [(0, 0)], state=7),
            seg(4, -1, 9, [(0, 0)]), seg(4, 10, 9, [(0, 0)]), seg(4, 0, 9, []),
            seg(4, -1, 9, [], state=9), snapshot(4, 0, 9, []), snapshot(4, 0, 9, [], state=8)]
    for _ in range(60):   # random byte flips
        value = bytearray(rng.choice(base))
        for _ in range(rng.randrange(1, 4)):
            value[rng.randrange(len(value))] = rng.randrange(256)
        out.append(bytes(value))
    return out


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    rng = random.Random(405)
    values = good_values(rng) + hostile_values(rng)
    return write_log(tmp_path_factory.mktemp("rlmm") / "__remote_log_metadata-0",
                     [(None, v) for v in values])


def test_dump_prints_what_dump_log_segments_prints(made):
    files = sorted(FIXTURE.glob("__remote_log_metadata-*/*.log")) + [made]
    kafka_out, _ = kafka_dump(files, (FLAG,))
    out, err = decoder_dump(files, (FLAG,))
    assert_same_lines(kafka_out, out)
    assert err == b""
    skip = (FLAG, "--skip-record-metadata")
    assert_same_lines(kafka_dump([made], skip)[0], decoder_dump([made], skip)[0])
    text = out.decode()
    for needle in ("payload: RemoteLogSegmentMetadata{",
                   "payload: RemoteLogSegmentMetadataUpdate{",
                   "payload: RemotePartitionDeleteMetadata{",
                   "payload: RemoteLogSegmentMetadataSnapshot{",
                   "customMetadata=Optional[CustomMetadata{3 bytes}]",
                   "segmentLeaderEpochs={1=5, 3=8}",
                   "skipping. Failed to deserialize record with type 0",
                   "skipping. Found 1 byte(s) of garbage after 0",
                   "skipping. Could not deserialize metadata record with frame version 0.",
                   "skipping. Value for frame version was too large.",
                   "skipping. Error while reading frame version",
                   "Unknown metadata id 7", "skipping. state can not be null",
                   "skipping. Unexpected start offset = -1.",
                   "skipping. segmentLeaderEpochs can not be null or empty",
                   "because the return value of"):
        assert needle in text, needle
    assert " key: " not in text


def test_the_cli_flag_and_json(made):
    result = run_cli("dump", FLAG, "--json", "--files", made)
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()
               if '"kind": "record"' in line]
    assert records and all(r["key"] is None for r in records)
    assert records[0]["payload"].startswith("RemoteLogSegmentMetadata{remoteLogSegmentId=")
    assert sum(r["payload"].startswith(f"Error at offset {r['offset']}, skipping. ")
               for r in records) > 100


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([seg(1, 0, 99, [(0, 0), (2, 50)], custom=b"ab"), upd(1, 3),
                        part_delete(1), snapshot(2, 0, 5, [(0, 0)])]),
       st.lists(st.tuples(st.integers(0, 200), st.integers(0, 255)), max_size=4),
       st.integers(0, 200), st.binary(max_size=6))
def test_hostile_values_decode_or_say_what_is_wrong(value, flips, cut, tail):
    """Any value decodes, or fails with RemoteLogMetadataError naming a field or the framing
    and carrying Kafka's message; the dump line is one line either way."""
    data = bytearray(value)
    for at, byte in flips:
        data[at % len(data)] = byte
    data = bytes(data[:max(cut, 1)]) + tail if cut < len(data) else bytes(data) + tail
    line = dump_text(data, 17)
    try:
        decode_value(data)
    except RemoteLogMetadataError as err:
        assert err.kafka and err.reason and line == f"Error at offset 17, skipping. {err.kafka}"
    else:
        assert line.startswith("Remote") and line.endswith("}")


def test_a_failure_names_the_field_and_byte():
    value = seg(1, 0, 99, [(0, 0)])
    with pytest.raises(RemoteLogMetadataError) as e:
        decode_value(value[:40])
    assert e.value.reason.startswith("RemoteLogSegmentMetadataRecord.remoteLogSegmentId")
    assert e.value.position is not None and "at byte" in str(e.value)
    with pytest.raises(RemoteLogMetadataError, match=r"^at byte 2: unknown version 1 of "):
        decode_value(value[:2] + b"\x01" + value[3:])
    short = struct.pack(">b", 1) + uvarint(0x8000)
    with pytest.raises(RemoteLogMetadataError, match="the type 32768 at byte 1 is over 32767"):
        decode_value(short)


def test_records_as_columns():
    rng = random.Random(7)
    values = good_values(rng) + hostile_values(rng)
    keys, decoded, errors = decode_internal("__remote_log_metadata",
                                            pa.array([None] * len(values), pa.binary()),
                                            pa.array(values, pa.binary()))
    assert keys.type == KEY_ARROW_TYPE and decoded.type == VALUE_ARROW_TYPE
    assert keys.null_count == len(values)
    rows, kinds = decoded.to_pylist(), set()
    for value, row, error in zip(values, rows, errors):
        try:
            expected = decode_value(value)
        except RemoteLogMetadataError as err:
            assert row is None and error == str(err)
            continue
        assert error is None and row["version"] == 0 and row["json"].startswith("{")
        remote = row["remote_log_metadata"]
        kinds.add(remote["record_type"])
        assert remote["broker_id"] == expected.broker_id
        assert remote["state"] == ("DELETE_PARTITION_MARKED DELETE_PARTITION_STARTED "
                                   "DELETE_PARTITION_FINISHED".split()[expected.state]
                                   if remote["record_type"] == "partition_delete" else
                                   "COPY_SEGMENT_STARTED COPY_SEGMENT_FINISHED "
                                   "DELETE_SEGMENT_STARTED DELETE_SEGMENT_FINISHED".split()[
                                       expected.state])
        if isinstance(expected, RemoteLogSegmentMetadata):
            assert (remote["topic"], remote["partition"], remote["segment_id"],
                    remote["start_offset"], remote["end_offset"], remote["custom_metadata"],
                    [(e["leader_epoch"], e["start_offset"])
                     for e in remote["segment_leader_epochs"]]) == (
                expected.topic, expected.partition, expected.segment_id,
                expected.start_offset, expected.end_offset, expected.custom_metadata,
                list(expected.segment_leader_epochs))
    assert kinds == {"segment", "segment_update", "partition_delete", "segment_snapshot"}
    assert sum(e is not None for e in errors) > 100
