"""KRaft cluster metadata records decoded (values/kafka_internal/metadata_*.py), their secrets
redacted, and `segmentlog dump --cluster-metadata-decoder` against Kafka 4.4's DumpLogSegments.

Real records: the KRaft snapshots and bootstrap checkpoints of the shared fixtures. Made records
(metadata_samples.py): every record type and version, planted secrets, and hostile values; the
dump of a log of them is DumpLogSegments' line for line, except that a secret Kafka prints is
"(redacted)" here.
"""

from __future__ import annotations

import difflib
import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from segmentlog_source.cli.dump import dump_files
from segmentlog_source.cli.dump_context import DumpOptions
from segmentlog_source.format.record_encoder import encode_batch
from segmentlog_source.format.records import Record
from segmentlog_source.values.kafka_internal.metadata_messages import (CLUSTER_METADATA,
                                                                       METADATA_RECORD_TYPES)
from segmentlog_source.values.kafka_internal.metadata_records import (
    REDACTED, MetadataRecordError, decode_metadata, dump_payload, hides_raw, redact)
from tests.cli.test_dump_vs_kafka import kafka_dump
from tests.conftest import shared_fixture
from tests.values import metadata_samples as ms
from tests.values.test_kafka_internal import assert_same_lines

FLAG = "--cluster-metadata-decoder"


def our_dump(files: list[Path], json_lines: bool = False, skip: bool = False) -> bytes:
    out, err = io.StringIO(), io.StringIO()
    dump_files([str(f) for f in files], DumpOptions(decoder=CLUSTER_METADATA, json=json_lines,
                                                    skip_record_metadata=skip), out, err)
    assert err.getvalue() == ""
    return out.getvalue().encode("utf-8")


def write_log(path: Path, values: list, per_batch: int = 25) -> Path:
    records = [Record(i, 1_700_000_000_000 + i, None, v) for i, v in enumerate(values)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(encode_batch(records[i:i + per_batch], base_offset=i)
                              for i in range(0, len(records), per_batch)))
    return path


def redacted_like_ours(kafka_line: bytes, our_line: bytes) -> bytes:
    """Kafka's line with what our line redacts redacted the same way (the one deliberate
    difference): a decoder's payload JSON field by field, a raw payload (--print-data-log on a
    metadata file) whole; other lines unchanged."""
    if REDACTED.encode() not in our_line:
        return kafka_line
    head, _, payload = kafka_line.partition(b"payload: ")
    our_head, _, our_payload = our_line.partition(b"payload: ")
    assert head == our_head, (kafka_line, our_line)
    if our_payload == REDACTED.encode():
        return our_line
    ours = json.loads(our_payload)
    theirs = json.loads(payload)
    for name, value in ours["data"].items():
        if value == REDACTED and theirs["data"][name] != REDACTED:
            theirs["data"][name] = REDACTED
    assert theirs == ours, (kafka_line, our_line)
    return our_line


# How each line of DumpLogSegments' own starts: an unpaired line after a raw secret that starts
# so is a line of the dump (one segmentlog's output left out), never the rest of the secret.
DUMP_LINE_STARTS = (b"Dumping ", b"Log starting offset: ", b"Snapshot end offset: ",
                    b"baseOffset: ", b"| offset: ", b"offset: ", b"Ignoring ")


def kafka_with_our_redactions(kafka_out: bytes, ours: bytes) -> bytes:
    """Kafka's output with our redactions applied to the lines that pair with ours (the same
    text before the payload), so that where the outputs part is the first difference left."""
    return _with_our_redactions(kafka_out, ours)[0]


