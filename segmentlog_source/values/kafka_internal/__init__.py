"""The records of Kafka's internal topics `__consumer_offsets`, `__transaction_state` and KRaft's
`__cluster_metadata`, decoded with the layouts of apache/kafka's message definitions (every key
and value version), read by format/message_protocol.py (versions, flexible encodings, tagged
fields).

    kafka_json.py      the text of Kafka's generated JSON converters, as Jackson prints it
    group_messages.py  __consumer_offsets' record types (Kafka 4.4's group coordinator)
    messages.py        __transaction_state's records, the classic consumer protocol's
                       subscription and assignment, and which topic holds which records
    records.py         decode_key / decode_value, and the lines DumpLogSegments' decoders print
    columns.py         the key_decoded / value_decoded columns, as Arrow arrays
    metadata_messages.py  KRaft's cluster metadata records (`__cluster_metadata`, snapshots)
    metadata_records.py   decode_metadata / redact, and DumpLogSegments' payload lines
    metadata_configs.py   which ConfigRecord values may be shown (Kafka's config schema)
    metadata_snapshot.py  a KRaft snapshot's records, checked, decoded and redacted
"""
