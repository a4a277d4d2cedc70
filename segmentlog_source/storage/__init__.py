"""Files, and no Spark: one room per part a Kafka engineer knows.

    io/         the one I/O seam (local files, object stores and HDFS)
    log/        segments, indexes, partition logs, loading and recovery, checkpoints
    txn/        producer state and the transaction index
    commit/     the exactly-once write protocol
    log_files   the names of files in data and partition directories

The rooms are layered (pyproject.toml, tests/test_layout.py): commit > log > txn > io, log_files.
"""