def _with_our_redactions(kafka_out: bytes, ours: bytes) -> tuple[bytes, int]:
    """kafka_with_our_redactions, and how many of Kafka's lines were redacted."""
    kafka_lines, lines = kafka_out.split(b"\n"), ours.split(b"\n")
    head = [line.partition(b" payload: ")[0] for line in kafka_lines]
    our_head = [line.partition(b" payload: ")[0] for line in lines]
    matcher = difflib.SequenceMatcher(None, head, our_head, autojunk=False)
    paired: dict[int, int] = {}
    redacted = 0
    for block in matcher.get_matching_blocks():
        for k in range(block.size):
            i, j = block.a + k, block.b + k
            line = redacted_like_ours(kafka_lines[i], lines[j])
            redacted += line != kafka_lines[i]
            kafka_lines[i], paired[i] = line, j
    # A raw payload is printed as its bytes: a secret's random bytes (a SCRAM salt) may hold a
    # newline, and Kafka's payload then runs on over lines that no line of ours pairs with. They
    # are part of the payload redacted whole, so they go with it; a line that starts as the
    # dump's own lines do ends the payload (so a line segmentlog left out still shows).
    kept, in_raw_secret = [], False
    for i, line in enumerate(kafka_lines):
        if i in paired:
            in_raw_secret = lines[paired[i]].endswith(b"payload: " + REDACTED.encode())
        elif in_raw_secret and not line.startswith(DUMP_LINE_STARTS):
            continue
        else:
            in_raw_secret = False
        kept.append(line)
    return b"\n".join(kept), redacted


def assert_same_but_secrets(kafka_out: bytes, ours: bytes) -> int:
    """Line for line equal but for redacted secrets; returns how many lines were redacted."""
    fixed, redacted = _with_our_redactions(kafka_out, ours)
    assert_same_lines(fixed, ours)
    return redacted


def assert_redacted_where_due(dump: bytes) -> int:
    """Every payload of a sensitive config and every SCRAM credential in a text dump shows
    "(redacted)" in place of its secret; returns how many payloads hold one."""
    from segmentlog_source.values.kafka_internal.metadata_configs import config_is_sensitive

    due = 0
    for line in dump.split(b"\n"):
        if b"payload: {" not in line:
            continue
        payload = json.loads(line.split(b"payload: ", 1)[1])
        data = payload["data"]
        if payload["type"] == "CONFIG_RECORD" and data["value"] is not None \
                and config_is_sensitive(data["resourceType"], data["name"]):
            assert data["value"] == REDACTED, line
            due += 1
        elif payload["type"] == "USER_SCRAM_CREDENTIAL_RECORD":
            assert [data[k] for k in ("salt", "storedKey", "serverKey")] == [REDACTED] * 3
            due += 1
    return due


def assert_no_secret(text) -> None:
    data = text if isinstance(text, str) else text.decode("utf-8", "replace")
    for secret in ms.SECRET_TEXTS:
        assert secret not in data


# -- decoding --------------------------------------------------------------------------------

def test_every_record_type_and_version_reads_back():
    seen = set()
    for key, version, fields, value in ms.every_type(per_version=6):
        record = decode_metadata(value)
        assert (record.api_key, record.version, record.fields) == (key, version, fields)
        assert record.record_type == METADATA_RECORD_TYPES[key].name
        payload = json.loads(record.json())
        assert (payload["type"], payload["version"]) == (record.record_type, version)
        seen.add((key, version))
    assert len({k for k, _ in seen}) == 27 and len(seen) == 38


def test_kafka_constant_names():
    names = {k: t.name for k, t in METADATA_RECORD_TYPES.items()}
    assert names[2] == "TOPIC_RECORD" and names[21] == "ZK_MIGRATION_STATE_RECORD"
    assert names[20] == "NO_OP_RECORD" and names[28] == "CLEAR_ELR_RECORD"
    assert sorted(set(range(30)) - set(names)) == [6, 13, 16]


