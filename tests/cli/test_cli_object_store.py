"""The `segmentlog` command on object-store URIs, against a real S3 server (moto, on loopback).

One small generated log is uploaded twice, as is and with damage; every read command must print
for the URI exactly what it prints for the local copy (the path shown aside), every write command
must refuse the URI before sending a single request, and bad URIs are one clear line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
import shutil
import struct

import pyarrow.fs as pafs
import pytest

from segmentlog_source.cli.generate import generate_log
from segmentlog_source.cli.main import main
from segmentlog_source.devtools.s3_server import S3Server
from segmentlog_source.storage.log.partition_log import PartitionLog
from tests.cli.helpers import flip_byte, run_cli

BUCKET = "cli-logs"
SEGMENT = "00000000000000000000"
REFUSAL = "segmentlog writes only to local or mounted file systems"


@dataclass
class Store:
    server: S3Server
    root: Path        # local copies: root/kafka (clean) and root/corrupt (damaged)
    options: list[str]  # the --fs-option flags that reach the server

    def uri(self, tree: str, *parts: str) -> str:
        return "/".join([f"s3://{BUCKET}/{tree}", *parts])

    def local(self, tree: str, *parts: str) -> str:
        return str(self.root.joinpath(tree, *parts))


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Store:
    root = tmp_path_factory.mktemp("cli-object-store")
    # Two partitions, two segments each, transactions (so .txnindex files and markers), snapshots.
    generate_log(str(root / "kafka"), topics=["t"], partitions=2, records=3000, value_size=200,
                 segment_bytes=200_000, transactions=True, seed=11)
    shutil.copytree(root / "kafka", root / "corrupt")
    log = root / "corrupt" / "t-0" / f"{SEGMENT}.log"
    flip_byte(log, _batch_positions(log.parent)[1] + 70)  # the second batch's CRC breaks
    index = root / "corrupt" / "t-1" / f"{SEGMENT}.index"
    data = bytearray(index.read_bytes())
    struct.pack_into(">i", data, 0, struct.unpack_from(">i", data, 0)[0] + 1)  # wrong offset
    index.write_bytes(bytes(data))
    with S3Server(log_dir=root) as server:
        server.create_bucket(BUCKET)
        for tree in ("kafka", "corrupt"):
            server.upload_tree(root / tree, f"s3://{BUCKET}/{tree}")
        options = [flag for name, value in server.storage_options.items()
                   for flag in ("--fs-option", f"{name}={value}")]
        yield Store(server, root, options)


def _batch_positions(partition: Path) -> list[int]:
    segment = PartitionLog.open(str(partition)).segments[0]
    return [h.position for h, _ in segment.iter_entries()]


def cli(capsys, *args) -> tuple[int, str, str]:
    """`segmentlog *args`, in-process: (exit status, stdout, stderr)."""
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def as_uri(store: Store, text: str, tree: str = "kafka") -> str:
    """Local output with the local tree's path replaced by the URI of its upload."""
    return text.replace(store.local(tree), store.uri(tree))


def store_listing(store: Store) -> set:
    """Every bucket and object of the server, with sizes and modification times."""
    fs = store.server.direct_filesystem()
    buckets = fs.get_file_info(pafs.FileSelector("", recursive=False))
    objects = {(i.path, i.size, i.mtime) for b in buckets
               for i in fs.get_file_info(pafs.FileSelector(b.path, recursive=True))}
    return {b.path for b in buckets} | objects


# -- dump ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("flags", [
    [], ["--deep-iteration"], ["--print-data-log"], ["--print-data-log", "--skip-record-metadata"],
    ["--max-bytes", "50000"], ["--json"], ["--json", "--print-data-log"],
], ids=lambda f: " ".join(f) or "plain")
def test_dump_of_a_log_uri_prints_what_the_local_dump_prints(store, capsys, flags):
    name = f"{SEGMENT}.log"
    local = cli(capsys, "dump", *flags, "--files", store.local("kafka", "t-0", name))
    remote = cli(capsys, *store.options, "dump", *flags, "--files",
                 store.uri("kafka", "t-0", name))
    assert local[0] == 0 and local[1].count("\n") > 3
    assert remote == (0, as_uri(store, local[1]), as_uri(store, local[2]))
    assert f"s3://{BUCKET}/kafka/t-0/{name}" in remote[1]


@pytest.mark.parametrize("flags", [[], ["--verify-index-only"], ["--index-sanity-check"],
                                   ["--json"]], ids=lambda f: " ".join(f) or "plain")
