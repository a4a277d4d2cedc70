"""`segmentlog dump --cluster-metadata-decoder` against Kafka 4.4's DumpLogSegments on the test
broker's own KRaft metadata: its `__cluster_metadata-0` log and the snapshots its controller
took while it ran (broker.py asks for one 2 s after new records), whatever records the scenario
left there. Line for line, but for secrets, which segmentlog redacts (Kafka prints them); and
the same partition read with valueFormat=kafka-internal decodes every record."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from segmentlog_source.cli.dump import dump_files
from segmentlog_source.cli.dump_context import DumpOptions
from tests.cli.test_dump_vs_kafka import kafka_dump
from tests.values.test_cluster_metadata import (FLAG, assert_redacted_where_due,
                                                assert_same_but_secrets, our_dump)

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("kafka")]


@pytest.fixture(scope="module")
def metadata_files(broker_reads) -> dict[str, list[Path]]:
    part = broker_reads.files / "__cluster_metadata-0"
    return {"log": sorted(part.glob("*.log")), "snapshot": sorted(part.glob("*.checkpoint"))}


def test_the_broker_left_a_metadata_log_and_a_snapshot(metadata_files):
    assert metadata_files["log"]
    # a snapshot of the running cluster, past the one `kafka-storage format` writes at 0
    assert any(not p.name.startswith("0" * 20) for p in metadata_files["snapshot"])


@pytest.mark.parametrize("kind", ["log", "snapshot"])
@pytest.mark.parametrize("skip", [False, True], ids=["records", "skip-record-metadata"])
def test_dump_prints_what_dump_log_segments_prints(metadata_files, kind, skip):
    files = metadata_files[kind]
    flags = (FLAG, "--skip-record-metadata") if skip else (FLAG,)
    kafka_out, kafka_err = kafka_dump(files, flags)
    ours = our_dump(files, skip=skip)
    # (a difference from Kafka's lines is only ever a redacted secret, and every secret the
    # scenario planted, a sensitive config or a SCRAM user, is one)
    assert assert_same_but_secrets(kafka_out, ours) == assert_redacted_where_due(ours)
    types = {json.loads(line.split(b"payload: ", 1)[1])["type"]
             for line in ours.split(b"\n") if b"payload: {" in line}
    assert {"FEATURE_LEVEL_RECORD"} <= types
    if kind == "snapshot" or not skip:
        assert {"TOPIC_RECORD", "PARTITION_RECORD", "REGISTER_BROKER_RECORD"} <= types
    assert b"Error at " not in ours


def test_json_dump_and_columns_carry_the_same_records(kafka_spark, metadata_files):
    files = metadata_files["log"]
    text = our_dump(files).decode()
    payloads = [line.split(" payload: ", 1)[1] for line in text.split("\n")
                if " payload: " in line]
    lines = [json.loads(x) for x in our_dump(files, json_lines=True).splitlines()]
    assert [x["payload"] for x in lines if x["kind"] == "record" and "payload" in x] == payloads
    df = (kafka_spark.read.format("segmentlog").option("valueFormat", "kafka-internal")
          .load(str(files[0].parent)))
    rows = df.orderBy("offset").select(
        "value_decoded.json", "value_error").collect()
    assert [r.value_error for r in rows] == [None] * len(rows)
    assert [r.json for r in rows] == payloads


def test_the_secret_set_on_the_broker_is_in_no_output(kafka_spark, metadata_files,
                                                      admin_answers):
    """The password-type config the scenario set with the Admin API is in the broker's metadata
    log as plain text (Kafka's DumpLogSegments prints it); no output of segmentlog shows it:
    the dumps (decoder, --json, --print-data-log without the decoder, on the log and on the
    snapshots) and every column of a kafka-internal read, the raw value included."""
    secret = admin_answers["sensitive"]["value"]
    files = metadata_files["log"] + metadata_files["snapshot"]
    assert any(secret.encode() in f.read_bytes() for f in files)   # there to be hidden
    kafka_out, _ = kafka_dump(metadata_files["log"], (FLAG,))
    assert secret.encode() in kafka_out
    outputs = [our_dump(files), our_dump(files, json_lines=True)]
    out, err = io.StringIO(), io.StringIO()
    dump_files([str(f) for f in files], DumpOptions(print_data_log=True), out, err)
    outputs += [out.getvalue().encode(), err.getvalue().encode()]
    df = (kafka_spark.read.format("segmentlog").option("valueFormat", "kafka-internal")
          .load(str(metadata_files["log"][0].parent)))
    rows = df.collect()
    outputs.append(repr([r.asDict(recursive=True) for r in rows]).encode())
    assert any(r.value_decoded and r.value_decoded.metadata and r.value_decoded.metadata.config
               and r.value_decoded.metadata.config.name == admin_answers["sensitive"]["name"]
               for r in rows)
    for output in outputs:
        assert secret.encode() not in output