def test_tagged_fields_are_read_and_printed_only_when_set():
    fields = ms.fields_of(5, partitionId=0, topicId="AAAAAAAAAAAAAAAAAAAAAQ", isr=[1, 2])
    record = decode_metadata(ms.encode(5, 0, fields))
    assert record.fields["leader"] == -2 and record.fields["isr"] == [1, 2]
    assert json.loads(record.data_json()) == {"partitionId": 0,
                                              "topicId": "AAAAAAAAAAAAAAAAAAAAAQ",
                                              "isr": [1, 2]}
    # eligibleLeaderReplicas (tag 6) exists from version 2: at 0 Kafka refuses the tag
    v2 = ms.encode(5, 2, ms.fields_of(5, topicId=fields["topicId"],
                                      eligibleLeaderReplicas=[4]))
    as_v0 = v2[:2] + b"\x00" + v2[3:]
    assert decode_metadata(v2).fields["eligibleLeaderReplicas"] == [4]
    with pytest.raises(MetadataRecordError, match=r"tag 6 \(eligibleLeaderReplicas\) at byte"):
        decode_metadata(as_v0)
    # a tag the record does not declare is skipped (Kafka keeps it unread)
    unknown = ms.encode(2, 0, ms.fields_of(2, name="t"))[:-1] + b"\x01\x09\x02ab"
    assert decode_metadata(unknown).fields.unknown_tags == ((9, b"ab"),)


def test_kafka_error_texts():
    topic = ms.encode(2, 0, ms.fields_of(2, name="t", topicId="AAAAAAAAAAAAAAAAAAAAAQ"))
    cases = {
        ms.frame(2, 0, topic[3:], 0): "Could not deserialize metadata record with frame version "
        "0. Note that upgrades from the preview release of KRaft in 2.8 to newer versions are "
        "not supported.",
        ms.frame(2, 0, topic[3:], 3): "Could not deserialize metadata record due to unknown "
        "frame version 3(only frame version 1 is supported)",
        ms.frame(6, 0, b""): "org.apache.kafka.common.errors.UnsupportedVersionException: "
        "Unknown metadata id 6",
        topic[:-1]: "Failed to deserialize record with type 2",
        topic + b"\x00\x00": "Found 2 byte(s) of garbage after 2",
        b"": "Error while reading frame version",
        b"\x01\x02\xff\xff\x03": "Value for version was too large.",
    }
    for value, kafka in cases.items():
        with pytest.raises(MetadataRecordError) as err:
            decode_metadata(value, strict=False)
        assert err.value.kafka == kafka
        assert dump_payload(value, 17) == f"Error at 17, skipping. {kafka}"


def test_unknown_versions_are_refused_unless_read_as_kafka_does():
    newer = ms.frame(2, 1, ms.encode(2, 0, ms.fields_of(2, name="t"))[3:])
    with pytest.raises(MetadataRecordError, match="TopicRecord of unknown version 1 "
                       r"\(known: 0-0\)"):
        decode_metadata(newer)
    assert decode_metadata(newer, strict=False).version == 1
    assert dump_payload(newer, 0).startswith('{"type":"TOPIC_RECORD","version":1,')


def test_a_reason_names_the_field_and_byte():
    value = ms.encode(3, 2, ms.fields_of(3, replicas=[1, 2, 3], isr=[1]))
    with pytest.raises(MetadataRecordError) as err:
        decode_metadata(value[:27])   # frame 3, partitionId 4, topicId 16, count 1
    assert "PartitionRecord v2: replicas[" in err.value.reason
    assert "byte" in err.value.reason


# -- secrets ---------------------------------------------------------------------------------

def test_secrets_are_redacted_and_other_values_shown():
    records = [decode_metadata(v) for v in ms.secret_records()]
    shown = []
    for record in records:
        visible = redact(record)
        text = visible.json()
        assert_no_secret(text)
        assert_no_secret(repr(dict(visible.fields)))
        if record.api_key == 4 and record.fields["value"] == "shown-value":
            shown.append(record.fields["name"])
            assert visible is record
        elif record.api_key == 4 and record.fields["value"] is None:
            assert visible.fields["value"] is None      # a deletion has nothing to hide
        else:
            assert REDACTED in text and visible.redacted
    assert len(shown) == len(ms.SHOWN_CONFIGS)
    scram = redact(records[len(ms.SENSITIVE_CONFIGS) + 1])
    assert scram.redacted == ("salt", "storedKey", "serverKey")
    assert (scram.fields["name"], scram.fields["iterations"]) == ("alice", 4096)


