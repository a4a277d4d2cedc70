"""The test broker's own `__consumer_offsets` and `__transaction_state`, decoded after it stopped
(the copies conftest.py keeps): two consumer groups, one of each protocol (classic, and KIP-848's
"consumer"), committed offsets (the second in a transaction), and the transactions of
broker_topics.py (committed, aborted, interleaved). Every record decodes; the commits and the
transactions' final states are what the clients did; and `segmentlog dump --offsets-decoder` /
`--transaction-log-decoder` print what Kafka's DumpLogSegments prints for those files.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from segmentlog_source.values.kafka_internal.columns import decode_internal
from segmentlog_source.values.kafka_internal.records import decode_key, decode_value
from tests.cli.test_dump_vs_kafka import kafka_dump
from tests.kafka.broker_topics import produce_commands
from tests.values.test_kafka_internal import assert_same_lines, decoder_dump, partition_records

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("kafka")]
OFFSETS, TXN = "__consumer_offsets-0", "__transaction_state-0"


@pytest.fixture(scope="module")
def internal(broker_reads) -> dict[str, list]:
    """Per internal partition: (key record, value record or None) of every record, and the
    raw (key, value) pairs."""
    out = {}
    for name in (OFFSETS, TXN):
        topic, records = partition_records(broker_reads.files / name)
        decoded = []
        for r in records:
            key = decode_key(topic, r.key)
            decoded.append((key, decode_value(topic, key, r.value)))
        out[name] = decoded
        out[name + " raw"] = [(r.key, r.value) for r in records]
    return out


def test_every_record_decodes(internal):
    types = {key.record_type for key, _ in internal[OFFSETS]}
    assert types >= {"offset_commit", "group_metadata", "consumer_group_metadata",
                     "consumer_group_member_metadata", "consumer_group_target_assignment_member",
                     "consumer_group_target_assignment_metadata",
                     "consumer_group_current_member_assignment"}
    assert {key.record_type for key, _ in internal[TXN]} == {"transaction_log"}
    assert any(value is None for _, value in internal[OFFSETS])   # members leaving: tombstones


def test_the_groups_commits_are_there(internal, produced):
    groups = [a for a in produced.answers if a["op"] == "consume-group"]
    assert {a["protocol"] for a in groups} == {"classic", "consumer"}
    last = {}
    for key, value in internal[OFFSETS]:
        if key.record_type == "offset_commit":
            last[(key.fields["group"], key.fields["topic"], key.fields["partition"])] = value
    for answer in groups:
        assert answer["records"] > 0 and answer["committed"]
        for partition, offset in answer["committed"]:
            value = last[(answer["group"], answer["topic"], partition)]
            assert (value.fields["offset"], value.fields["metadata"]) == (offset,
                                                                          answer["group"])
    classic = next(a for a in groups if a["protocol"] == "classic")
    consumer = next(a for a in groups if a["protocol"] == "consumer")
    keys, values, errors = decode_internal("__consumer_offsets", *_arrays(internal[OFFSETS +
                                                                                   " raw"]))
    assert set(errors) == {None}
    members = [m for k, v in zip(keys.to_pylist(), values.to_pylist())
               if v and k["group"] == classic["group"] and v["group_metadata"]
               for m in v["group_metadata"]["members"]]
    assert members and all(m["subscribed_topics"] == [classic["topic"]] for m in members)
    assert {p for m in members for tp in m["assigned_partitions"]
            for p in tp["partitions"]} == {0, 1, 2}
    subscribed = [v.fields["subscribedTopicNames"] for k, v in internal[OFFSETS]
                  if k.record_type == "consumer_group_member_metadata" and v is not None
                  and k.fields["groupId"] == consumer["group"]]
    assert subscribed and all(s == [consumer["topic"]] for s in subscribed)


def _arrays(pairs: list) -> tuple[pa.Array, pa.Array]:
    return (pa.array([k for k, _ in pairs], pa.binary()),
            pa.array([v for _, v in pairs], pa.binary()))


def _expected_final_states(base: int) -> dict[str, str]:
    """Transactional id -> the state its last transaction ended in (KafkaClient's ids)."""
    out = {}
    for line, command in enumerate(produce_commands(base), start=1):
        args = dict(zip(command[2::2], command[3::2])) if len(command) > 2 else {}
        if command[0] == "produce" and "--txn" in command:
            prefix = args.get("--prefix", args.get("--codec", "none"))
            out[f"segmentlog-{command[1]}-{prefix}-{line}"] = (
                "CompleteCommit" if args["--txn"] == "commit" else "CompleteAbort")
        elif command[0] == "interleave":
            out[f"segmentlog-{command[1]}-keep-{line}"] = "CompleteCommit"
            out[f"segmentlog-{command[1]}-drop-{line}"] = "CompleteAbort"
        elif command[0] == "consume-group" and "--txn" in command:
            out[f"segmentlog-offsets-{args['--group']}"] = "CompleteCommit"
    return out


def test_the_transactions_end_as_the_clients_ended_them(internal, produced):
    keys, values, errors = decode_internal("__transaction_state", *_arrays(internal[TXN +
                                                                                 " raw"]))
    assert set(errors) == {None}
    states: dict[str, list[str]] = {}
    for key, value in zip(keys.to_pylist(), values.to_pylist()):
        if value is not None:
            states.setdefault(key["transactional_id"], []).append(value["transaction"]["state"])
    expected = _expected_final_states(produced.base)
    assert {t: s[-1] for t, s in states.items() if t in expected} == expected
    seen = {s for each in states.values() for s in each}
    assert seen >= {"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
                    "CompleteAbort"}
    offsets_txn = [v.fields["transactionPartitions"] for k, v in internal[TXN]
                   if v and k.fields["transactionalId"] == "segmentlog-offsets-consumer-group"
                   and v.fields["transactionPartitions"]]
    assert {"topic": "__consumer_offsets", "partitionIds": [0]} in offsets_txn[0]


@pytest.mark.parametrize("partition,flag", [(OFFSETS, "--offsets-decoder"),
                                            (TXN, "--transaction-log-decoder")])
def test_dump_prints_what_dump_log_segments_prints(broker_reads, partition, flag):
    files = sorted(Path(broker_reads.files / partition).glob("*.log"))
    kafka_out, _ = kafka_dump(files, (flag,))
    out, _ = decoder_dump(files, (flag,))
    assert_same_lines(kafka_out, out)
    assert out.count(b" key: {") >= 10 and b"Error at offset" not in out
    if flag == "--offsets-decoder":
        assert b"isControl: true" in out and b"payload: <DELETE>" in out
