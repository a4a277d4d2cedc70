"""`segmentlog dump` against Kafka's DumpLogSegments formats (spec §10) and the fixtures.

Expected lines are built here from what Kafka's own reader (inspect.txt), kafka-python and the
raw bytes say, with the format strings of the spec, and compared line by line.
"""

from __future__ import annotations

import json
import struct
import subprocess
from pathlib import Path

import pytest
from kafka.record import MemoryRecords

from segmentlog_source.cli.dump_log import java_file
from tests.cli.helpers import (SEGMENTLOG, break_first_record, client_cases, client_log, dump,
                               run_cli, writable_copy)
from tests.conftest import shared_fixture
from tests.fixture_inspect import Digest, InspectBatch, parse_inspect
from tests.storage.helpers import real_id, real_partition_dirs

CASES = client_cases()

# Spec §2.9: the worked example batch and its COMMIT marker, byte for byte.
WORKED_EXAMPLE = bytes.fromhex(
    "0000000000000000 0000003d 00000000 02 e641a44b 0000 00000000 0000018bcfe56800"
    "0000018bcfe56800 ffffffffffffffff ffff ffffffff 00000001 16 00 00 00 01 0a 68656c6c6f 00")
COMMIT_MARKER = bytes.fromhex(
    "000000000000000a 00000042 00000003 02 f44427a9 0030 00000000 0000018bcfe56801 "
    "0000018bcfe56801 00000000000003e8 0002 ffffffff 00000001 20 00 00 00 08 00000001 0c "
    "000000000005 00")


