"""Record keys and values decoded: Avro (plain or in Schema Registry framing, with schemas from
the log's own `_schemas` topic), JSON, strings, and Kafka's internal topics.

Below plan (the planner resolves schemas at load time) and above storage (a `_schemas` partition
is read as a log). No Spark session here: pyspark.sql.types only declares the decoded columns'
types, and the columns themselves are Arrow arrays.

    record_decoding.py   the decoded columns added to a batch, under PERMISSIVE/FAILFAST/
                         DROPMALFORMED; the options' spec (DecodingSpec)
    build.py             the decoders of one read, built on the driver
    column_decoders.py   one decoder per format: string, json, avro, confluent-avro
    wire_format.py       Schema Registry's framing (magic byte, schema id)
    avro_types.py        Avro schemas as Spark's from_avro types
    avro_reading.py      the schema fastavro reads, and its values made Spark's
    avro_values.py       the Avro decoder (fastavro), writer -> reader resolution
    json_values.py       JSON into a Spark type; inference; JSON Schema as a Spark type
    ddl.py               Spark DDL strings as types, without a JVM
    schema_registry.py   a registry snapshot: schemas by id, subjects' versions
    registry_log.py      the `_schemas` topic replayed as the registry replays it
    registry_sources.py  where a snapshot comes from: the log, .avsc files, a REST URL
    kafka_internal/      `__consumer_offsets`, `__transaction_state`, `__share_group_state`,
                         `__remote_log_metadata`, `__cluster_metadata` (dump text and columns)
"""