@pytest.mark.parametrize("tree", ["kafka", "corrupt"])
def test_dump_of_index_snapshot_and_other_uris(store, capsys, flags, tree):
    kinds = (".index", ".timeindex", ".txnindex", ".snapshot", "-checkpoint")
    # t-1 first: the damaged .log of the corrupt tree's t-0 ends its dumps with an error.
    files = sorted((str(f.relative_to(store.root / tree)) for f in (store.root / tree).glob("*/*")
                    if f.name.endswith(kinds)), reverse=True)
    assert {Path(f).suffix for f in files} >= {".index", ".timeindex", ".txnindex", ".snapshot"}
    files.insert(0, "t-0")  # and a directory
    local = cli(capsys, "dump", *flags, "--files",
                ",".join(store.local(tree, f) for f in files))
    remote = cli(capsys, *store.options, "dump", *flags, "--files",
                 ",".join(store.uri(tree, f) for f in files))
    assert remote == (local[0], as_uri(store, local[1], tree), as_uri(store, local[2], tree))
    assert local[0] == (0 if tree == "kafka" else 2)
    assert f"Ignoring {store.uri(tree, 't-0')}: it is a directory" in remote[2]
    if tree == "corrupt" and flags == ["--verify-index-only"]:
        # Kafka's report keys files by absolute path; a URI is one already.
        assert f"Mismatches in :{store.uri(tree, 't-1', SEGMENT + '.index')}\n" in remote[2]


def test_dump_retries_a_throttled_read(store, capsys):
    local = cli(capsys, "dump", "--files", store.local("kafka", "t-1", f"{SEGMENT}.log"))
    fault = store.server.fail("GET", rf"kafka/t-1/{SEGMENT}\.log$", 503, "SlowDown", times=2)
    try:
        remote = cli(capsys, *store.options, "--fs-option", "fs.retryBackoffMs=1", "dump",
                     "--files", store.uri("kafka", "t-1", f"{SEGMENT}.log"))
    finally:
        store.server.clear_faults()
    assert fault.hits == 2
    assert remote == (0, as_uri(store, local[1]), "")


def test_access_denied_is_one_line_naming_the_object(store, capsys):
    uri = store.uri("kafka", "t-1", f"{SEGMENT}.timeindex")
    store.server.fail("*", rf"kafka/t-1/{SEGMENT}\.timeindex$", 403, "AccessDenied")
    try:
        code, out, err = cli(capsys, *store.options, "dump", "--files", uri)
    finally:
        store.server.clear_faults()
    assert code == 2 and out == f"Dumping {uri}\n"
    assert err.startswith("segmentlog: ") and err.count("\n") == 1
    assert "access denied" in err and uri in err


# -- verify --------------------------------------------------------------------------------------

def test_verify_of_a_uri_passes_as_the_local_copy_does(store, capsys):
    local = cli(capsys, "verify", store.local("kafka"))
    remote = cli(capsys, *store.options, "verify", store.uri("kafka"))
    assert local[0] == 0 and local[1].startswith("ok ")
    assert remote == (0, as_uri(store, local[1]), "")
    assert remote[1].splitlines()[0].startswith(f"ok   {store.uri('kafka', 't-0')}: 2 segments")
    partition = cli(capsys, *store.options, "verify", store.uri("kafka", "t-1") + "/")
    assert partition == (0, remote[1].splitlines(keepends=True)[1], "")


def test_verify_of_a_damaged_upload_fails_naming_the_objects(store, capsys):
    local = cli(capsys, "verify", store.local("corrupt"))
    code, out, err = cli(capsys, *store.options, "verify", store.uri("corrupt"))
    assert (code, out, err) == (1, as_uri(store, local[1], "corrupt"), "")
    position = _batch_positions(store.root / "corrupt" / "t-0")[1]
    assert out.startswith(f"FAIL {store.uri('corrupt', 't-0')}: ")
    assert (f"  error: {store.uri('corrupt', 't-0', SEGMENT + '.log')} at byte {position}: "
            "CRC mismatch") in out
    assert f"  error: {store.uri('corrupt', 't-1', SEGMENT + '.index')} at byte 8: " in out


# -- writes are refused, before any request ------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["reindex", f"s3://{BUCKET}/kafka"],
    ["reindex", f"s3a://{BUCKET}/kafka/t-0"],
    ["reindex", f"s3://{BUCKET}/no-such-prefix"],
    ["generate", f"s3://{BUCKET}/generated", "--records", "10"],
    ["generate", f"s3://{BUCKET}/kafka", "--records", "10"],
    ["generate", "s3://no-such-bucket/kafka", "--records", "10"],
], ids=lambda a: " ".join(a[:2]))
def test_writes_to_a_uri_are_refused_before_anything_is_sent(store, capsys, args):
    before = store_listing(store)
    store.server.reset_counts()
    code, out, err = cli(capsys, *store.options, *args)
    assert code == 2 and out == ""
    target = args[1].rstrip("/")
    assert err.startswith(f"segmentlog: cannot write to {target}: {REFUSAL}")
    assert err.count("\n") == 1
    assert store.server.requests() == []
    assert store_listing(store) == before


