"""The records of Kafka's internal topics `__consumer_offsets` and `__transaction_state`, decoded
with the layouts of apache/kafka's message definitions (every key and value version)."""
