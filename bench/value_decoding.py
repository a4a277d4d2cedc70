"""Decoding Schema Registry Avro values (issue #21): `valueFormat=confluent-avro` in records/s
per core, against fastavro alone on the same bytes.

Data (made once into bench/data, seeded): RECORDS payloads per schema, framed as a Schema
Registry serializer frames them (magic 0, the schema id as int32 big-endian, fastavro's
schemaless body). event: PaymentResponseAvroModel as a real cluster registered it (read from
the fixture kafka-real/agelenler-food-ordering/_schemas-0): five uuid strings, a bytes
decimal(10,2), a timestamp-millis, an enum, an array of strings. wide: WIDE_FIELDS int, long,
double and string fields. Version 2 of each adds a field with a default (the event a nullable
string, the wide record a string). A `_schemas` partition (tests/values/logs.py) registers
version 1 under `<topic>-value`, versions 1 and 2 under `<topic>-evolved-value`.

One process, the sides taking turns on the same payloads (a warm-up on WARMUP_RECORDS, then
REPETITIONS runs; records/s by wall time, by CPU time in the notes):
* fastavro alone: `[schemaless_reader(BytesIO(p[5:]), parsed) for p in payloads]` with the
  schema as registered, logical types and all: what a user's own UDF gets.
* fastavro, prepared schema (event only; the wide one has no logical types): the same loop on
  the schema segmentlog gives fastavro (avro_reading.prepared: logical types left to Arrow).
* segmentlog: ConfluentColumn.decode on Arrow binary chunks as big as a read of a local log
  gets (one 2 MiB read-ahead chunk of batches, ~9,500 records; DECODE_BYTES is the cap), the
  decoder built by values/build.py's build_decoding from the `_schemas` topic as a read builds
  it: framing, writer -> reader resolution, decimals, the Arrow array of Spark's type. Every row
  of the first run is checked to have decoded.
* resolving: the version-1 payloads read with version 2 as the reader schema, by fastavro alone
  (`schemaless_reader(buf, v1, v2)`) and by segmentlog (`<topic>-evolved`'s newest version).
Outputs stay alive until the clock stops (freeing fastavro's dicts is not counted).

Spark (local[2], bench/common.py's session): the payloads SPARK_COPIES times over, 2 partitions
of 100-record batches; `load(dir).select("value_decoded.*")` with valueFormat=confluent-avro
against `select("value")` with valueFormat=binary, consumed by `write.format("noop")`. Besides
wall time, the CPU seconds of Spark's JVM and Python workers: records per CPU-second is the
per-core rate whatever else shares the 2 cores.

Ratios are of records/s (above 1: the first is faster), medians of the per-repetition ratios of
sides run back to back. Where the time goes: cProfile of one decode of every chunk (fastavro's
Cython reader seen through a Python wrapper), the top PROFILE_TOP by own time; the decode's
steps timed one by one without the profiler, and the decode with the cyclic GC off.

    python -m bench.value_decoding     # bench/results/value_decoding.{json,md}; bench/run.py
"""

from __future__ import annotations

import cProfile
import gc
import hashlib
import io
import json
import os
import pickle
import pstats
import random
import shutil
import statistics
import sys
import time
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Callable

import fastavro
import pyarrow as pa

from .common import DATA, REPO, case, log_bytes, ratio, spark_session, stop_spark

RECORDS = 200_000
WARMUP_RECORDS = 10_000
REPETITIONS = 3
SPARK_COPIES = 3             # Spark reads 600,000 records: its per-query cost stays small
SPARK_PARTITIONS = 2
PER_BATCH = 100
WIDE_FIELDS = 30
PROFILE_TOP = 5
SEED = 21
GENERATOR = 1                # bump when the generated data changes: it is made again
# ../shared beside the repository (or $SEGMENTLOG_SHARED, as the tests find it)
FIXTURE = Path(os.environ.get("SEGMENTLOG_SHARED", REPO.parent / "shared")) / \
    "fixtures/kafka-real/agelenler-food-ordering/_schemas-0"
