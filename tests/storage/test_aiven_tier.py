"""Aiven's tiered storage read in place: the remote copies the plugin wrote (plain, zstd,
AES-GCM, both) read through AivenSegmentFiles must be the broker's own segments, byte for byte
and lookup for lookup, read only where asked, and damage must be an error naming the object.

Fixtures: tests/fixtures/tiered/aiven (README.md there says how a real broker wrote them).
"""

from __future__ import annotations

import base64
import json
import pickle
import random
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
import zstandard
from Crypto.PublicKey import RSA

from segmentlog_source.errors import BadOptionError, CorruptDataError, DataLossError
from segmentlog_source.storage.io.local import LOCAL
from segmentlog_source.storage.io.stats import IOStats
from segmentlog_source.storage.log.checked_scan import CheckedScan
from segmentlog_source.storage.log.log_segment import LogSegment
from segmentlog_source.storage.tiered.aiven_manifest import (IcebergSegmentError,
                                                             parse_custom_metadata)
from segmentlog_source.storage.tiered.aiven_segment import (AivenSegmentFiles, AivenSegmentRef,
                                                            list_aiven_segments)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tiered" / "aiven"
PRIVATE_KEY = FIXTURES / "test-rsa-private.pem"
VARIANTS = {"plain": "", "zstd": "pfx-zstd/", "encrypted": "pfx-encrypted/",
            "enczstd": "pfx-enczstd/"}
SEGMENTS = (1950, 2428, 2906)
LAST = 2906   # the active segment when the broker's copies were taken


def _fixture(variant: str) -> Path:
    path = FIXTURES / variant
    if not (path / "remote").is_dir() or not PRIVATE_KEY.is_file():
        raise RuntimeError(f"the Aiven tiered-storage fixture is missing: {path}")
    return path


def _listing(root: Path, variant: str):
    return list_aiven_segments(LOCAL, str(root / "remote"), key_prefix=VARIANTS[variant])


def _files(listing, **kwargs) -> AivenSegmentFiles:
    kwargs.setdefault("private_key", str(PRIVATE_KEY))
    return AivenSegmentFiles(LOCAL, f"{listing.root}/{listing.key}", **kwargs)


def _local(root: Path, base: int) -> LogSegment:
    return LogSegment(str(root / "local" / "aborts-0"), base, LOCAL, active=base == LAST)


@pytest.fixture(scope="module", params=list(VARIANTS))
def variant(request):
    root = _fixture(request.param)
    listings = _listing(root, request.param)
    assert [s.start_offset for s in listings] == list(SEGMENTS)
    return request.param, root, listings


def test_listing_parses_keys_by_length(variant):
    name, root, listings = variant
    for s in listings:
        assert (s.topic, s.partition) == ("aborts", 0)
        assert len(s.topic_id) == len(s.segment_id) == 22
        assert s.key.startswith(VARIANTS[name] + f"aborts-{s.topic_id}/0/{s.start_offset:020d}-")
        assert (root / "remote" / s.log_key).is_file()
        assert (root / "remote" / s.manifest_key).is_file()
    assert list_aiven_segments(LOCAL, str(root / "remote"), "events",
                               key_prefix=VARIANTS[name]) == []


def test_log_and_indexes_equal_the_brokers_files(variant):
    name, root, listings = variant
    rng = random.Random(23)
    for s in listings:
        files = _files(s)
        local_dir = root / "local" / "aborts-0"
        want = (local_dir / f"{s.start_offset:020d}.log").read_bytes()
        assert files.size(files.log_path) == len(want)
        assert files.read_all(files.log_path) == want
        with files.open_read(files.log_path) as f:
            for _ in range(60):
                a = rng.randrange(len(want))
                n = rng.choice((1, 7, 61, 4096, 5000, 9000, 70000))
                assert f.read_at(a, n) == want[a:a + n]
                buf = bytearray(min(n, len(want) - a))
                assert f.read_into(a, buf) == len(buf) and bytes(buf) == want[a:a + len(buf)]
        for suffix in (".index", ".timeindex", ".txnindex"):
            local_file = local_dir / f"{s.start_offset:020d}{suffix}"
            assert files.exists(files.path(suffix)) == local_file.exists(), suffix
            if not local_file.exists():
                continue
            got, mine = files.read_all(files.path(suffix)), local_file.read_bytes()
            if suffix == ".timeindex" and s.start_offset == LAST:
                # the broker appended its largest timestamp at the roll, after the copy
                assert got[:len(mine)] == mine and len(got) == len(mine) + 12
            else:
                assert got == mine, suffix
        epochs = files.read_all(files.path(".leader_epoch_checkpoint")).decode()
        assert epochs.splitlines()[:2] == ["0", "1"]
        assert files.size(files.path(".snapshot")) > 0


