"""The exactly-once write protocol: task-private staged files, the committer that appends them
to the log under each partition's lock, and the commit log of manifests and committed batches."""
