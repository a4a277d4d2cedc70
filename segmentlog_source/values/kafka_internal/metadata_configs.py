"""Which ConfigRecord values of the metadata log may be shown: the configuration names Kafka
4.4 declares, per resource type, with a type other than PASSWORD.

Kafka's own rule (KafkaConfigSchema.isSensitive, used by the controller to log records) is that a
value is sensitive when its name's type is PASSWORD *or when the name is unknown* for the
resource type. The same rule holds here: a name outside these sets (a listener-prefixed
`listener.name.x.ssl.keystore.password`, a plugin's own setting, a config of a later Kafka, any
name of a resource type not listed) is redacted. Kafka's controller knows BROKER and TOPIC names;
GROUP and CLIENT_METRICS are added here from Kafka's GroupConfig and ClientMetricsConfigs (none
of their names is a password).

    resource type  id  names from Kafka 4.4's
    TOPIC           2  LogConfig (topic configs)
    BROKER          4  KafkaConfig (every broker config; the PASSWORD ones left out:
                       ssl.*password, ssl.keystore.key, ssl.keystore.certificate.chain,
                       ssl.truststore.certificates, sasl.jaas.config,
                       sasl.oauthbearer.*secret / *passphrase, delegation.token.secret.key)
    CLIENT_METRICS 16  ClientMetricsConfigs
    GROUP          32  GroupConfig
"""

from __future__ import annotations