def test_log_segment_answers_as_on_the_brokers_copy(variant):
    name, root, listings = variant
    for s in listings:
        remote, local = _files(s).log_segment(), _local(root, s.start_offset)
        assert len(remote.offset_index) == len(local.offset_index) > 0
        end = local.read_next_offset()
        assert remote.read_next_offset() == end
        assert remote.max_timestamp_and_offset == local.max_timestamp_and_offset
        assert remote.largest_timestamp == local.largest_timestamp
        for offset in list(range(s.start_offset, end, 37)) + [end - 1, end]:
            r, lo = remote.translate_offset(offset), local.translate_offset(offset)
            assert (r is None) == (lo is None)
            if r is not None:
                assert (r.position, r.base_offset, r.last_offset) == \
                    (lo.position, lo.base_offset, lo.last_offset)
        ts, _ = local.max_timestamp_and_offset
        for t in (0, ts - 500, ts - 50, ts, ts + 1):
            assert remote.offset_for_timestamp(t) == local.offset_for_timestamp(t)
        assert remote.txn_index.entries == local.txn_index.entries


def test_log_segment_finds_the_files_by_the_brokers_names_too(variant):
    name, root, listings = variant
    files = _files(listings[-1])
    # LogSegment's own default names: <directory>/<20-digit base offset><suffix>
    segment = LogSegment(files.directory, files.base_offset, files, log_path=files.log_path)
    assert segment.index_path != files.path(".index") and files.exists(segment.index_path)
    assert segment.read_next_offset() == _local(root, LAST).read_next_offset()
    assert len(segment.txn_index.entries) == 1
    assert sorted(files.list_dir(files.directory)) == sorted(
        files.basename(files.path(s)) for s in (".log", ".index", ".timeindex", ".txnindex",
                                                ".snapshot", ".leader_epoch_checkpoint"))


def _batches(fs, path, start, end, base):
    scan = CheckedScan(fs, path, start, end, segment_base=base, start_checked=start == 0,
                       chunk_bytes=8192)
    return [(h.position, h.base_offset, h.last_offset, bytes(e)) for h, e in scan]


def test_checked_scan_yields_the_same_batches(variant):
    name, root, listings = variant
    for s in listings:
        files, local = _files(s), _local(root, s.start_offset)
        positions = [0] + [local.offset_index.entry(i)[1]
                           for i in range(len(local.offset_index))] + [local.size]
        ranges = [(0, local.size)] + list(zip(positions[1:-1:2], positions[3::2]))
        for start, end in ranges:
            want = _batches(LOCAL, local.log_path, start, end, s.start_offset)
            assert want and _batches(files, files.log_path, start, end, s.start_offset) == want