def test_the_dump_shows_no_secret_in_text_or_json(tmp_path):
    log = write_log(tmp_path / "__cluster_metadata-0" / "00000000000000000000.log",
                    ms.secret_records())
    for json_lines in (False, True):
        out = our_dump([log], json_lines=json_lines)
        assert_no_secret(out)
        assert out.count(REDACTED.encode()) == len(ms.SENSITIVE_CONFIGS) + 1 + 3


def test_print_data_log_of_a_metadata_file_hides_records_with_secrets(tmp_path):
    """Without the decoder, --print-data-log prints values as text: a metadata record holding
    a secret is printed "(redacted)" whole, in text and JSON; the other records as Kafka does."""
    values = ms.secret_records() + [v for *_, v in ms.every_type(per_version=1)]
    log = write_log(tmp_path / "__cluster_metadata-0" / "00000000000000000000.log", values)
    holding = sum(1 for v in values if hides_raw(v))
    assert holding >= len(ms.SENSITIVE_CONFIGS) + 2
    kafka_out, _ = kafka_dump([log], ("--print-data-log",))
    for json_lines in (False, True):
        out, err = io.StringIO(), io.StringIO()
        dump_files([str(log)], DumpOptions(print_data_log=True, json=json_lines), out, err)
        assert_no_secret(out.getvalue())
        if not json_lines:
            redacted = assert_same_but_secrets(kafka_out, out.getvalue().encode())
            assert redacted == holding == out.getvalue().count(REDACTED)
    # the same bytes outside a metadata directory are an ordinary topic's: printed as they are
    other = write_log(tmp_path / "orders-0" / "00000000000000000000.log", ms.secret_records())
    out, err = io.StringIO(), io.StringIO()
    dump_files([str(other)], DumpOptions(print_data_log=True), out, err)
    assert ms.SECRET in out.getvalue()


def test_print_data_log_hides_metadata_records_that_do_not_decode(tmp_path):
    """A record that does not decode (trailing bytes, a version or type this reader lacks, a
    cut tagged section) may still hold a password in its bytes: --print-data-log prints it
    "(redacted)" too (it used to print such records raw); the decoder prints Kafka's "Error
    at" line, which shows no bytes. Every other line is DumpLogSegments' own."""
    bad = ms.undecodable_secrets()
    values = bad + [v for *_, v in ms.every_type(per_version=1)][:20] + [b"", None]
    log = write_log(tmp_path / "__cluster_metadata-0" / "00000000000000000000.log", values)
    hidden = sum(1 for v in values if hides_raw(v))    # drawn ConfigRecords of unknown names
    assert all(hides_raw(v) for v in bad) and hidden > len(bad)
    kafka_out, _ = kafka_dump([log], ("--print-data-log",))
    assert ms.SECRET.encode() in kafka_out
    for json_lines in (False, True):
        out, err = io.StringIO(), io.StringIO()
        dump_files([str(log)], DumpOptions(print_data_log=True, json=json_lines), out, err)
        assert_no_secret(out.getvalue())
        assert out.getvalue().count(REDACTED) == hidden
        if not json_lines:
            assert assert_same_but_secrets(kafka_out, out.getvalue().encode()) == hidden
    decoded = our_dump([log])
    assert_no_secret(decoded)
    assert decoded.count(b"Error at ") == len(bad) + 2     # and the empty and null values


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(index=st.integers(0, len(ms.SENSITIVE_CONFIGS)), tail=st.binary(min_size=1, max_size=6),
       version=st.integers(0, 3))