SHOWN_CONFIGS: dict[int, frozenset[str]] = {
    2: frozenset("""
    cleanup.policy compression.gzip.level compression.lz4.level compression.type
    compression.zstd.level delete.retention.ms errors.deadletterqueue.group.enable
    file.delete.delay.ms flush.messages flush.ms follower.replication.throttled.replicas
    index.interval.bytes internal.segment.bytes leader.replication.throttled.replicas
    local.retention.bytes local.retention.ms max.compaction.lag.ms
    max.decompressed.message.bytes max.message.bytes message.timestamp.after.max.ms
    message.timestamp.before.max.ms message.timestamp.type min.cleanable.dirty.ratio
    min.compaction.lag.ms min.insync.replicas preallocate remote.copy.lag.bytes
    remote.copy.lag.ms remote.log.copy.disable remote.log.delete.on.disable
    remote.storage.enable retention.bytes retention.ms segment.bytes segment.index.bytes
    segment.jitter.ms segment.ms unclean.leader.election.enable
    """.split()),   # TOPIC: 38 names
    4: frozenset("""
    add.partitions.to.txn.retry.backoff.max.ms add.partitions.to.txn.retry.backoff.ms
    advertised.listeners alter.config.policy.class.name
    alter.log.dirs.replication.quota.window.num
    alter.log.dirs.replication.quota.window.size.seconds authorizer.class.name
    auto.create.topics.enable auto.leader.rebalance.enable background.threads
    broker.heartbeat.interval.ms broker.id broker.rack broker.session.timeout.ms
    client.quota.callback.class compression.gzip.level compression.lz4.level
    compression.type compression.zstd.level config.providers
    connection.failed.authentication.delay.ms connections.max.idle.ms
    connections.max.reauth.ms controlled.shutdown.enable controller.listener.names
    controller.performance.always.log.threshold.ms controller.performance.sample.period.ms
    controller.quorum.append.linger.ms controller.quorum.auto.join.enable
    controller.quorum.bootstrap.servers controller.quorum.election.backoff.max.ms
    controller.quorum.election.timeout.ms controller.quorum.fetch.max.bytes
    controller.quorum.fetch.snapshot.max.bytes controller.quorum.fetch.timeout.ms
    controller.quorum.request.timeout.ms controller.quorum.retry.backoff.ms
    controller.quorum.voters controller.quota.window.num
    controller.quota.window.size.seconds controller.socket.timeout.ms cordoned.log.dirs
    create.topic.policy.class.name default.replication.factor
    delegation.token.expiry.check.interval.ms delegation.token.expiry.time.ms
    delegation.token.max.lifetime.ms delete.records.purgatory.purge.interval.requests
    delete.topic.enable early.start.listeners
    errors.deadletterqueue.auto.create.topics.enable
    errors.deadletterqueue.topic.name.prefix fetch.max.bytes
    fetch.purgatory.purge.interval.requests follower.fetch.last.tiered.offset.enable
    group.consumer.assignment.interval.ms group.consumer.assignor.offload.enable
    group.consumer.assignors group.consumer.heartbeat.interval.ms
    group.consumer.max.assignment.interval.ms group.consumer.max.heartbeat.interval.ms
    group.consumer.max.session.timeout.ms group.consumer.max.size
    group.consumer.migration.policy group.consumer.min.assignment.interval.ms
    group.consumer.min.heartbeat.interval.ms group.consumer.min.session.timeout.ms
    group.consumer.regex.refresh.interval.ms group.consumer.session.timeout.ms
    group.coordinator.append.linger.ms group.coordinator.background.threads
    group.coordinator.cached.buffer.max.bytes group.coordinator.rebalance.protocols
    group.coordinator.threads group.initial.rebalance.delay.ms group.max.session.timeout.ms
    group.max.size group.min.session.timeout.ms group.share.assignment.interval.ms
    group.share.assignor.offload.enable group.share.assignors
    group.share.delivery.count.limit group.share.dlq.manager.class.name
    group.share.heartbeat.interval.ms group.share.initialize.retry.interval.ms
    group.share.max.assignment.interval.ms group.share.max.delivery.count.limit
    group.share.max.heartbeat.interval.ms group.share.max.partition.max.record.locks
    group.share.max.record.lock.duration.ms group.share.max.session.timeout.ms
    group.share.max.share.sessions group.share.max.size
    group.share.min.assignment.interval.ms group.share.min.delivery.count.limit
    group.share.min.heartbeat.interval.ms group.share.min.partition.max.record.locks
    group.share.min.record.lock.duration.ms group.share.min.session.timeout.ms
    group.share.partition.max.record.locks group.share.persister.class.name
    group.share.record.lock.duration.ms group.share.session.timeout.ms
    group.streams.acceptable.recovery.lag group.streams.assignment.interval.ms
    group.streams.assignor.offload.enable group.streams.assignors
    group.streams.heartbeat.interval.ms group.streams.initial.rebalance.delay.ms
    group.streams.max.assignment.interval.ms group.streams.max.heartbeat.interval.ms
    group.streams.max.session.timeout.ms group.streams.max.size
    group.streams.max.standby.replicas group.streams.max.warmup.replicas
    group.streams.min.assignment.interval.ms group.streams.min.heartbeat.interval.ms
    group.streams.min.session.timeout.ms group.streams.min.task.offset.interval.ms
    group.streams.num.standby.replicas group.streams.num.warmup.replicas
    group.streams.rack.aware.assignment.tags group.streams.session.timeout.ms
    group.streams.task.offset.interval.ms group.streams.topology.description.plugin.class
    initial.broker.registration.timeout.ms inter.broker.listener.name
    internal.metadata.delete.delay.millis internal.metadata.log.segment.bytes
    internal.metadata.max.batch.size.in.bytes kafka.metrics.polling.interval.secs
    kafka.metrics.reporters leader.imbalance.check.interval.seconds
    listener.security.protocol.map listeners log.cleaner.backoff.ms
    log.cleaner.dedupe.buffer.size log.cleaner.delete.retention.ms log.cleaner.enable
    log.cleaner.io.buffer.load.factor log.cleaner.io.buffer.size
    log.cleaner.io.max.bytes.per.second log.cleaner.max.compaction.lag.ms
    log.cleaner.min.cleanable.ratio log.cleaner.min.compaction.lag.ms log.cleaner.threads
    log.cleanup.policy log.dir log.dir.failure.timeout.ms log.dirs
    log.flush.interval.messages log.flush.interval.ms
    log.flush.offset.checkpoint.interval.ms log.flush.scheduler.interval.ms
    log.flush.start.offset.checkpoint.interval.ms log.index.interval.bytes
    log.index.size.max.bytes log.initial.task.delay.ms log.local.retention.bytes
    log.local.retention.ms log.message.timestamp.after.max.ms
    log.message.timestamp.before.max.ms log.message.timestamp.type log.preallocate
    log.remote.copy.lag.bytes log.remote.copy.lag.ms log.retention.bytes
    log.retention.check.interval.ms log.retention.hours log.retention.minutes
    log.retention.ms log.roll.hours log.roll.jitter.hours log.roll.jitter.ms log.roll.ms
    log.segment.bytes log.segment.delete.delay.ms max.connection.creation.rate
    max.connections max.connections.per.ip max.connections.per.ip.overrides
    max.decompressed.message.bytes max.incremental.fetch.session.cache.slots
    max.request.partition.size.limit message.max.bytes metadata.log.dir
    metadata.log.max.record.bytes.between.snapshots metadata.log.max.snapshot.interval.ms
    metadata.log.segment.bytes metadata.log.segment.ms metadata.max.idle.interval.ms
    metadata.max.retention.bytes metadata.max.retention.ms metric.reporters
    metrics.num.samples metrics.recording.level metrics.sample.window.ms min.insync.replicas
    node.id num.io.threads num.network.threads num.partitions
    num.recovery.threads.per.data.dir num.replica.alter.log.dirs.threads
    num.replica.fetchers offset.metadata.max.bytes offsets.commit.timeout.ms
    offsets.load.buffer.size offsets.retention.check.interval.ms offsets.retention.minutes
    offsets.topic.compression.codec offsets.topic.num.partitions
    offsets.topic.replication.factor offsets.topic.segment.bytes principal.builder.class
    process.roles producer.id.expiration.check.interval.ms producer.id.expiration.ms
    producer.purgatory.purge.interval.requests queued.max.request.bytes queued.max.requests
    quota.window.num quota.window.size.seconds remote.fetch.max.wait.ms
    remote.list.offsets.request.timeout.ms remote.log.index.file.cache.total.size.bytes
    remote.log.index.file.cache.ttl.ms remote.log.manager.copier.thread.pool.size
    remote.log.manager.copy.max.bytes.per.second remote.log.manager.copy.quota.window.num
    remote.log.manager.copy.quota.window.size.seconds
    remote.log.manager.expiration.thread.pool.size
    remote.log.manager.fetch.max.bytes.per.second remote.log.manager.fetch.quota.window.num
    remote.log.manager.fetch.quota.window.size.seconds
    remote.log.manager.follower.thread.pool.size remote.log.manager.task.interval.ms
    remote.log.manager.task.retry.backoff.max.ms remote.log.manager.task.retry.backoff.ms
    remote.log.manager.task.retry.jitter remote.log.manager.thread.pool.size
    remote.log.metadata.custom.metadata.max.bytes remote.log.metadata.manager.class.name
    remote.log.metadata.manager.class.path remote.log.metadata.manager.impl.prefix
    remote.log.metadata.manager.listener.name remote.log.reader.max.pending.tasks
    remote.log.reader.threads remote.log.storage.manager.class.name
    remote.log.storage.manager.class.path remote.log.storage.manager.impl.prefix
    remote.log.storage.system.enable replica.fetch.backoff.ms replica.fetch.max.bytes
    replica.fetch.min.bytes replica.fetch.response.max.bytes replica.fetch.wait.max.ms
    replica.high.watermark.checkpoint.interval.ms replica.lag.time.max.ms
    replica.selector.class replica.socket.receive.buffer.bytes replica.socket.timeout.ms
    replication.quota.window.num replication.quota.window.size.seconds request.timeout.ms
    sasl.client.callback.handler.class sasl.enabled.mechanisms sasl.kerberos.kinit.cmd
    sasl.kerberos.min.time.before.relogin sasl.kerberos.principal.to.local.rules
    sasl.kerberos.service.name sasl.kerberos.ticket.renew.jitter
    sasl.kerberos.ticket.renew.window.factor sasl.login.callback.handler.class
    sasl.login.class sasl.login.connect.timeout.ms sasl.login.read.timeout.ms
    sasl.login.refresh.buffer.seconds sasl.login.refresh.min.period.seconds
    sasl.login.refresh.window.factor sasl.login.refresh.window.jitter
    sasl.login.retry.backoff.max.ms sasl.login.retry.backoff.ms
    sasl.mechanism.controller.protocol sasl.mechanism.inter.broker.protocol
    sasl.oauthbearer.allow.unverified.audience sasl.oauthbearer.allow.unverified.issuer
    sasl.oauthbearer.assertion.algorithm sasl.oauthbearer.assertion.claim.aud
    sasl.oauthbearer.assertion.claim.exp.seconds sasl.oauthbearer.assertion.claim.iss
    sasl.oauthbearer.assertion.claim.jti.include
    sasl.oauthbearer.assertion.claim.nbf.seconds sasl.oauthbearer.assertion.claim.sub
    sasl.oauthbearer.assertion.file sasl.oauthbearer.assertion.private.key.file
    sasl.oauthbearer.assertion.template.file sasl.oauthbearer.client.credentials.client.id
    sasl.oauthbearer.clock.skew.seconds sasl.oauthbearer.expected.audience
    sasl.oauthbearer.expected.issuer sasl.oauthbearer.jwks.endpoint.refresh.ms
    sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms
    sasl.oauthbearer.jwks.endpoint.retry.backoff.ms sasl.oauthbearer.jwks.endpoint.url
    sasl.oauthbearer.jwt.retriever.class sasl.oauthbearer.jwt.validator.class
    sasl.oauthbearer.scope sasl.oauthbearer.scope.claim.name sasl.oauthbearer.sub.claim.name
    sasl.oauthbearer.token.endpoint.url sasl.server.callback.handler.class
    sasl.server.max.receive.size security.inter.broker.protocol security.providers
    server.max.startup.time.ms share.coordinator.append.linger.ms
    share.coordinator.cached.buffer.max.bytes
    share.coordinator.cold.partition.snapshot.interval.ms share.coordinator.load.buffer.size
    share.coordinator.snapshot.update.records.per.snapshot
    share.coordinator.state.topic.compression.codec share.coordinator.state.topic.min.isr
    share.coordinator.state.topic.num.partitions
    share.coordinator.state.topic.prune.interval.ms
    share.coordinator.state.topic.replication.factor
    share.coordinator.state.topic.segment.bytes share.coordinator.threads
    share.coordinator.write.timeout.ms share.fetch.purgatory.purge.interval.requests
    socket.connection.setup.timeout.max.ms socket.connection.setup.timeout.ms
    socket.listen.backlog.size socket.receive.buffer.bytes socket.request.max.bytes
    socket.send.buffer.bytes ssl.allow.dn.changes ssl.allow.san.changes ssl.cipher.suites
    ssl.client.auth ssl.enabled.protocols ssl.endpoint.identification.algorithm
    ssl.engine.factory.class ssl.keymanager.algorithm ssl.keystore.location
    ssl.keystore.type ssl.principal.mapping.rules ssl.protocol ssl.provider
    ssl.secure.random.implementation ssl.trustmanager.algorithm ssl.truststore.location
    ssl.truststore.type telemetry.max.bytes
    transaction.abort.timed.out.transaction.cleanup.interval.ms transaction.max.timeout.ms
    transaction.partition.verification.enable
    transaction.remove.expired.transaction.cleanup.interval.ms
    transaction.state.log.load.buffer.size transaction.state.log.min.isr
    transaction.state.log.num.partitions transaction.state.log.replication.factor
    transaction.state.log.segment.bytes transaction.two.phase.commit.enable
    transactional.id.expiration.ms unclean.leader.election.enable
    unclean.leader.election.interval.ms unstable.api.versions.enable
    unstable.feature.versions.enable
    """.split()),   # BROKER: 369 names
    16: frozenset("""
    interval.ms match metrics
    """.split()),   # CLIENT_METRICS: 3 names
    32: frozenset("""
    consumer.assignment.interval.ms consumer.assignor.offload.enable
    consumer.heartbeat.interval.ms consumer.session.timeout.ms
    errors.deadletterqueue.copy.record.enable errors.deadletterqueue.topic.name
    share.assignment.interval.ms share.assignor.offload.enable share.auto.offset.reset
    share.delivery.count.limit share.heartbeat.interval.ms share.isolation.level
    share.partition.max.record.locks share.record.lock.duration.ms
    share.renew.acknowledge.enable share.session.timeout.ms streams.acceptable.recovery.lag
    streams.assignment.interval.ms streams.assignor.name streams.assignor.offload.enable
    streams.heartbeat.interval.ms streams.initial.rebalance.delay.ms
    streams.num.standby.replicas streams.num.warmup.replicas
    streams.rack.aware.assignment.tags streams.session.timeout.ms
    streams.task.offset.interval.ms
    """.split()),   # GROUP: 27 names
}


def config_is_sensitive(resource_type: int, name: str) -> bool:
    """Whether a ConfigRecord value of this resource type and name is kept from view."""
    return name not in SHOWN_CONFIGS.get(resource_type, frozenset())