EVENT_SCHEMA_ID = 2          # PaymentResponseAvroModel in the fixture
BASE_MS = 1_700_000_000_000
SCHEMAS = {"event": (2, 3), "wide": (4, 5)}     # name -> (version 1's id, version 2's id)
TOPICS = {"event": "payments", "wide": "wide"}

FASTAVRO = "fastavro alone"
PREPARED = "fastavro, prepared schema"
OURS = "segmentlog"
AVRO, BINARY = "confluent-avro", "binary"
RESOLVING_STEP = "resolving: fastavro from version 1 to version 2"
DECODE_STEP = "ConfluentColumn.decode"
GC_OFF_STEP = "the same with the cyclic garbage collector off"


# -- data ------------------------------------------------------------------------------------

def event_schema() -> dict:
    """PaymentResponseAvroModel, as the fixture's registry holds it."""
    from segmentlog_source.values.registry_sources import load_registry

    if not (FIXTURE / "00000000000000000000.log").exists():
        raise FileNotFoundError(f"{FIXTURE} is missing: the event schema is read from it "
                                f"(the shared fixtures beside the repository, or "
                                f"$SEGMENTLOG_SHARED)")
    registry = load_registry(str(FIXTURE), [])
    schema = json.loads(registry.schema(EVENT_SCHEMA_ID).text)
    if schema.get("name") != "PaymentResponseAvroModel":
        raise AssertionError(f"schema id {EVENT_SCHEMA_ID} of {FIXTURE} is {schema.get('name')}")
    return schema


def wide_schema() -> dict:
    kinds = ("int", "long", "double", "string")
    return {"type": "record", "name": "WideRow", "namespace": "bench.values", "fields": [
        {"name": f"{kinds[i % 4]}{i:02d}", "type": kinds[i % 4]} for i in range(WIDE_FIELDS)]}


def schemas() -> dict[str, tuple[dict, dict]]:
    """name -> (version 1, version 2)."""
    added = {"event": {"name": "failureCode", "type": ["null", "string"], "default": None},
             "wide": {"name": "region", "type": "string", "default": "eu-west-1"}}
    v1 = {"event": event_schema(), "wide": wide_schema()}
    return {k: (v, dict(v, fields=v["fields"] + [added[k]])) for k, v in v1.items()}


def event_datum(rnd: random.Random, i: int) -> dict:
    status = rnd.choices(("COMPLETED", "CANCELLED", "FAILED"), weights=(90, 6, 4))[0]
    failures = [] if status == "COMPLETED" else \
        ["Payment with id could not be processed: insufficient credit",
         f"customer credit history entry {rnd.randrange(10**6)} rejected"][:rnd.randint(1, 2)]
    ids = (str(uuid.UUID(int=rnd.getrandbits(128), version=4)) for _ in range(5))
    return {**dict(zip(("id", "sagaId", "paymentId", "customerId", "orderId"), ids)),
            "price": Decimal(rnd.randrange(100, 10**7)).scaleb(-2),
            "createdAt": BASE_MS + 37 * i, "paymentStatus": status,
            "failureMessages": failures}


def wide_datum(rnd: random.Random, i: int) -> dict:
    make = {"int": lambda: rnd.randrange(100_000), "long": lambda: BASE_MS + rnd.randrange(10**9),
            "double": lambda: rnd.uniform(-1e3, 1e3),
            "string": lambda: f"{rnd.choice(('north', 'south', 'east', 'west'))}-"
                              f"{rnd.randrange(10**6)}"}
    return {f["name"]: make[f["type"]]() for f in wide_schema()["fields"]}


def framed_payloads(schema: dict, schema_id: int, make: Callable, n: int) -> list[bytes]:
    parsed = fastavro.parse_schema(schema)
    rnd = random.Random(SEED)
    header = b"\x00" + schema_id.to_bytes(4, "big")
    out = []
    for i in range(n):
        buf = io.BytesIO()
        buf.write(header)
        fastavro.schemaless_writer(buf, parsed, make(rnd, i))
        out.append(buf.getvalue())
    return out


