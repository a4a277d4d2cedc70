"""The records of Kafka's internal topics `__consumer_offsets`, `__transaction_state`,
`__share_group_state` and KRaft's `__cluster_metadata`, decoded with the layouts of apache/kafka's
message definitions (every key and value version), read by format/message_protocol.py (versions,
flexible encodings, tagged fields); and `__remote_log_metadata`'s (format/remote_log_metadata.py
decodes them) as Kafka prints them and as columns.

    kafka_json.py      the text of Kafka's generated JSON converters, as Jackson prints it
    group_messages.py  __consumer_offsets' record types (Kafka 4.4's group coordinator)
    share_messages.py  __share_group_state's record types (Kafka 4.4's share coordinator)
    messages.py        __transaction_state's records, the classic consumer protocol's
                       subscription and assignment, and which topic holds which records
    records.py         decode_key / decode_value, and the lines DumpLogSegments' decoders print
    remote_metadata.py __remote_log_metadata's records as DumpLogSegments prints them
    columns.py         the key_decoded / value_decoded columns, as Arrow arrays
    metadata_messages.py  KRaft's cluster metadata records (`__cluster_metadata`, snapshots)
    metadata_records.py   decode_metadata / redact, and DumpLogSegments' payload lines
    metadata_configs.py   which ConfigRecord values may be shown (Kafka's config schema)
    metadata_snapshot.py  a KRaft snapshot's records, checked, decoded and redacted
"""
