"""The records of Kafka's internal topics `__consumer_offsets` and `__transaction_state`, decoded
with the layouts of apache/kafka's message definitions (every key and value version), read by
format/message_protocol.py (versions, flexible encodings, tagged fields).

    kafka_json.py      the text of Kafka's generated JSON converters, as Jackson prints it
    group_messages.py  __consumer_offsets' record types (Kafka 4.4's group coordinator)
    messages.py        __transaction_state's records, the classic consumer protocol's
                       subscription and assignment, and which topic holds which records
    records.py         decode_key / decode_value, and the lines DumpLogSegments' decoders print
    columns.py         the key_decoded / value_decoded columns, as Arrow arrays
"""
