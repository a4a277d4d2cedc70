"""A real Kafka for the tests: a single-node KRaft broker, Kafka's DumpLogSegments and a small Java
client, all run from pinned Maven jars kept in a cache outside the repository.

    jars.py               the pinned jar sets (pom.xml): fetched once with Maven, then reused
    jvm.py                finding java/javac and running one short JVM
    readiness.py          free loopback ports and a Metadata request that says "ready"
    broker.py             KafkaBroker: format, start, wait until ready, stop (SIGTERM) or kill
    java_client.py        KafkaClient.java, compiled at run time: topics, produce, ListOffsets
    dump_log_segments.py  Kafka's own DumpLogSegments, run over many files in one JVM

`python -m segmentlog_source.devtools.kafka.jars` fetches every jar set (what `make test` does
first). Everything binds to 127.0.0.1.
"""
