"""Aiven's remote tier read by format('segmentlog') where it lies: the four layouts its plugin
wrote on a real broker (tests/fixtures/tiered/aiven: plain, zstd chunks, encrypted chunks,
both) give the rows of the broker's own local copies of the same segments."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from chispa import assert_df_equality
import pyarrow as pa
import pytest

from segmentlog_source.errors import BadOptionError, CorruptDataError
from segmentlog_source.plan.options import parse_read_options
from segmentlog_source.plan.read_plan import plan_read
from segmentlog_source.spark.partition_scan import SegmentLogInputPartition, scan_partition
from tests.conftest import read_segmentlog

AIVEN = Path(__file__).resolve().parents[1] / "fixtures" / "tiered" / "aiven"
KEY = AIVEN / "test-rsa-private.pem"
VARIANTS = {"plain": "", "zstd": "pfx-zstd", "encrypted": "pfx-encrypted",
            "enczstd": "pfx-enczstd"}


def _tier(variant: str) -> Path:
    tier = AIVEN / variant / "remote" / VARIANTS[variant]
    assert tier.is_dir(), f"missing fixture {tier}"
    return tier


def _rows(path, **options) -> list[dict]:
    opts = parse_read_options({"path": str(path), **options})
    return [row for group in plan_read(opts).groups
            for batch in scan_partition(SegmentLogInputPartition(group), opts)
            for row in pa.Table.from_batches([batch]).to_pylist()]


@pytest.mark.spark
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_the_tier_reads_as_the_brokers_local_segments(spark, variant):
    remote = read_segmentlog(spark, _tier(variant), remoteTierPrivateKey=str(KEY),
                             includeHeaders="true", isolationLevel="read_committed")
    local = read_segmentlog(spark, AIVEN / variant / "local", includeHeaders="true",
                            isolationLevel="read_committed")
    assert_df_equality(remote, local, ignore_row_order=True)
    assert remote.count() > 500


@pytest.mark.parametrize("variant", ["encrypted", "enczstd"])
def test_an_encrypted_tier_without_its_key_names_the_option(variant):
    with pytest.raises(BadOptionError, match="remoteTierPrivateKey"):
        _rows(_tier(variant))


@pytest.mark.parametrize("seed", range(6))
def test_a_damaged_zstd_chunk_never_reads_as_rows_without_crcs(tmp_path, seed):
    """zstd chunks carry no checksum of their own: a flipped byte may decompress into other
    bytes of the same length. With verifyChecksums=false the batches' CRCs are checked all the
    same for such a tier, so damage is an error naming the object, never rows."""
    tier = tmp_path / "zstd"
    shutil.copytree(_tier("zstd"), tier)
    log = sorted(tier.rglob("*.log"))[seed % 3]
    data = bytearray(log.read_bytes())
    rng = random.Random(seed)
    at = rng.randrange(len(data))
    data[at] ^= 1 << rng.randrange(8)
    log.write_bytes(bytes(data))
    with pytest.raises(CorruptDataError) as err:
        _rows(tier, verifyChecksums="false")
    assert err.value.path is not None and Path(err.value.path).name == log.name