def test_worked_example_through_the_console_script(tmp_path):
    (tmp_path / "00000000000000000000.log").write_bytes(WORKED_EXAMPLE)
    result = run_cli("dump", "--print-data-log", "--files", "00000000000000000000.log",
                     cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout == (  # the example of spec §10.2, verbatim
        "Dumping 00000000000000000000.log\n"
        "Log starting offset: 0\n"
        "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false "
        "deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000000 size: 73 "
        "magic: 2 compresscodec: none crc: 3863061579 isvalid: true\n"
        "| offset: 0 CreateTime: 1700000000000 keySize: -1 valueSize: 5 sequence: -1 "
        "headerKeys: [] payload: hello\n")


def test_marker_line_and_non_consecutive_offsets(tmp_path):
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(WORKED_EXAMPLE + COMMIT_MARKER)
    out, err = dump(log, print_data_log=True)
    assert out.splitlines()[4:] == [
        "baseOffset: 10 lastOffset: 10 count: 1 baseSequence: -1 lastSequence: -1 producerId: "
        "1000 producerEpoch: 2 partitionLeaderEpoch: 3 isTransactional: true isControl: true "
        "deleteHorizonMs: OptionalLong.empty position: 73 CreateTime: 1700000000001 size: 78 "
        "magic: 2 compresscodec: none crc: 4098107305 isvalid: true",
        "| offset: 10 CreateTime: 1700000000001 keySize: 4 valueSize: 6 sequence: -1 "
        "headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 5"]
    assert err == f"Non-consecutive offsets in {log}\n  0 is followed by 10\n"


# -- every kafka-clients case, line by line ---------------------------------------------------

def _sequence(base: int, delta: int) -> int:
    """DefaultRecordBatch.incrementSequence, written out independently."""
    if base < 0:
        return -1
    return base + delta if base + delta <= 2**31 - 1 else base + delta - 2**31


def _size(blob) -> int:
    if blob is None:
        return -1
    return blob.length if isinstance(blob, Digest) else len(blob)


def _delete_horizon(log: bytes, b: InspectBatch) -> str:
    if b.magic < 2 or not struct.unpack_from(">h", log, b.position + 21)[0] & 0x40:
        return "OptionalLong.empty"
    return f"OptionalLong[{struct.unpack_from('>q', log, b.position + 27)[0]}]"


def _legacy_record_crcs(log: bytes) -> list[int]:
    """The CRC of every legacy record (inner messages for wrappers), as kafka-python reads it."""
    records, crcs = MemoryRecords(log), []
    while (batch := records.next_batch()) is not None:
        crcs += [r.checksum for r in batch] if batch.magic < 2 else []
    return crcs


def expected_dump(case: Path) -> list[str]:
    """DumpLogSegments 4.4's stdout with --deep-iteration, from Kafka's inspect.txt."""
    log_path = client_log(case)
    log = log_path.read_bytes()
    legacy_crcs = iter(_legacy_record_crcs(log))
    lines = [f"Dumping {log_path}", f"Log starting offset: {int(log_path.name[:20])}"]
    for b in parse_inspect(case / "inspect.txt").batches:
        tail = (f" position: {b.position} {b.timestamp_type}: {b.max_timestamp} size: {b.size} "
                f"magic: {b.magic} compresscodec: {b.codec} crc: {b.checksum} isvalid: true")
        if b.magic < 2:
            lines.append(f"offset: {b.last_offset}{tail}")
        else:
            lines.append(
                f"baseOffset: {b.base_offset} lastOffset: {b.last_offset} count: {b.record_count} "
                f"baseSequence: {b.base_sequence} lastSequence: "
                f"{_sequence(b.base_sequence, b.last_offset - b.base_offset)} producerId: "
                f"{b.producer_id} producerEpoch: {b.producer_epoch} partitionLeaderEpoch: "
                f"{b.partition_leader_epoch} isTransactional: {str(b.is_transactional).lower()} "
                f"isControl: {str(b.is_control).lower()} deleteHorizonMs: "
                f"{_delete_horizon(log, b)}{tail}")
        controls = {c.offset: c for c in b.controls}
        for r in b.records:
            line = (f"| offset: {r.offset} {b.timestamp_type}: {r.timestamp} keySize: "
                    f"{_size(r.key)} valueSize: {_size(r.value)}")
            if b.magic < 2:
                line += f" isValid: true crc: {next(legacy_crcs)}"   # no stray brace: 4.3+
            else:
                line += (f" sequence: {_sequence(b.base_sequence, r.offset - b.base_offset)} "
                         f"headerKeys: [{','.join(k for k, _ in r.headers)}]")
            if r.offset in controls:
                c = controls[r.offset]
                line += f" endTxnMarker: {c.type} coordinatorEpoch: {c.coordinator_epoch}"
            lines.append(line)
    return lines


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_deep_dump_matches_kafka_line_by_line(case):
    out, err = dump(client_log(case), deep_iteration=True)
    assert out.splitlines() == expected_dump(case)
    gaps = case.name == "v2-compacted-gaps"
    assert (err != "") == gaps  # only the compacted case has offset gaps


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_shallow_dump_is_the_batch_lines(case):
    out, err = dump(client_log(case))
    assert out.splitlines() == [line for line in expected_dump(case) if not line.startswith("|")]
    assert err == ""


def test_compacted_case_reports_every_gap():
    case = shared_fixture("kafka-clients", "v2-compacted-gaps")
    offsets = [r.offset for b in parse_inspect(case / "inspect.txt").batches for r in b.records]
    gaps = [(a, b) for a, b in zip(offsets, offsets[1:]) if b != a + 1]
    _, err = dump(client_log(case), deep_iteration=True)
    lines = err.splitlines()
    assert lines[0] == f"Non-consecutive offsets in {client_log(case)}"
    assert lines[1:] == [f"  {a} is followed by {b}" for a, b in gaps]  # 4.4: as found
    assert len(gaps) >= 3


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_json_agrees_with_inspect(case):
    out, _ = dump(client_log(case), deep_iteration=True, json=True)
    objects = [json.loads(line) for line in out.splitlines()]
    assert objects[0] == {"kind": "file", "path": str(client_log(case)), "type": "log",
                          "baseOffset": int(client_log(case).name[:20])}
    batches = [o for o in objects if o["kind"] == "batch"]
    records = [o for o in objects if o["kind"] == "record"]
    expected = parse_inspect(case / "inspect.txt").batches
    assert len(batches) == len(expected)
    for got, b in zip(batches, expected):
        want = {
            "baseOffset": b.base_offset, "lastOffset": b.last_offset,
            "count": b.record_count, "position": b.position, "size": b.size, "magic": b.magic,
            "compresscodec": b.codec, "crc": b.checksum, "isvalid": True,
            "isTransactional": b.is_transactional, "isControl": b.is_control,
            "producerId": b.producer_id, "producerEpoch": b.producer_epoch,
            "baseSequence": b.base_sequence, "partitionLeaderEpoch": b.partition_leader_epoch,
            "timestampType": b.timestamp_type, "maxTimestamp": b.max_timestamp}
        assert {k: got[k] for k in want} == want
    want = [(r, {c.offset: c for c in b.controls}.get(r.offset))
            for b in expected for r in b.records]
    assert len(records) == len(want)
    for got, (r, control) in zip(records, want):
        assert (got["offset"], got["timestamp"], got["keySize"], got["valueSize"],
                got["headerKeys"]) == (r.offset, r.timestamp, _size(r.key), _size(r.value),
                                       [k for k, _ in r.headers])
        if control is not None:
            assert (got["controlType"], got["coordinatorEpoch"]) == (control.type,
                                                                      control.coordinator_epoch)


def test_json_payloads_are_the_values():
    case = shared_fixture("kafka-clients", "v2-headers")
    out, _ = dump(client_log(case), print_data_log=True, json=True)
    records = [json.loads(line) for line in out.splitlines() if '"kind": "record"' in line]
    expected = [r for b in parse_inspect(case / "inspect.txt").batches for r in b.records]
    for got, r in zip(records, expected, strict=True):
        if r.value is None or isinstance(r.value, bytes):
            assert got["payload"] == (None if r.value is None
                                      else r.value.decode("utf-8", "replace"))


# -- broker-written index files ---------------------------------------------------------------

INDEXED = [(p, name) for p in real_partition_dirs() for name in sorted(
    f.name for f in p.iterdir() if f.suffix in (".index", ".timeindex"))]


@pytest.mark.parametrize("path,name", INDEXED, ids=[f"{real_id(p)}/{n}" for p, n in INDEXED])
def test_real_index_dumps_agree_with_inspect(path, name):
    file = path / name
    base = int(name[:20])
    inspect = parse_inspect(path / "inspect.txt")
    out, err = dump(file)
    if file.suffix == ".index":
        entries = inspect.index.get(name, [])
        body = ([f"offset: {base + rel} position: {pos}" for rel, pos in entries] if entries
                else [f"{file} is empty."])
    else:
        body = [f"timestamp: {ts} offset: {base + rel}"
                for ts, rel in inspect.timeindex.get(name, [])]
    assert out.splitlines() == [f"Dumping {file}"] + body
    assert err == ""  # leader-written: every entry agrees with the log
    out, err = dump(file, verify_index_only=True)
    assert out.splitlines() == [f"Dumping {file}"] + [b for b in body if b.endswith("empty.")]
    assert err == ""


def test_index_json():
    path = shared_fixture("kafka-real", "william0423-kafka", "__consumer_offsets-28")
    inspect = parse_inspect(path / "inspect.txt")
    out, _ = dump(path / "00000000000000000000.index", path / "00000000000000000000.timeindex",
                  json=True)
    objects = [json.loads(line) for line in out.splitlines()]
    assert [(o["offset"], o["position"]) for o in objects if o["kind"] == "index"] == \
        inspect.index["00000000000000000000.index"]
    assert [(o["timestamp"], o["offset"]) for o in objects if o["kind"] == "timeindex"] == \
        inspect.timeindex["00000000000000000000.timeindex"]
    files = [o for o in objects if o["kind"] == "file"]
    assert [(f["type"], f["entries"]) for f in files] == [("index", 254), ("timeindex", 258)]


def test_index_sanity_check(tmp_path):
    path = writable_copy(shared_fixture("kafka-real", "william0423-kafka", "__consumer_offsets-28"),
                         tmp_path / "p")
    index = path / "00000000000000000000.index"
    out, _ = dump(index, index_sanity_check=True)
    assert out.splitlines()[1] == f"{index} passed sanity check."
    data = bytearray(index.read_bytes())
    data[8:16], data[16:24] = data[16:24], data[8:16]  # unsort entries 1 and 2
    index.write_bytes(bytes(data))
    result = run_cli("dump", "--index-sanity-check", "--files", index)
    assert result.returncode == 2
    assert result.stderr.startswith(f"segmentlog: {index} at byte 16: ")
    assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1


def test_index_mismatches_are_reported_last_first(tmp_path):
    path = writable_copy(shared_fixture("kafka-real", "william0423-kafka", "__consumer_offsets-28"),
                         tmp_path / "p")
    index = path / "00000000000000000000.index"
    entries = [struct.unpack_from(">ii", index.read_bytes(), i) for i in range(0, 2032, 8)]
    log_size = (path / "00000000000000000000.log").stat().st_size
    patched = list(entries)
    patched[3] = (entries[3][0], entries[2][1])            # points at an earlier batch
    patched[-1] = (entries[-1][0], log_size + 100)         # points past the end of the log
    index.write_bytes(b"".join(struct.pack(">ii", *e) for e in patched))
    out, err = dump(index, verify_index_only=True)
    assert out == f"Dumping {index}\n"
    assert err.splitlines() == [
        f"Mismatches in :{index}",
        f"  Index offset: {entries[-1][0]}, log offset: -1",
        f"  Index offset: {entries[3][0]}, log offset: {entries[2][0]}"]


def test_time_index_problems(tmp_path):
    path = writable_copy(shared_fixture("kafka-real", "william0423-kafka", "debug_topic-0"),
                         tmp_path / "p")
    time_index = path / "00000000000000000000.timeindex"
    # real entries: (1534299423772, 29), (1534300904976, 39); make them disagree with the log
    time_index.write_bytes(struct.pack(">qi", 1534299423772, 29) + struct.pack(">qi", 5, 39)
                           + struct.pack(">qi", 7, 25))
    out, err = dump(time_index)
    assert out.splitlines()[1:] == ["timestamp: 1534299423772 offset: 29",
                                    "timestamp: 5 offset: 39", "timestamp: 7 offset: 25"]
    assert err.splitlines() == [
        f"Found timestamp mismatch in :{time_index}",
        "  Index timestamp: 5, log timestamp: 1534300904976",
        f"Found out of order timestamp in :{time_index}",
        "  Index timestamp: 5, Previously indexed timestamp: 1534299423772",
        f"The following indexed offsets are not found in :{time_index}",
        "Indexed offset: 25, found log offset: 29"]


def test_max_message_size_too_small_is_one_error_line():
    path = shared_fixture("kafka-real", "william0423-kafka", "__consumer_offsets-28")
    result = run_cli("dump", "--max-message-size", "10", "--files",
                     path / "00000000000000000000.index")
    assert result.returncode == 2
    assert result.stderr.startswith("segmentlog: option --max-message-size=10: the batch at byte")
    assert len(result.stderr.splitlines()) == 1


# -- txn indexes, producer snapshots, KRaft snapshots -----------------------------------------

def test_txn_index_lines(tmp_path):
    entries = [(0, 4000, 0, 10, 11), (0, 7000, 3, 20, 21)]
    file = tmp_path / "00000000000000000000.txnindex"
    file.write_bytes(b"".join(struct.pack(">hqqqq", *e) for e in entries) + b"\0" * 5)
    out, err = dump(file)
    assert out.splitlines() == [
        f"Dumping {file}",
        "version: 0 producerId: 4000 firstOffset: 0 lastOffset: 10 lastStableOffset: 11",
        "version: 0 producerId: 7000 firstOffset: 3 lastOffset: 20 lastStableOffset: 21"]
    assert err == ""


def test_producer_snapshot_lines():
    file = shared_fixture("kafka-real", "gozieokafor-data-store", "input-topic-0",
                          "00000000000000000009.snapshot")
    data = file.read_bytes()
    expected = [f"Dumping {file}"]
    for i in range(struct.unpack_from(">i", data, 6)[0]):
        pid, epoch, last_seq, last_offset, delta, ts, coordinator, txn = struct.unpack_from(
            ">qhiqiqiq", data, 10 + 46 * i)
        txn_text = "OptionalLong.empty" if txn < 0 else f"OptionalLong[{txn}]"
        line = (f"producerId: {pid} producerEpoch: {epoch} coordinatorEpoch: {coordinator} "
                f"currentTxnFirstOffset: {txn_text} lastTimestamp: {ts} ")
        if last_offset >= 0:
            line += (f"firstSequence: {last_seq - delta} lastSequence: {last_seq} lastOffset: "
                     f"{last_offset} offsetDelta: {delta} timestamp: {ts}")
        expected.append(line)
    out, err = dump(file)
    assert out.splitlines() == expected and len(expected) == 6 and err == ""


def test_corrupt_snapshot_message_goes_to_stderr(tmp_path):
    file = tmp_path / "00000000000000000009.snapshot"
    file.write_bytes(shared_fixture("kafka-real", "gozieokafor-data-store", "input-topic-0",
                                    file.name).read_bytes())
    data = bytearray(file.read_bytes())
    data[20] ^= 1
    file.write_bytes(bytes(data))
    out, err = dump(file)
    assert out == f"Dumping {file}\n"
    assert "CRC mismatch" in err and str(file) in err


def test_kraft_snapshot_lines():
    path = shared_fixture("kafka-real", "gozieokafor-data-store", "__cluster_metadata-0")
    file = path / "00000000000000016435-0000000008.checkpoint"
    out, err = dump(file, deep_iteration=True)
    lines = out.splitlines()
    assert lines[:2] == [f"Dumping {file}", "Snapshot end offset: 16435, epoch: 8"]
    header_value = bytes.fromhex("000000000195348cd45c00")  # inspect.txt's record at offset 0
    ts = struct.unpack_from(">q", header_value, 2)[0]
    assert lines[3].endswith(f' SnapshotHeader {{"version":0,"lastContainedLogTimestamp":{ts}}}')
    assert lines[-1].endswith(' SnapshotFooter {"version":0}')
    assert err == ""
    out, _ = dump(path.parent / "bootstrap.checkpoint")
    assert out.splitlines()[1] == "KRaft bootstrap snapshot"


# -- odd inputs -------------------------------------------------------------------------------

def test_files_that_are_not_segment_files(tmp_path):
    partition = shared_fixture("kafka-real", "william0423-kafka", "debug_topic-0")
    names = [partition / "leader-epoch-checkpoint", partition / "inspect.txt", partition,
             tmp_path / "cleaner-offset-checkpoint", tmp_path / "README"]
    out, err = dump(*names)
    assert out.splitlines() == [f"Dumping {n}" for n in names]
    assert err.splitlines() == [
        f"Ignoring {names[0]}: the partition's leader epochs (a text checkpoint: read it as text)",
        f"Ignoring unknown file {names[1]}",
        f"Ignoring {names[2]}: it is a directory (--files takes files; `segmentlog dump "
        f"{names[2]}` dumps the files in it)",
        f"Ignoring {names[3]}: the log cleaner's progress (a text checkpoint)",
        f"Ignoring {names[4]}: its name has no suffix, so its kind is unknown (expected .log, "
        ".checkpoint, .index, .timeindex, .txnindex or .snapshot)"]


def test_missing_file_is_one_error_line(tmp_path):
    result = run_cli("dump", "--files", tmp_path / "00000000000000000000.log")
    assert result.returncode == 2
    assert result.stdout == f"Dumping {tmp_path}/00000000000000000000.log\n"
    assert result.stderr == f"segmentlog: no such file: {tmp_path}/00000000000000000000.log\n"


def test_paths_print_as_java_files_do(tmp_path):
    assert java_file("a//b///c/") == "a/b/c" and java_file("/") == "/"
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "00000000000000000000.log").write_bytes(WORKED_EXAMPLE)
    out, _ = dump(f"{tmp_path}//d/00000000000000000000.log")
    assert out.splitlines()[0] == f"Dumping {tmp_path}/d/00000000000000000000.log"