def dataset(versions: dict) -> tuple[Path, dict[str, list[bytes]]]:
    """The data directory (`_schemas-0`, the topics' partitions) and the payloads per schema,
    made once per parameter set (`done.json` written last)."""
    from tests.values.logs import schema_record, write_partition, write_registry

    params = {"records": RECORDS, "copies": SPARK_COPIES, "partitions": SPARK_PARTITIONS,
              "per_batch": PER_BATCH, "seed": SEED, "generator": GENERATOR, "schemas": versions}
    key = hashlib.sha1(json.dumps(params, sort_keys=True).encode()).hexdigest()[:10]
    path = DATA / f"value_decoding-{key}"
    if (path / "done.json").exists():
        return path, pickle.loads((path / "payloads.pickle").read_bytes())
    shutil.rmtree(path, ignore_errors=True)
    print(f"generating {path.name}", file=sys.stderr, flush=True)
    registry = []
    for name, (v1, v2) in versions.items():
        (id1, id2), topic = SCHEMAS[name], TOPICS[name]
        registry += [schema_record(f"{topic}-value", 1, id1, v1),
                     schema_record(f"{topic}-evolved-value", 1, id1, v1),
                     schema_record(f"{topic}-evolved-value", 2, id2, v2)]
    write_registry(path, registry)
    makers = {"event": event_datum, "wide": wide_datum}
    payloads = {name: framed_payloads(versions[name][0], SCHEMAS[name][0], makers[name],
                                      RECORDS) for name in versions}
    for name, values in payloads.items():
        records = [(None, v) for v in values] * SPARK_COPIES
        share = -(-len(records) // SPARK_PARTITIONS)
        for p in range(SPARK_PARTITIONS):
            write_partition(path, TOPICS[name], records[p * share:(p + 1) * share], partition=p,
                            per_batch=PER_BATCH)
    (path / "payloads.pickle").write_bytes(pickle.dumps(payloads, protocol=5))
    (path / "done.json").write_text(json.dumps(params, indent=1))
    return path, payloads


# -- the decoders ----------------------------------------------------------------------------

def confluent_column(data_dir: Path, topic: str):
    """valueFormat=confluent-avro's decoder for `topic`, built as a read builds it."""
    from segmentlog_source.values.build import build_decoding
    from segmentlog_source.values.decoding_spec import CONFLUENT_AVRO, DecodingSpec, SideSpec

    spec = DecodingSpec(value=SideSpec(CONFLUENT_AVRO))
    return build_decoding(spec, [topic], [str(data_dir)]).decoders["value"]


def chunk_records(data_dir: Path, topic: str) -> int:
    """Records per decode call of a read of a local log: one read-ahead chunk of batches (the
    reader emits a batch per chunk, spark/reader.py), at most DECODE_BYTES."""
    from segmentlog_source.spark.reader import DECODE_BYTES
    from segmentlog_source.storage.io.local import LocalFileSystem

    per_record = log_bytes(data_dir / f"{topic}-0") / (RECORDS * SPARK_COPIES / SPARK_PARTITIONS)
    return int(min(LocalFileSystem.read_ahead_bytes, DECODE_BYTES) // per_record)


def chunks(payloads: list[bytes], size: int) -> list[pa.Array]:
    return [pa.array(payloads[i:i + size], pa.binary()) for i in range(0, len(payloads), size)]


def fastavro_alone(payloads: list[bytes], writer: dict, reader: dict | None = None) -> list:
    read = fastavro.schemaless_reader
    return [read(io.BytesIO(p[5:]), writer, reader) for p in payloads]


def segmentlog_decode(arrays: list[pa.Array], column) -> list:
    return [column.decode(a)[0] for a in arrays]


def checked(decoded: list, expected_rows: int, what: str) -> None:
    """A benchmark of errors is worthless: every row must have decoded."""
    rows = sum(len(d.array) for d in decoded)
    bad = [e for d in decoded for e in d.errors if e is not None]
    if rows != expected_rows or bad:
        raise AssertionError(f"{what}: {rows} rows of {expected_rows}, {len(bad)} malformed "
                             f"(first: {bad[:1]})")


# -- one process -----------------------------------------------------------------------------

def in_turns(sides: dict[str, tuple[Callable, Callable]], records: int, repetitions: int,
             checks: dict[str, Callable] | None = None) -> tuple[dict, dict]:
    """records/s (wall, CPU) of (warm-up, measured) callables, in turns after the warm-ups;
    `checks[side]` sees that side's first output."""
    for warm, _ in sides.values():
        warm()
    wall: dict[str, list[float]] = {s: [] for s in sides}
    cpu: dict[str, list[float]] = {s: [] for s in sides}
    for rep in range(repetitions):
        for side, (_, measured) in sides.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            out = measured()
            wall[side].append(records / (time.perf_counter() - start))
            cpu[side].append(records / (time.process_time() - start_cpu))
            if rep == 0 and side in (checks or {}):
                checks[side](out)
            del out
    return wall, cpu


def one_process(name: str, data_dir: Path, payloads: list[bytes], versions: tuple,
                repetitions: int) -> list[dict]:
    from segmentlog_source.values.avro_reading import fastavro_schema as parse

    (v1, v2), topic = versions, TOPICS[name]
    size = chunk_records(data_dir, topic)
    warm = payloads[:WARMUP_RECORDS]
    arrays, warm_arrays = chunks(payloads, size), chunks(warm, size)
    same, resolving = (confluent_column(data_dir, t) for t in (topic, f"{topic}-evolved"))
    parsed1, parsed2 = fastavro.parse_schema(v1), fastavro.parse_schema(v2)
    prepared = parse(json.dumps(v1))

    def pair(fn, *args):
        return (lambda: fn(warm if fn is fastavro_alone else warm_arrays, *args),
                lambda: fn(payloads if fn is fastavro_alone else arrays, *args))

    sides = {FASTAVRO: pair(fastavro_alone, parsed1)}
    if name == "event":
        sides[PREPARED] = pair(fastavro_alone, prepared)
    sides[OURS] = pair(segmentlog_decode, same)
    sides[f"{FASTAVRO}, resolving"] = pair(fastavro_alone, parsed1, parsed2)
    sides[f"{OURS}, resolving"] = pair(segmentlog_decode, resolving)
    checks = {side: (lambda out, side=side: checked(out, len(payloads), f"{name}, {side}"))
              for side in (OURS, f"{OURS}, resolving")}
    wall, cpu = in_turns(sides, len(payloads), repetitions, checks)
    size_b = sum(map(len, payloads)) / len(payloads)
    data = (f"{len(payloads):,} {name} payloads ({size_b:.0f} B each on average, "
            f"{len(v1['fields'])} fields), decoded {size:,} at a time")
    by_cpu = "; by CPU time: " + ", ".join(f"{s} {statistics.median(v):,.0f}/s"
                                           for s, v in cpu.items())
    same_sides = [FASTAVRO] + ([PREPARED] if PREPARED in sides else []) + [OURS]
    ratios = {f"{OURS} / {FASTAVRO}": ratio(wall, OURS, FASTAVRO)}
    if PREPARED in sides:
        ratios[f"{OURS} / {PREPARED}"] = ratio(wall, OURS, PREPARED)
    micro = {s: 1e6 / statistics.median(wall[s]) for s in sides}
    ref = PREPARED if PREPARED in sides else FASTAVRO
    rows = [case(f"value decoding: {name}, one process, writer schema = reader schema",
                 data=data, repetitions=repetitions, unit="records/s",
                 raw={s: wall[s] for s in same_sides}, ratios=ratios,
                 notes="µs per record: " + ", ".join(f"{s} {micro[s]:.2f}" for s in same_sides)
                       + f"; segmentlog's own cost beyond {ref}: {micro[OURS] - micro[ref]:.2f} µs"
                       + by_cpu, cpu_records_per_s=cpu, chunk_records=size, schema=name,
                 mean_payload_bytes=size_b)]
    res_f, res_s = f"{FASTAVRO}, resolving", f"{OURS}, resolving"
    rows.append(case(
        f"value decoding: {name}, one process, version 1 payloads read with version 2 (an "
        f"added defaulted field)", data=data, repetitions=repetitions, unit="records/s",
        raw={s: wall[s] for s in (res_f, res_s)},
        ratios={f"{res_s} / {res_f}": ratio(wall, res_s, res_f),
                f"{res_s} / {FASTAVRO} (same schema)": ratio(wall, res_s, FASTAVRO),
                f"{res_s} / {OURS} (same schema)": ratio(wall, res_s, OURS)},
        notes=f"µs per record: {res_f} {micro[res_f]:.2f}, {res_s} {micro[res_s]:.2f}"))
    return rows


# -- where the time goes ---------------------------------------------------------------------

def profile_case(name: str, data_dir: Path, payloads: list[bytes]) -> dict:
    """cProfile of one decode of every chunk, fastavro's Cython reader called through a Python
    wrapper so that its own time shows (cProfile sees no Cython frames); and steps()."""
    topic, real = TOPICS[name], fastavro.schemaless_reader
    arrays = chunks(payloads, chunk_records(data_dir, topic))
    column = confluent_column(data_dir, topic)

    def schemaless_reader(*args, **kwargs):
        return real(*args, **kwargs)

    profiler = cProfile.Profile()
    fastavro.schemaless_reader = schemaless_reader
    try:
        profiler.enable()
        segmentlog_decode(arrays, column)
        profiler.disable()
    finally:
        fastavro.schemaless_reader = real
    stats = pstats.Stats(profiler)
    top = []
    for (path, line, func), (_, calls, own, cumulative, _) in sorted(
            stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:PROFILE_TOP]:
        where = func if path == "~" else f"{path.replace(f'{REPO}/', '')}:{line}({func})"
        if func == "schemaless_reader" and path == __file__:
            where = "fastavro.schemaless_reader (Cython, through the wrapper)"
        top.append({"function": where, "calls": calls, "own_s": round(own, 4),
                    "cumulative_s": round(cumulative, 4), "share": round(own / stats.total_tt, 3)})
    return {"schema": name, "records": len(payloads), "top": top,
            "seconds_under_profile": round(stats.total_tt, 3),
            "steps_us": steps(column, confluent_column(data_dir, f"{topic}-evolved"), arrays,
                              SCHEMAS[name][0])}


def steps(column, resolving, arrays: list[pa.Array], writer_id: int) -> dict[str, float]:
    """CPU µs per record of ConfluentColumn.decode; of it with the cyclic garbage collector off,
    and so of its steps timed one by one on the same chunks (best of 2, no profiler), and of
    fastavro's call resolving version 1 to version 2."""
    avro, n = column.avro, sum(len(a) for a in arrays)
    kwargs = {"return_named_type": True} if avro.convert is not None else {}

    def calls(values: list, writer, reader) -> list:
        out = []
        for p in values:
            buf = io.BytesIO(p)
            buf.seek(5)
            out.append(fastavro.schemaless_reader(buf, writer, reader, **kwargs))
            buf.tell()
        return out

    def chunkwise(*stages: Callable, collect: bool = True) -> list[float]:
        """Best of 2 of each stage's µs per record, chunk by chunk, each stage given the output
        of the one before (so that as few values are alive at once as in the decoder)."""
        runs = []
        for _ in range(2):
            spent = [0.0] * len(stages)
            for array in arrays:
                value = array
                for k, stage in enumerate(stages):
                    start = time.process_time()
                    if not collect:
                        gc.disable()
                    value = stage(value)
                    if not collect:
                        gc.enable()
                    spent[k] += time.process_time() - start
            runs.append(spent)
        return [round(min(r[k] for r in runs) / n * 1e6, 2) for k in range(len(stages))]

    stages = {"the payloads as Python bytes (to_pylist)": lambda array: array.to_pylist(),
              "fastavro.schemaless_reader on each body":
              lambda values: calls(values, avro.reader, None)}
    if avro.convert is not None:
        stages["the converter (decimals from their unscaled bytes)"] = \
            lambda values: [avro.convert(v) for v in values]
    stages["the Arrow array of Spark's type (_to_arrow)"] = \
        lambda values: avro._to_arrow(values, [None] * len(values))
    got = {DECODE_STEP: chunkwise(column.decode)[0],
           GC_OFF_STEP: chunkwise(column.decode, collect=False)[0]}
    got.update(zip(stages, chunkwise(*stages.values(), collect=False)))
    got[RESOLVING_STEP] = chunkwise(lambda a: a.to_pylist(), lambda values: calls(
        values, resolving.avro.writer(writer_id), resolving.avro.reader), collect=False)[1]
    return got


# -- Spark -----------------------------------------------------------------------------------

def spark_cpu_seconds(spark) -> float | None:
    """CPU seconds used so far by Spark's JVM and its Python workers (its process tree, exited
    workers once reaped): unlike wall time, not raised by other work on the shared cores."""
    proc = getattr(getattr(spark.sparkContext, "_gateway", None), "proc", None)
    if proc is None:
        return None
    parents, used = {}, {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:     # gone since listed
            continue
        parents.setdefault(int(fields[1]), []).append(int(entry.name))
        used[int(entry.name)] = sum(map(int, fields[11:15]))    # utime stime cutime cstime
    total, todo = 0, [proc.pid]
    while todo:
        pid = todo.pop()
        total += used.get(pid, 0)
        todo += parents.get(pid, [])
    return total / os.sysconf("SC_CLK_TCK")


def spark_rows(data_dir: Path, repetitions: int, one_process_rows: list[dict]) -> list[dict]:
    """The Spark rows; their per-core rate (records per CPU-second, else wall / 2 cores) is
    set beside the one-process medians of the same payloads."""
    alone = {r["schema"]: r["median"] for r in one_process_rows
             if r["name"].endswith("= reader schema")}
    spark = spark_session()
    records = RECORDS * SPARK_COPIES
    rows = []
    for name, topic in TOPICS.items():
        def load(fmt: str):
            return (spark.read.format("segmentlog").option("valueFormat", fmt)
                    .option("subscribe", topic).load(str(data_dir)))

        def consume(fmt: str) -> Callable[[], None]:
            df = load(fmt).select("value_decoded.*" if fmt == AVRO else "value")
            return lambda: df.write.format("noop").mode("overwrite").save()

        bad = load(AVRO).where("value_error is not null or value_decoded is null").count()
        if bad:                        # (and the warm-up of the decoding side)
            raise AssertionError(f"{bad} of the {name} records did not decode in Spark")
        consume(BINARY)()
        wall = {f"valueFormat={f}": [] for f in (AVRO, BINARY)}
        cpu = {side: [] for side in wall}
        for _ in range(repetitions):
            for side in wall:
                query = consume(side.split("=")[1])
                before, start = spark_cpu_seconds(spark), time.perf_counter()
                query()
                wall[side].append(records / (time.perf_counter() - start))
                if before is not None:
                    cpu[side].append(records / (spark_cpu_seconds(spark) - before))
        ours, binary = f"valueFormat={AVRO}", f"valueFormat={BINARY}"
        ratios = {f"{ours} / binary": ratio(wall, ours, binary)}
        notes = (f"consumed by write.format('noop'); {load(AVRO).rdd.getNumPartitions()} Spark "
                 "partition(s) as planned by default; records/s by wall time")
        per_core, how = statistics.median(wall[ours]) / 2, "per core (wall / 2)"
        if all(cpu.values()):
            ratios[f"{ours} / binary, by CPU"] = ratio(cpu, ours, binary)
            busy = statistics.median(w / c for w, c in zip(wall[ours], cpu[ours]))
            notes += ("; per CPU-second of Spark's JVM and Python workers: " + ", ".join(
                f"{s} {statistics.median(v):,.0f}" for s, v in cpu.items())
                + f" records; {ours} kept {busy:.2f} of the 2 cores busy")
            per_core, how = statistics.median(cpu[ours]), "per CPU-second"
        for side in (FASTAVRO, OURS):
            ratios[f"{ours} {how} / {side}, one process"] = per_core / alone[name][side]
        rows.append(case(
            f"value decoding: {name}, Spark local[2], select(value_decoded.*) vs the same read "
            f"with valueFormat=binary", repetitions=repetitions, unit="records/s", raw=wall,
            data=f"{records:,} records ({RECORDS:,} payloads x {SPARK_COPIES}), "
                 f"{SPARK_PARTITIONS} partitions, {PER_BATCH}/batch, uncompressed, "
                 f"{log_bytes(data_dir / f'{topic}-0') * SPARK_PARTITIONS / 1e6:,.0f} MB of .log",
            ratios=ratios, notes=notes, cpu_records_per_s=cpu))
    return rows


# -- the run ---------------------------------------------------------------------------------

def run(repetitions: int = REPETITIONS) -> list[dict]:
    versions = schemas()
    data_dir, payloads = dataset(versions)
    rows = []
    for name in versions:
        rows += one_process(name, data_dir, payloads[name], versions[name], repetitions)
    profiles = [profile_case(name, data_dir, payloads[name]) for name in versions]
    rows += spark_rows(data_dir, repetitions, rows)
    for r, p in zip((r for r in rows if r["name"].endswith("= reader schema")), profiles):
        r["profile"] = p
    return rows


def where_the_time_goes(rows: list[dict]) -> str:
    lines = ["", "## Where the time goes", "",
             "cProfile of one ConfluentColumn.decode of every chunk, writer = reader schema, the "
             f"top {PROFILE_TOP} by own time (fastavro's Cython reader timed through a Python "
             "wrapper; the profiler's per-call cost inflates small Python functions, so shares "
             "are approximate); then the decode timed with the cyclic garbage collector on and "
             "off, and its steps one by one, unprofiled.", ""]
    for r in (r for r in rows if r.get("profile")):
        p = r["profile"]
        lines += [f"**{p['schema']}** ({p['records']:,} records, {p['seconds_under_profile']} s "
                  "under the profiler):", "", "| function | calls | own s | share |",
                  "|---|---|---|---|"] + [
                  f"| `{t['function']}` | {t['calls']:,} | {t['own_s']:.3f} | {t['share']:.0%} |"
                  for t in p["top"]]
        got = p["steps_us"]
        parts = {k: v for k, v in got.items()
                 if k not in (RESOLVING_STEP, DECODE_STEP, GC_OFF_STEP)}
        total, off = got[DECODE_STEP], got[GC_OFF_STEP]
        lines += ["", f"Step by step (CPU µs per record, best of 2): {DECODE_STEP} {total:.2f}, "
                  f"{GC_OFF_STEP} {off:.2f} (so the collector takes {total - off:.2f}); the "
                  "steps, collector off: " + " + ".join(f"{k} {v:.2f}" for k, v in parts.items())
                  + f" + the rest (framing, loops, row checks) {off - sum(parts.values()):.2f}; "
                  f"{RESOLVING_STEP} {got[RESOLVING_STEP]:.2f}, collector off.", ""]
    return "\n".join(lines)


def main() -> None:
    from .run import write_alone

    started = time.perf_counter()
    try:
        rows = run()
    finally:
        stop_spark()
    write_alone("value_decoding", rows, time.perf_counter() - started, phrases={
        "a timing ratio is the median": "a ratio (of records/s: above 1, the first is faster) "
                                        "is the median"}, after=where_the_time_goes(rows))


if __name__ == "__main__":
    main()
