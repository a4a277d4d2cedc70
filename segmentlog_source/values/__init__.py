"""Record keys and values decoded: Avro (plain or in Schema Registry framing, with schemas from
the log's own `_schemas` topic), JSON, strings, and Kafka's internal topics.

Below plan (the planner resolves schemas at load time) and above storage (a `_schemas` partition
is read as a log); nothing here imports Spark: decoded columns are Arrow arrays.
"""