def test_invalid_bytes_at_the_end(tmp_path):
    case = shared_fixture("kafka-clients", "v2-none")
    batches = parse_inspect(case / "inspect.txt").batches
    log = tmp_path / "00000000000000000000.log"
    data = client_log(case).read_bytes()
    cut = batches[-1].position + 100  # inside the last batch
    log.write_bytes(data[:cut])
    out, _ = dump(log)
    assert out.splitlines()[-1] == "Found 100 invalid bytes at the end of 00000000000000000000.log"
    assert len(out.splitlines()) == 2 + len(batches) - 1 + 1
    log.write_bytes(data + b"garbage!" * 3)  # Kafka stops before trusting a garbage size
    out, _ = dump(log)
    assert out.splitlines()[-1] == "Found 24 invalid bytes at the end of 00000000000000000000.log"
    out, _ = dump(log, json=True)
    assert json.loads(out.splitlines()[-1]) == {"kind": "invalidBytes", "position": len(data),
                                                "count": 24}


def test_undecodable_records_are_one_error_line_at_their_batch(tmp_path):
    case = shared_fixture("kafka-clients", "v2-none")
    batch = parse_inspect(case / "inspect.txt").batches[2]
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(client_log(case).read_bytes())
    break_first_record(log, batch.position)
    assert run_cli("dump", "--files", log).returncode == 0  # a shallow dump reads no records
    result = run_cli("dump", "--deep-iteration", "--files", log)
    assert result.returncode == 2
    assert result.stderr.startswith(f"segmentlog: {log} at byte {batch.position}: record 0 of ")
    assert len(result.stderr.splitlines()) == 1


