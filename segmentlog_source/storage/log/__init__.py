"""The log itself, as Kafka's log layer keeps it: segments and their offset and time indexes
(LogSegment, OffsetIndex, TimeIndex), the partition log (lookups, appends, rolls), loading and
recovery (LogLoader), checkpoint files, log directories and data directories."""