def test_no_damaged_secret_record_is_printed_raw(tmp_path_factory, index, tail, version):
    """Any sensitive ConfigRecord or SCRAM credential, at any version, with any bytes after
    it: printed by --print-data-log only as "(redacted)"."""
    record = ms.secret_records()[index] if index < len(ms.SENSITIVE_CONFIGS) \
        else ms.secret_records()[len(ms.SENSITIVE_CONFIGS) + 1]
    value = record[:2] + ms.uvarint(version) + record[3:] + tail
    log = write_log(tmp_path_factory.mktemp("m") / "__cluster_metadata-0"
                    / "00000000000000000000.log", [value])
    out, err = io.StringIO(), io.StringIO()
    dump_files([str(log)], DumpOptions(print_data_log=True), out, err)
    assert_no_secret(out.getvalue())
    assert out.getvalue().count(REDACTED) == 1


def test_a_metadata_file_is_known_however_its_path_is_written(tmp_path, monkeypatch):
    """A bare file name given inside the partition directory, a path through `..` or through a
    link to the directory names a metadata file too (a bare name used to be taken as an
    ordinary topic's and printed raw)."""
    part = tmp_path / "__cluster_metadata-0"
    write_log(part / "00000000000000000000.log", ms.secret_records())
    (tmp_path / "link").symlink_to(part, target_is_directory=True)
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(part)
    for given in ("00000000000000000000.log", "./00000000000000000000.log",
                  "../sub/../__cluster_metadata-0/00000000000000000000.log",
                  str(tmp_path / "link" / "00000000000000000000.log")):
        out, err = io.StringIO(), io.StringIO()
        dump_files([given], DumpOptions(print_data_log=True), out, err)
        assert_no_secret(out.getvalue())
        assert out.getvalue().count(REDACTED) == len(ms.SENSITIVE_CONFIGS) + 2, given


# -- against DumpLogSegments -----------------------------------------------------------------

def fixture_metadata_files() -> list[Path]:
    real = shared_fixture("kafka-real")
    files = sorted(real.glob("*/__cluster_metadata-0/*.checkpoint"))
    files += sorted(real.glob("*/__cluster_metadata-0/*.log"))
    return files + sorted(real.glob("*/bootstrap.checkpoint"))


def test_fixture_snapshots_dump_as_kafka_dumps_them():
    files = fixture_metadata_files()
    assert len(files) >= 9
    kafka_out, _ = kafka_dump(files, (FLAG,))
    ours = our_dump(files)
    assert_same_but_secrets(kafka_out, ours)
    assert ours.count(b'"type":"PARTITION_RECORD"') >= 300


def test_dump_of_the_metadata_directory_takes_its_snapshots(tmp_path):
    """`segmentlog dump <__cluster_metadata-0> --cluster-metadata-decoder`: the directory's
    segments, then its snapshots (a data directory's listing leaves the metadata log out)."""
    from tests.cli.helpers import run_cli

    part = shared_fixture("kafka-real", "gozieokafor-data-store", "__cluster_metadata-0")
    result = run_cli("dump", part, FLAG, "--quiet")
    assert result.returncode == 0, result.stderr
    snapshots = sorted(part.glob("*.checkpoint"))
    dumped = [line[len("Dumping "):] for line in result.stdout.split("\n")
              if line.startswith("Dumping ")]
    assert dumped == [str(p) for p in sorted(part.glob("*.snapshot")) + snapshots]
    expected = our_dump(sorted(part.glob("*.snapshot")) + snapshots)
    assert result.stdout.encode() == expected
    data_dir = run_cli("dump", part.parent, "--quiet")
    assert "__cluster_metadata" not in data_dir.stdout


@pytest.fixture(scope="module")
def made_log(tmp_path_factory) -> Path:
    values = [v for *_, v in ms.every_type(per_version=3)] + ms.secret_records() + ms.hostile()
    return write_log(tmp_path_factory.mktemp("meta") / "00000000000000000000.log", values)