def test_max_bytes_reads_only_whole_batches_before_it(tmp_path):
    case = shared_fixture("kafka-clients", "v2-none")
    batches = parse_inspect(case / "inspect.txt").batches
    limit = batches[3].position + batches[3].size + 10
    out, _ = dump(client_log(case), max_bytes=limit)
    assert len(out.splitlines()) == 2 + 4  # no "invalid bytes" line when --max-bytes is given


def test_skip_record_metadata(tmp_path):
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(WORKED_EXAMPLE)
    out, _ = dump(log, print_data_log=True, skip_record_metadata=True)
    # DumpLogSegments 4.4's line for a record without a key (4.2 printed no "|")
    assert out.splitlines()[-1] == "| payload: hello"


def test_piping_into_head_ends_quietly():
    log = shared_fixture("kafka-real", "xpxwo100-test-topic", "TEST-TOPIC-0",
                         "00000000000000000000.log")  # 21211 records: more than a pipe holds
    result = subprocess.run(f"'{SEGMENTLOG}' dump --deep-iteration --files '{log}' | head -1",
                            shell=True, capture_output=True, text=True, timeout=600)
    assert result.stdout == f"Dumping {log}\n"
    assert result.stderr == ""


# -- directories (issue #35) ------------------------------------------------------------------