def test_a_batch_read_fetches_only_its_chunks(variant):
    name, root, listings = variant
    s = listings[1]
    local = _local(root, s.start_offset)
    middle = local.translate_offset((s.start_offset + local.read_next_offset()) // 2)
    stats = IOStats()
    files = _files(s, stats=stats)
    manifest_bytes = stats.bytes_read
    assert manifest_bytes == (root / "remote" / s.manifest_key).stat().st_size
    index = files.manifest.chunk_index
    chunks = index.chunks_covering(middle.position, middle.end)
    assert 1 <= len(chunks) <= 2 and index.count > 10
    with files.open_read(files.log_path, stats) as f:
        assert f.read_at(middle.position, middle.size) == \
            local.fs.read_range(local.log_path, middle.position, middle.size)
    fetched = int(index.transformed[chunks[-1] + 1] - index.transformed[chunks[0]])
    if name == "plain":
        fetched = middle.size   # untransformed: the object is read where the batch is
    assert stats.bytes_read - manifest_bytes == fetched
    assert stats.read_requests == 2
    with files.open_read(files.log_path, stats) as f:   # decoded chunks are kept
        f.read_at(middle.position, middle.size)
    assert stats.read_requests == (3 if name == "plain" else 2)


def test_ref_rebuilds_on_an_executor(variant):
    name, root, listings = variant
    files = _files(listings[0])
    ref = pickle.loads(pickle.dumps(files.ref(str(root / "remote"))))
    assert isinstance(ref, AivenSegmentRef) and "data_key" not in repr(ref)
    again = ref.files()
    assert again.read_all(again.log_path) == files.read_all(files.log_path)
    by_option = listings[0].ref(LOCAL, private_key=str(PRIVATE_KEY))
    assert pickle.loads(pickle.dumps(by_option)).files().read_all(again.log_path) == \
        files.read_all(files.log_path)


# -- custom metadata -----------------------------------------------------------------------------

# Observed in the zstd run's __remote_log_metadata for segment 2428 of aborts-0.
OBSERVED_KEY = "aborts-AC_JwpQLTXSYSIJaay8ASw/0/00000000000000002428-uURf_Lh3RBOPNiTdkuZ2wg"
OBSERVED = bytes.fromhex("0300038ee401010a0a7066782d7a7374642f024c4c") + OBSERVED_KEY.encode()


def _custom(prefix: str, key: str) -> bytes:
    def field(tag: int, value: str) -> bytes:
        raw = value.encode()
        body = bytes([len(raw) + 1]) + raw
        return bytes([tag, len(body)]) + body
    return bytes([2]) + field(1, prefix) + field(2, key)


def test_custom_metadata_decodes_and_moves_objects(tmp_path):
    meta = parse_custom_metadata(OBSERVED, "test")
    root = _fixture("zstd") / "remote"
    sizes = sum((root / f"pfx-zstd/{OBSERVED_KEY}{s}").stat().st_size
                for s in (".log", ".indexes", ".rsm-manifest"))
    assert (meta.remote_size, meta.object_prefix, meta.object_key) == \
        (sizes, "pfx-zstd/", OBSERVED_KEY)
    shutil.copytree(root, tmp_path / "remote")
    src = tmp_path / "remote" / "pfx-zstd" / OBSERVED_KEY
    moved = tmp_path / "remote" / "old-prefix" / "renamed"
    moved.parent.mkdir(parents=True)
    for suffix in (".log", ".indexes"):
        src.with_name(src.name + suffix).rename(moved.with_name(moved.name + suffix))
    listing = [s for s in list_aiven_segments(
        LOCAL, str(tmp_path / "remote"), key_prefix="pfx-zstd/",
        custom_metadata={"uURf_Lh3RBOPNiTdkuZ2wg": _custom("old-prefix/", "renamed")})
        if s.start_offset == 2428][0]
    assert listing.log_key == "old-prefix/renamed.log"
    files = listing.ref(LOCAL).files()
    local = _fixture("zstd") / "local" / "aborts-0" / "00000000000000002428.log"
    assert files.read_all(files.log_path) == local.read_bytes()
    with pytest.raises(CorruptDataError, match="custom metadata"):
        parse_custom_metadata(OBSERVED[:-3], "test")


# -- damage --------------------------------------------------------------------------------------

def _copy(tmp_path: Path, variant: str, offset: int = 2428):
    shutil.copytree(_fixture(variant) / "remote", tmp_path / "remote")
    listing = [s for s in _listing(tmp_path, variant) if s.start_offset == offset][0]
    stem = tmp_path / "remote" / listing.key
    return listing, {s: Path(str(stem) + s) for s in (".log", ".indexes", ".rsm-manifest")}


def _rewrite_manifest(path: Path, change) -> None:
    manifest = json.loads(path.read_bytes())
    change(manifest)
    path.write_text(json.dumps(manifest))


def _sizes_table(sizes: list[int]) -> str:
    base = min(sizes[:-1])
    width = max(1, (max(s - base for s in sizes[:-1]).bit_length() + 7) // 8)
    raw = struct.pack(">iiB", len(sizes), base, width) + b"".join(
        (s - base).to_bytes(width, "big") for s in sizes[:-1]) + struct.pack(">i", sizes[-1])
    return base64.b64encode(zstandard.ZstdCompressor().compress(raw)).decode()


def _whole_read(listing, **kwargs):
    files = _files(listing, **kwargs)
    segment = files.log_segment()
    segment.read_next_offset()
    _batches(files, files.log_path, 0, files.size(files.log_path), listing.start_offset)
    for _ in segment.iter_entries(verify_crc=True):
        pass
    return files.read_all(files.log_path)


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("change", [-1, +1])
def test_an_object_of_another_size_is_refused(tmp_path, variant, change):
    listing, objects = _copy(tmp_path, variant)
    for suffix in (".log", ".indexes"):
        data = objects[suffix].read_bytes()
        objects[suffix].write_bytes(data[:change] if change < 0 else data + b"\0")
        with pytest.raises(CorruptDataError) as err:
            _whole_read(listing)
        assert err.value.path == str(objects[suffix]) and str(objects[".rsm-manifest"]) in str(
            err.value)
        objects[suffix].write_bytes(data)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_chunk_sizes_that_disagree_are_refused(tmp_path, variant):
    listing, objects = _copy(tmp_path, variant)
    manifest = json.loads(objects[".rsm-manifest"].read_bytes())
    index = manifest["chunkIndex"]
    if index["type"] == "fixed":   # sizes no longer those of the transforms: the manifest
        _rewrite_manifest(objects[".rsm-manifest"],
                          lambda m: m["chunkIndex"].update(transformedChunkSize=4000))
        blamed = objects[".rsm-manifest"]
    else:   # two chunks' sizes swapped: same total, wrong boundaries: the chunk's bytes
        files = _files(listing)
        sizes = np.diff(files.manifest.chunk_index.transformed).tolist()
        assert sizes[2] != sizes[3]
        sizes[2], sizes[3] = sizes[3], sizes[2]
        _rewrite_manifest(objects[".rsm-manifest"], lambda m: m["chunkIndex"].update(
            transformedChunks=_sizes_table(sizes)))
        blamed = objects[".log"]
    with pytest.raises(CorruptDataError) as err:
        _whole_read(listing)
    assert err.value.path == str(blamed)
    _rewrite_manifest(objects[".rsm-manifest"],
                      lambda m: m["chunkIndex"].update(originalFileSize=index["originalFileSize"]
                                                       + 5000))
    with pytest.raises(CorruptDataError) as err:
        _whole_read(listing)
    assert err.value.path in (str(objects[".rsm-manifest"]), str(objects[".log"]))


@pytest.mark.parametrize("suffix", [".log", ".indexes"])
def test_a_missing_object_is_data_loss(tmp_path, suffix):
    listing, objects = _copy(tmp_path, "enczstd")
    objects[suffix].unlink()
    with pytest.raises(DataLossError, match=listing.key) as err:
        _whole_read(listing)
    assert str(objects[suffix]) in str(err.value)


@pytest.mark.parametrize("variant", ["encrypted", "enczstd"])
def test_a_flipped_byte_in_an_encrypted_chunk_fails_its_tag(tmp_path, variant):
    listing, objects = _copy(tmp_path, variant)
    index = _files(listing).manifest.chunk_index
    data = bytearray(objects[".log"].read_bytes())
    at = int(index.transformed[5]) + 40
    data[at] ^= 0x01
    objects[".log"].write_bytes(bytes(data))
    with pytest.raises(CorruptDataError, match="chunk 5 .*AES-GCM") as err:
        _whole_read(listing)
    assert err.value.path == str(objects[".log"])
    assert err.value.position == int(index.transformed[5])


def test_flipped_bytes_in_zstd_chunks_never_pass(tmp_path):
    """zstd frames carry no checksum here: a flip that still decodes to a chunk of the right
    size is caught by the batch CRCs a checked read verifies; either way, an error, unless
    the flip changed no decoded byte (a bit the decoder ignores)."""
    listing, objects = _copy(tmp_path, "zstd")
    files = _files(listing)
    index, plain = files.manifest.chunk_index, files.read_all(files.log_path)
    pristine = objects[".log"].read_bytes()
    rng = random.Random(5)
    named = []
    for _ in range(24):
        chunk = rng.randrange(index.count)
        at = rng.randrange(int(index.transformed[chunk]), int(index.transformed[chunk + 1]))
        data = bytearray(pristine)
        data[at] ^= 1 << rng.randrange(8)
        objects[".log"].write_bytes(bytes(data))
        try:
            got = _whole_read(listing)
        except CorruptDataError as err:
            # (the virtual .log has the object's name: the same path either way)
            assert err.path == str(objects[".log"])
            named.append(err.reason)
            continue
        assert got == plain, f"a flip at byte {at} of chunk {chunk} read as other bytes"
    assert sum(" (bytes [" in r and "chunk" in r for r in named) >= 2   # the frame broke
    assert len(named) >= 20


@pytest.fixture(scope="module")
def other_key(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("keys") / "other.pem"
    path.write_bytes(RSA.generate(2048).export_key(pkcs=8))
    return path


def test_the_wrong_private_key_is_refused(tmp_path, other_key):
    listing, objects = _copy(tmp_path, "encrypted")
    with pytest.raises(CorruptDataError, match="does not unwrap") as err:
        _whole_read(listing, private_key=str(other_key))
    assert err.value.path == str(objects[".rsm-manifest"])
    with pytest.raises(BadOptionError, match="public key"):
        _whole_read(listing, private_key=str(FIXTURES / "test-rsa-public.pem"))
    # a map of key pair ids picks the pair's key
    assert _whole_read(listing, private_key=f"k0={other_key},k1={PRIVATE_KEY}")


def test_no_private_key_names_the_segment_and_the_option(tmp_path):
    listing, _ = _copy(tmp_path, "enczstd")
    with pytest.raises(BadOptionError, match="remoteTierPrivateKey") as err:
        _whole_read(listing, private_key=None)
    assert listing.key in str(err.value) and "'k1'" in str(err.value)
    with pytest.raises(BadOptionError, match="names key pairs k2"):
        _whole_read(listing, private_key=f"k2={PRIVATE_KEY}")


@pytest.mark.parametrize("change, match", [
    (lambda m: m.update(version="2"), "unknown manifest version"),
    (lambda m: m["segmentIndexes"]["offset"].update(size=-1), r"offset\.size is -1"),
    (lambda m: m["chunkIndex"].update(originalChunkSize=0), "originalChunkSize is 0"),
    (lambda m: m["segmentIndexes"]["timestamp"].update(position=10**6), "holds"),
    (lambda m: m["chunkIndex"].update(type="sparse"), "neither 'fixed' nor 'variable'"),
    (lambda m: m["encryption"].update(aad="AAAA"), "aad is 3 bytes"),
    (lambda m: m.update(compression="yes"), "not a bool"),
])
def test_an_inconsistent_manifest_is_refused(tmp_path, change, match):
    listing, objects = _copy(tmp_path, "enczstd")
    _rewrite_manifest(objects[".rsm-manifest"], change)
    with pytest.raises(CorruptDataError, match=match) as err:
        _whole_read(listing)
    assert err.value.path in (str(objects[".rsm-manifest"]), str(objects[".indexes"]))


def test_iceberg_segments_are_sent_to_iceberg(tmp_path):
    listing, objects = _copy(tmp_path, "zstd")
    _rewrite_manifest(objects[".rsm-manifest"], lambda m: m.update({"segment.format": "iceberg"}))
    with pytest.raises(IcebergSegmentError, match="read that table as Iceberg"):
        _whole_read(listing)
    for path in objects.values():
        path.unlink()
    with pytest.raises(IcebergSegmentError, match="Iceberg-mode segment"):
        _whole_read(listing)