@pytest.mark.parametrize("flags", [(FLAG,), (FLAG, "--skip-record-metadata")])
def test_made_records_dump_as_kafka_dumps_them(made_log, flags):
    kafka_out, _ = kafka_dump([made_log], flags)
    ours = our_dump([made_log], skip="--skip-record-metadata" in flags)
    redacted = assert_same_but_secrets(kafka_out, ours)
    # Kafka prints the planted secret in 9 + 2 lines (and the random records' values of
    # configs it does not know, and their SCRAM keys, which are redacted too)
    with_secret = [line for line in kafka_out.split(b"\n")
                   if any(s.encode() in line for s in ms.SECRET_TEXTS)]
    assert len(with_secret) == len(ms.SENSITIVE_CONFIGS) + 2 < redacted
    assert assert_redacted_where_due(ours) == redacted
    assert_no_secret(ours)
    # every hostile value but six Kafka reads: three versions it does not know (read with
    # the newest layout), a TopicRecord of version -1 (read as 0), an unknown tag (skipped)
    # and a changed byte inside a tagged field
    assert ours.count(b"Error at ") == len(ms.hostile()) - 6


def test_randomly_damaged_records_dump_as_kafka_dumps_them(tmp_path):
    """600 records of every type, each damaged at random (seeded): DumpLogSegments and
    segmentlog read or refuse each alike."""
    values = ms.mutations(600)
    log = write_log(tmp_path / "00000000000000000000.log", values, per_batch=50)
    kafka_out, _ = kafka_dump([log], (FLAG, "--skip-record-metadata"))
    ours = our_dump([log], skip=True)
    assert_same_but_secrets(kafka_out, ours)
    errors = ours.count(b"Error at ")
    assert 200 < errors < 600      # both outcomes, many times


def test_json_dump_carries_the_payload(made_log):
    lines = [json.loads(x) for x in our_dump([made_log], json_lines=True).splitlines()]
    records = [x for x in lines if x["kind"] == "record"]
    assert all(r["key"] is None for r in records)
    text = our_dump([made_log]).decode()
    payloads = [line.split(" payload: ", 1)[1] for line in text.split("\n")
                if " payload: " in line]
    assert [r["payload"] for r in records] == payloads


# -- hostile input ---------------------------------------------------------------------------

@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=64))
def test_random_bytes_decode_or_fail_cleanly(data):
    for strict in (True, False):
        try:
            record = decode_metadata(data, strict=strict)
        except MetadataRecordError as err:
            assert err.reason and err.kafka
            assert dump_payload(data, 3) == f"Error at 3, skipping. {err.kafka}"
        else:
            json.loads(record.json())


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(ms.every_type(per_version=2, seed=3)), st.data())
def test_every_cut_or_extension_of_a_record_fails(sample, data):
    value = sample[3]
    cut = data.draw(st.integers(0, len(value) - 1))
    with pytest.raises(MetadataRecordError):
        decode_metadata(value[:cut])
    extra = data.draw(st.binary(min_size=1, max_size=8))
    with pytest.raises(MetadataRecordError, match="follow the record"):
        decode_metadata(value + extra)


# -- which config values are shown, against Kafka's own config definitions ------------------

CONFIG_DEFS_JAVA = """
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;

public class ConfigDefs {
    static void print(int resourceType, ConfigDef def) {
        for (Map.Entry<String, ConfigDef.ConfigKey> e : def.configKeys().entrySet())
            System.out.println(resourceType + " " + e.getKey() + " "
                               + e.getValue().type.isSensitive());
    }

    public static void main(String[] args) {
        print(2, org.apache.kafka.storage.internals.log.LogConfig.configDefCopy());
        print(4, kafka.server.KafkaConfig.configDef());
        print(16, org.apache.kafka.server.metrics.ClientMetricsConfigs.configDef());
        print(32, org.apache.kafka.coordinator.group.GroupConfig.CONFIG_DEF);
    }
}
"""