def test_dump_of_a_partition_directory_is_every_file_in_segment_order(tmp_path):
    partition = shared_fixture("kafka-real", "william0423-kafka", "debug_topic-0")
    result = run_cli("dump", partition)
    assert result.returncode == 0, result.stderr
    names = ["00000000000000000000.log", "00000000000000000000.index",
             "00000000000000000000.timeindex", "00000000000000000030.snapshot",
             "00000000000000000040.snapshot"]
    dumping = [line for line in result.stdout.splitlines() if line.startswith("Dumping ")]
    assert dumping == [f"Dumping {partition / n}" for n in names]
    # each file as --files prints it, in that order
    by_files = run_cli("dump", "--files", ",".join(str(partition / n) for n in names))
    assert by_files.returncode == 0 and by_files.stdout == result.stdout


def test_dump_of_a_data_directory_goes_partition_by_partition():
    root = shared_fixture("kafka-real", "william0423-kafka")
    result = run_cli("dump", root)
    assert result.returncode == 0, result.stderr
    dumping = [line.split()[1] for line in result.stdout.splitlines()
               if line.startswith("Dumping ")]
    assert [Path(d).parent.name for d in dumping][0] == "__consumer_offsets-28"
    assert dumping[-1].endswith("debug_topic-0/00000000000000000040.snapshot")


def test_files_naming_only_a_directory_dumps_nothing_and_fails():
    partition = shared_fixture("kafka-real", "william0423-kafka", "debug_topic-0")
    result = run_cli("dump", "--files", partition)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert lines[0] == (f"Ignoring {partition}: it is a directory (--files takes files; "
                        f"`segmentlog dump {partition}` dumps the files in it)")
    assert lines[1].startswith("segmentlog: option --files=")
    assert ": no segment, index or snapshot file was dumped" in lines[1]


def test_dump_without_files_or_directories_names_both():
    result = run_cli("dump")
    assert result.returncode == 2
    assert result.stderr.startswith("segmentlog dump: give partition or data directories "
                                    "(segmentlog dump DIR) or --files F1,F2,...")
    assert "usage: segmentlog dump" in result.stderr