def test_reindex_refuses_a_uri_among_local_paths_before_touching_any(store, capsys, tmp_path):
    local = shutil.copytree(store.root / "kafka" / "t-0", tmp_path / "t-0")
    index = local / f"{SEGMENT}.index"
    index.write_bytes(b"\x07" * 16)  # what a reindex of the local path would repair
    code, out, err = cli(capsys, *store.options, "reindex", local, store.uri("kafka", "t-1"))
    assert (code, out) == (2, "") and REFUSAL in err
    assert index.read_bytes() == b"\x07" * 16


# -- bad input -------------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["dump", "--files", "ftp://host/logs/00000000000000000000.log"],
    ["verify", "ftp://host/logs"],
    ["reindex", "ftp://host/logs"],
    ["generate", "ftp://host/logs"],
], ids=lambda a: a[0])
def test_an_unknown_scheme_is_one_line_naming_the_path(capsys, args):
    code, out, err = cli(capsys, *args)
    assert (code, out) == (2, "")
    assert err == (f"segmentlog: option path={args[-1]!r}: unknown scheme 'ftp': segmentlog "
                   "reads local paths, file://, s3://, s3a://, s3n://, gs://, gcs://, abfs://, "
                   "abfss://, hdfs://, viewfs://\n")


def test_missing_buckets_and_objects_are_one_line_naming_the_path(store, capsys):
    cases = [
        (["dump", "--files", f"s3://no-such-bucket/kafka/t-0/{SEGMENT}.log"],
         f"segmentlog: no such object (or bucket): s3://no-such-bucket/kafka/t-0/{SEGMENT}.log\n"),
        (["dump", "--files", store.uri("kafka", "t-0", "00000000000000099999.log")],
         f"segmentlog: no such object (or bucket): "
         f"{store.uri('kafka', 't-0', '00000000000000099999.log')}\n"),
        (["verify", "s3://no-such-bucket/kafka"],
         "segmentlog: no such file or directory: s3://no-such-bucket/kafka\n"),
        (["verify", store.uri("nothing-here")],
         f"segmentlog: no such file or directory: {store.uri('nothing-here')}\n"),
        (["verify", "s3:///kafka"], "segmentlog: option path='s3:///kafka': no bucket or "
         "container in the URI (expected s3://bucket/prefix)\n"),
    ]
    for args, message in cases:
        code, _, err = cli(capsys, *store.options, *args)
        assert (code, err) == (2, message), args


# -- --fs-option -----------------------------------------------------------------------------------

@pytest.mark.parametrize("option, shown", [
    ("fs.s3.secret.kee=SeCrEt-VaLuE", "option fs.s3.secret.kee='*****': unknown store option"),
    ("SeCrEt-VaLuE", "option --fs-option='*****': expected NAME=VALUE"),
    ("s3.secret.key=SeCrEt-VaLuE", "option --fs-option='s3.secret.key=*****': store options "
     "are named fs.*"),
    ("fs.s3.anonymous=perhaps", "option fs.s3.anonymous='perhaps': expected true or false"),
])
def test_bad_fs_options_name_the_option_never_a_value(store, capsys, option, shown):
    code, out, err = cli(capsys, "--fs-option", option, "verify", store.uri("kafka"))
    assert (code, out) == (2, "") and err.startswith(f"segmentlog: {shown}")
    assert "SeCrEt" not in err and err.count("\n") == 1


def test_secrets_are_not_printed_on_failure(store, capsys):
    secret = store.server.storage_options["fs.s3.secret.key"]
    for args in (["verify", "s3://no-such-bucket/x"], ["reindex", store.uri("kafka")],
                 ["dump", "--files", f"s3://no-such-bucket/{SEGMENT}.log"]):
        code, out, err = cli(capsys, *store.options, *args)
        assert code == 2 and secret not in out + err


def test_local_paths_ignore_fs_options(store, capsys):
    local = cli(capsys, "verify", store.local("kafka"))
    assert cli(capsys, "--fs-option", "fs.s3.region=eu-west-1", "verify",
               "file://" + store.local("kafka")) == local


def test_console_script_takes_fs_options_after_the_command(store):
    result = run_cli("verify", *store.options, store.uri("kafka"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(f"ok   {store.uri('kafka')}/t-") == 2
    txn_index = next((store.root / "kafka").glob("*/*.txnindex")).relative_to(store.root)
    uri = store.uri(*txn_index.parts)
    result = run_cli("dump", "--fs-option", "fs.s3.region=us-east-1", *store.options, "--files",
                     uri)
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith(f"Dumping {uri}\nversion: 0 producerId: ")
    help_text = run_cli("--help").stdout
    assert "--fs-option NAME=VALUE" in help_text