def test_shown_configs_are_kafkas_non_password_names(tmp_path):
    """metadata_configs.py's names are, per resource type, exactly the names Kafka 4.4's jars
    define with a type other than PASSWORD (run from a single Java source file)."""
    import subprocess

    from segmentlog_source.devtools.kafka import jars, jvm
    from segmentlog_source.values.kafka_internal.metadata_configs import SHOWN_CONFIGS

    source = tmp_path / "ConfigDefs.java"
    source.write_text(CONFIG_DEFS_JAVA)
    result = subprocess.run([jvm.java(), *jvm.SHORT_LIVED_FLAGS, "-cp", jars.classpath("kafka"),
                             str(source)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    kafka: dict[int, set[str]] = {}
    sensitive = set()
    for line in result.stdout.splitlines():
        resource_type, name, is_sensitive = line.split()
        if is_sensitive == "true":
            sensitive.add(name)
        else:
            kafka.setdefault(int(resource_type), set()).add(name)
    assert {k: set(v) for k, v in SHOWN_CONFIGS.items()} == kafka
    assert {"ssl.keystore.password", "sasl.jaas.config", "ssl.key.password"} <= sensitive


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=40),
                          st.sampled_from(ms.mutations(200, seed=5) + ms.secret_records()
                                          + ms.undecodable_secrets())),
                max_size=30))
def test_columns_of_any_values_align_and_hide_secrets(values):
    import pyarrow as pa

    from segmentlog_source.values.kafka_internal.columns import (KEY_ARROW_TYPE,
                                                                 VALUE_ARROW_TYPE,
                                                                 decode_metadata_columns)

    keys, decoded, errors, raw = decode_metadata_columns(pa.array(values, pa.binary()))
    assert (keys.type, decoded.type) == (KEY_ARROW_TYPE, VALUE_ARROW_TYPE)
    assert len(keys) == len(decoded) == len(errors) == len(raw) == len(values)
    for value, key, row, error, kept in zip(values, keys.to_pylist(), decoded.to_pylist(),
                                            errors, raw.to_pylist()):
        if error is not None:
            assert key is None and row is None and kept is None
        else:
            assert kept is None if row["metadata"]["redacted"] else kept == value
            assert_no_secret(row["json"])
    assert_no_secret(repr(decoded.to_pylist()) + repr(raw.to_pylist()))


def test_a_raw_secret_payload_that_holds_a_newline_is_redacted_whole():
    """The comparison's own helper: Kafka prints a raw payload's bytes, so a secret's random bytes
    may break its line; the lines that follow, up to the next one paired with ours, are the
    rest of that payload. A line differing elsewhere still shows."""
    secret = bytes([7, 10, 200, 10, 3])     # two newlines among the random bytes
    head = b"| offset: 5 CreateTime: 1 keySize: -1 valueSize: 5 sequence: -1 headerKeys: []"
    kafka = b"\n".join([b"baseOffset: 5", head + b" payload: " + secret, b"baseOffset: 6"])
    ours = b"\n".join([b"baseOffset: 5", head + b" payload: " + REDACTED.encode(),
                       b"baseOffset: 6"])
    assert kafka_with_our_redactions(kafka, ours) == ours
    assert kafka_with_our_redactions(kafka.replace(b"baseOffset: 6", b"baseOffset: 7"),
                                     ours) != ours
    # the secret counts once, its broken-off lines not at all
    assert assert_same_but_secrets(kafka, ours) == 1
    # a dump line right after the secret that segmentlog's output lacks still shows
    kafka_more = kafka.replace(b"baseOffset: 6", b"| offset: 6 CreateTime: 1\nbaseOffset: 6")
    assert kafka_with_our_redactions(kafka_more, ours) != ours
    with pytest.raises(pytest.fail.Exception, match="differs at line 3"):
        assert_same_but_secrets(kafka_more, ours)
