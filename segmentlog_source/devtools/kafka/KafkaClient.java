// The tests' Kafka client: Admin, producers and ListOffsets against the test broker, through
// kafka-clients itself. java_client.py compiles it at run time against the cached jars.
//
//   java KafkaClient --bootstrap HOST:PORT [--keep-going]    commands on stdin, one per line
//   java KafkaClient --bootstrap HOST:PORT COMMAND ARGS...    one command
//
// A JVM costs about a second to start, so a test sends all its commands in one run. Every
// result is one JSON object per line, with "line" (the command's number, from 1) and "op".
// The first failing command ends the run: its stack trace on stderr, exit status 1. With
// --keep-going a failing command answers {"line", "op": "failed", "error"} and the run goes on.
//
//   describe-cluster
//   create-topic T [--partitions N] [--config k=v]...
//   produce T [--codec C] [--count N] [--partitions N] [--batch N] [--base-ts MS] [--ts-step MS]
//             [--late-every K] [--value-bytes N] [--prefix P] [--txn none|commit|abort]
//             [--keys K]   (K > 0: every record has a key, record i that of i % K, so keys
//             repeat; a compacted topic refuses records without a key)
//   interleave T [--codec C] [--count N] [--partitions N] [--base-ts MS] [--ts-step MS]
//             [--prefix P]
//             (two transactional producers sending in turn: the first commits, the second aborts)
//   list-offsets T [--partitions N] [--isolation read_committed|read_uncommitted]
//             [--timestamp MS]...
//   consume-group T --group G [--protocol classic|consumer] [--partitions N] [--txn commit]
//             (a read_committed consumer of group G with that group.protocol reads T's N
//             partitions to their end, commits the positions with metadata "G" (--txn commit:
//             in a transaction, through a transactional producer) and leaves the group)
//   alter-configs RESOURCE [--set k=v]... [--delete k]...
//             (incrementalAlterConfigs; RESOURCE is topic:NAME, broker:ID, broker-default (the
//             cluster-wide default, the broker resource with an empty name) or group:NAME)
//   create-partitions T --total N
//   delete-topic T
//   scram-user NAME --password P [--mechanism SCRAM-SHA-256|SCRAM-SHA-512] [--iterations N]
//             (alterUserScramCredentials: an upsertion)
//   share-consume T --group G [--count N] [--reject-every K]
//             (a share consumer of group G, explicit acknowledgement, reads N records of T,
//             accepting each but every K-th, which it rejects (archived), commits and leaves)
//   describe-all
//             (the Admin API's view of the cluster in one answer: every topic, internal ones
//             too, with its id, partitions (leader, replicas, isr) and describeConfigs entries;
//             the dynamic configs of the broker default and of each broker; SCRAM users)
//   fill T [--count N] [--partitions N] [--key-bytes N] [--value-bytes N] [--codec C]
//             [--base-ts MS] [--ts-step MS]
//             (a benchmark's data: no headers, a producer tuned for throughput; record i goes
//             to partition i % N with CreateTime base + i * step)
//
// Record i of a produce (record(...) below) is a pure function of its arguments: keys are null
// for every 5th record, values null for every 13th and not UTF-8 for every 17th, every 3rd
// record has no headers and the others three (one with a null value), some a repeated key; the
// timestamp is base + i * step, except every K-th record (--late-every), which is older than its
// predecessors. Records go round robin over --partitions, and a flush every --batch records
// makes each flush a batch.
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class KafkaClient {
    private final String bootstrap;
    private Admin admin;
    private int line;

    private KafkaClient(String bootstrap) {
        this.bootstrap = bootstrap;
    }

    public static void main(String[] argv) throws Exception {
        if (argv.length < 2 || !argv[0].equals("--bootstrap")) {
            System.err.println("usage: KafkaClient --bootstrap HOST:PORT [COMMAND ARGS...]");
            System.exit(2);
        }
        KafkaClient client = new KafkaClient(argv[1]);
        boolean keepGoing = argv.length == 3 && argv[2].equals("--keep-going");
        List<List<String>> commands = new ArrayList<>();
        if (argv.length > 2 && !keepGoing) {
            commands.add(Arrays.asList(argv).subList(2, argv.length));
        } else {
            String text = new String(System.in.readAllBytes(), StandardCharsets.UTF_8);
            for (String row : text.split("\n")) {
                String trimmed = row.trim();
                if (!trimmed.isEmpty() && !trimmed.startsWith("#")) {
                    commands.add(Arrays.asList(trimmed.split("\\s+")));
                }
            }
        }
        try {
            for (List<String> command : commands) {
                client.line++;
                try {
                    client.run(command.get(0), new Args(command.subList(1, command.size())));
                } catch (Exception e) {
                    if (!keepGoing) throw e;
                    Throwable cause = e.getCause() != null ? e.getCause() : e;
                    client.emit("failed", "\"command\":" + json(String.join(" ", command))
                                + ",\"error\":"
                                + json(cause.getClass().getName() + ": " + cause.getMessage()));
                }
                System.out.flush();
            }
        } finally {
            if (client.admin != null) client.admin.close();
        }
    }

    private void run(String op, Args a) throws Exception {
        switch (op) {
            case "describe-cluster": describeCluster(); break;
            case "create-topic": createTopic(a); break;
            case "produce": produce(a); break;
            case "interleave": interleave(a); break;
            case "list-offsets": listOffsets(a); break;
            case "consume-group": consumeGroup(a); break;
            case "fill": fill(a); break;
            case "alter-configs": alterConfigs(a); break;
            case "create-partitions": createPartitions(a); break;
            case "delete-topic": deleteTopic(a); break;
            case "scram-user": scramUser(a); break;
            case "share-consume": shareConsume(a); break;
            case "describe-all": describeAll(); break;
            default: throw new IllegalArgumentException("unknown command " + op);
        }
    }

    // ---- arguments: positional words and repeatable --name value pairs ----
    static final class Args {
        final List<String> words = new ArrayList<>();
        final Map<String, List<String>> named = new HashMap<>();

        Args(List<String> tokens) {
            for (int i = 0; i < tokens.size(); i++) {
                String t = tokens.get(i);
                if (t.startsWith("--")) {
                    if (i + 1 >= tokens.size()) {
                        throw new IllegalArgumentException(t + " needs a value");
                    }
                    named.computeIfAbsent(t.substring(2), k -> new ArrayList<>())
                         .add(tokens.get(++i));
                } else {
                    words.add(t);
                }
            }
        }

        String get(String name, String otherwise) {
            List<String> v = named.get(name);
            return v == null ? otherwise : v.get(v.size() - 1);
        }

        int integer(String name, int otherwise) {
            return Integer.parseInt(get(name, Integer.toString(otherwise)));
        }

        long number(String name, long otherwise) {
            return Long.parseLong(get(name, Long.toString(otherwise)));
        }

        List<String> all(String name) {
            return named.getOrDefault(name, List.of());
        }

        String topic() {
            if (words.isEmpty()) throw new IllegalArgumentException("no topic given");
            return words.get(0);
        }
    }

    // ---- JSON: ASCII only (Python splits lines on more than \n), so escape everything else ----
    static String json(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    private void emit(String op, String fields) {
        System.out.println("{\"line\":" + line + ",\"op\":" + json(op)
                           + (fields.isEmpty() ? "" : "," + fields) + "}");
    }

    private Properties common() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "20000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "60000");
        return p;
    }

    private Admin admin() {
        if (admin == null) admin = Admin.create(common());
        return admin;
    }

    private KafkaProducer<byte[], byte[]> producer(String codec, String transactionalId) {
        Properties p = common();
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
        p.put(ProducerConfig.LINGER_MS_CONFIG, "1000");   // flush() decides where batches end
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        if (transactionalId != null) p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        return new KafkaProducer<>(p);
    }

    // ---- the records ----
    static ProducerRecord<byte[], byte[]> record(String topic, int partition, int i, String prefix,
                                                 String codec, long baseTs, long step,
                                                 int lateEvery, int valueBytes) {
        return record(topic, partition, i, prefix, codec, baseTs, step, lateEvery, valueBytes, 0);
    }

    static ProducerRecord<byte[], byte[]> record(String topic, int partition, int i, String prefix,
                                                 String codec, long baseTs, long step,
                                                 int lateEvery, int valueBytes, int keys) {
        byte[] key = keys > 0 ? utf8(prefix + "-key-" + i % keys)
            : i % 5 == 4 ? null : utf8(prefix + "-key-" + i);
        byte[] value;
        if (i % 13 == 12) {
            value = null;
        } else if (i % 17 == 16) {   // not UTF-8: an encoded surrogate, 0xFF and a NUL
            byte[] head = utf8(prefix + "-value-" + i + "-");
            value = Arrays.copyOf(head, head.length + 5);
            System.arraycopy(new byte[] {(byte) 0xED, (byte) 0xA0, (byte) 0x80, (byte) 0xFF, 0}, 0,
                             value, head.length, 5);
        } else {
            StringBuilder v = new StringBuilder(prefix + "-value-" + i + "-");
            for (int j = 0; j < valueBytes; j++) {
                v.append("0123456789abcdef".charAt((i * 31 + j * 7 + j * j) % 16));
            }
            value = utf8(v.toString());
        }
        RecordHeaders headers = new RecordHeaders();
        if (i % 3 != 0) {
            headers.add("idx", utf8(Integer.toString(i)));
            headers.add("codec", utf8(codec));
            headers.add("nullh", null);
            if (i % 6 == 1) headers.add("idx", utf8("again"));
        }
        long ts = baseTs + i * step;
        if (lateEvery > 0 && i % lateEvery == lateEvery - 1) ts = baseTs + (i - 3) * step - 1;
        return new ProducerRecord<>(topic, partition, ts, key, value, headers);
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String offsetsJson(List<Future<RecordMetadata>> sent) throws Exception {
        Map<Integer, long[]> ranges = new LinkedHashMap<>();   // partition -> first, last
        for (Future<RecordMetadata> f : sent) {
            RecordMetadata m = f.get();
            long[] r = ranges.computeIfAbsent(m.partition(),
                                              k -> new long[] {m.offset(), m.offset()});
            r[0] = Math.min(r[0], m.offset());
            r[1] = Math.max(r[1], m.offset());
        }
        StringBuilder b = new StringBuilder("[");
        for (Map.Entry<Integer, long[]> e : ranges.entrySet()) {
            if (b.length() > 1) b.append(',');
            b.append('[').append(e.getKey()).append(',').append(e.getValue()[0]).append(',')
             .append(e.getValue()[1]).append(']');
        }
        return b.append(']').toString();
    }

    // ---- commands ----
    private void describeCluster() throws Exception {
        DescribeClusterResult r = admin().describeCluster();
        StringBuilder nodes = new StringBuilder("[");
        for (Node n : r.nodes().get()) {
            if (nodes.length() > 1) nodes.append(',');
            nodes.append(n.id());
        }
        emit("describe-cluster", "\"clusterId\":" + json(r.clusterId().get())
             + ",\"nodes\":" + nodes + "]");
    }

    private void createTopic(Args a) throws Exception {
        String topic = a.topic();
        int partitions = a.integer("partitions", 1);
        Map<String, String> configs = new HashMap<>();
        for (String kv : a.all("config")) {
            int eq = kv.indexOf('=');
            configs.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        NewTopic newTopic = new NewTopic(topic, partitions, (short) 1).configs(configs);
        CreateTopicsResult r = admin().createTopics(List.of(newTopic));
        r.all().get();
        emit("create-topic", "\"topic\":" + json(topic)
             + ",\"topicId\":" + json(r.topicId(topic).get().toString())
             + ",\"partitions\":" + partitions);
    }

    private void produce(Args a) throws Exception {
        String topic = a.topic();
        String codec = a.get("codec", "none");
        String txn = a.get("txn", "none");
        String prefix = a.get("prefix", codec);
        int count = a.integer("count", 10), partitions = a.integer("partitions", 1);
        int batch = a.integer("batch", count), lateEvery = a.integer("late-every", 0);
        int valueBytes = a.integer("value-bytes", 0), keys = a.integer("keys", 0);
        long baseTs = a.number("base-ts", System.currentTimeMillis() - 3_600_000L);
        long step = a.number("ts-step", 1000);
        String txnId = txn.equals("none") ? null
            : "segmentlog-" + topic + "-" + prefix + "-" + line;
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = producer(codec, txnId)) {
            if (txnId != null) {
                producer.initTransactions();
                producer.beginTransaction();
            }
            for (int i = 0; i < count; i++) {
                sent.add(producer.send(
                    record(topic, i % partitions, i, prefix, codec, baseTs, step, lateEvery,
                           valueBytes, keys)));
                if ((i + 1) % batch == 0) producer.flush();
            }
            producer.flush();
            if (txn.equals("commit")) producer.commitTransaction();
            if (txn.equals("abort")) producer.abortTransaction();
        }
        emit("produce", "\"topic\":" + json(topic) + ",\"codec\":" + json(codec)
             + ",\"txn\":" + json(txn)
             + ",\"count\":" + count + ",\"offsets\":" + offsetsJson(sent));
    }

    private void interleave(Args a) throws Exception {
        String topic = a.topic();
        String codec = a.get("codec", "none");
        String prefix = a.get("prefix", "interleaved");
        int count = a.integer("count", 10), partitions = a.integer("partitions", 1);
        long baseTs = a.number("base-ts", System.currentTimeMillis() - 3_600_000L);
        long step = a.number("ts-step", 1000);
        List<Future<RecordMetadata>> committed = new ArrayList<>(), aborted = new ArrayList<>();
        String id = "segmentlog-" + topic;
        try (KafkaProducer<byte[], byte[]> keep = producer(codec, id + "-keep-" + line);
             KafkaProducer<byte[], byte[]> drop = producer(codec, id + "-drop-" + line)) {
            keep.initTransactions();
            drop.initTransactions();
            keep.beginTransaction();
            drop.beginTransaction();
            for (int i = 0; i < count; i++) {
                int p = i % partitions;
                committed.add(keep.send(
                    record(topic, p, i, prefix + "-kept", codec, baseTs, step, 0, 0)));
                keep.flush();
                aborted.add(drop.send(
                    record(topic, p, i, prefix + "-aborted", codec, baseTs, step, 0, 0)));
                drop.flush();
            }
            keep.commitTransaction();
            drop.abortTransaction();
        }
        emit("interleave", "\"topic\":" + json(topic) + ",\"count\":" + count + ",\"committed\":"
             + offsetsJson(committed) + ",\"aborted\":" + offsetsJson(aborted));
    }

    private void listOffsets(Args a) throws Exception {
        String topic = a.topic();
        int partitions = a.integer("partitions", 1);
        ListOffsetsOptions options = new ListOffsetsOptions(
            IsolationLevel.valueOf(a.get("isolation", "read_uncommitted").toUpperCase()));
        Map<String, OffsetSpec> specs = new LinkedHashMap<>();
        specs.put("earliest", OffsetSpec.earliest());
        specs.put("latest", OffsetSpec.latest());
        specs.put("maxTimestamp", OffsetSpec.maxTimestamp());
        for (String ts : a.all("timestamp")) {
            specs.put(ts, OffsetSpec.forTimestamp(Long.parseLong(ts)));
        }
        Map<String, Map<Integer, ListOffsetsResultInfo>> answers = new LinkedHashMap<>();
        for (Map.Entry<String, OffsetSpec> spec : specs.entrySet()) {
            Map<TopicPartition, OffsetSpec> request = new HashMap<>();
            for (int p = 0; p < partitions; p++) {
                request.put(new TopicPartition(topic, p), spec.getValue());
            }
            Map<TopicPartition, ListOffsetsResultInfo> got =
                admin().listOffsets(request, options).all().get();
            Map<Integer, ListOffsetsResultInfo> byPartition = new HashMap<>();
            got.forEach((tp, info) -> byPartition.put(tp.partition(), info));
            answers.put(spec.getKey(), byPartition);
        }
        for (int p = 0; p < partitions; p++) {
            StringBuilder b = new StringBuilder("\"topic\":" + json(topic) + ",\"partition\":" + p);
            StringBuilder byTs = new StringBuilder();
            for (Map.Entry<String, Map<Integer, ListOffsetsResultInfo>> e : answers.entrySet()) {
                ListOffsetsResultInfo info = e.getValue().get(p);
                String answer = "{\"offset\":" + info.offset() + ",\"timestamp\":"
                                + info.timestamp() + "}";
                if (a.all("timestamp").contains(e.getKey())) {
                    byTs.append(byTs.length() == 0 ? "" : ",").append(json(e.getKey()))
                        .append(':').append(answer);
                } else {
                    b.append(',').append(json(e.getKey())).append(':').append(answer);
                }
            }
            emit("list-offsets", b + ",\"timestamps\":{" + byTs + "}");
        }
    }

    private void consumeGroup(Args a) throws Exception {
        String topic = a.topic(), group = a.get("group", "segmentlog-group");
        int partitions = a.integer("partitions", 1);
        Properties p = common();
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, a.get("protocol", "classic"));
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
              ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        Map<TopicPartition, OffsetAndMetadata> commit = new LinkedHashMap<>();
        int records = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            consumer.subscribe(List.of(topic));
            List<TopicPartition> all = new ArrayList<>();
            for (int i = 0; i < partitions; i++) all.add(new TopicPartition(topic, i));
            Map<TopicPartition, Long> ends = consumer.endOffsets(all);
            long deadline = System.currentTimeMillis() + 60_000;
            while (commit.size() < partitions) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("group " + group + " did not reach the end "
                                                    + "of " + topic + ": " + commit);
                }
                records += consumer.poll(java.time.Duration.ofMillis(200)).count();
                for (TopicPartition tp : consumer.assignment()) {
                    long position = consumer.position(tp);
                    if (position >= ends.get(tp)) {
                        commit.put(tp, new OffsetAndMetadata(position, group));
                    }
                }
            }
            if (a.get("txn", "none").equals("commit")) {
                try (KafkaProducer<byte[], byte[]> producer =
                         producer("none", "segmentlog-offsets-" + group)) {
                    producer.initTransactions();
                    producer.beginTransaction();
                    producer.sendOffsetsToTransaction(commit, consumer.groupMetadata());
                    producer.commitTransaction();
                }
            } else {
                consumer.commitSync(commit);
            }
        }
        StringBuilder b = new StringBuilder("[");
        for (Map.Entry<TopicPartition, OffsetAndMetadata> e : commit.entrySet()) {
            b.append(b.length() > 1 ? "," : "").append('[').append(e.getKey().partition())
             .append(',').append(e.getValue().offset()).append(']');
        }
        emit("consume-group", "\"topic\":" + json(topic) + ",\"group\":" + json(group)
             + ",\"protocol\":" + json(a.get("protocol", "classic")) + ",\"records\":" + records
             + ",\"committed\":" + b + "]");
    }

    private void fill(Args a) throws Exception {
        String topic = a.topic();
        int count = a.integer("count", 1000), partitions = a.integer("partitions", 1);
        int keyBytes = a.integer("key-bytes", 16), valueBytes = a.integer("value-bytes", 100);
        long baseTs = a.number("base-ts", System.currentTimeMillis() - 3_600_000L);
        long step = a.number("ts-step", 1);
        Properties p = common();
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, a.get("codec", "none"));
        p.put(ProducerConfig.LINGER_MS_CONFIG, "20");   // full 16 KiB batches, as a busy producer
        p.put(ProducerConfig.ACKS_CONFIG, "1");
        p.put(ProducerConfig.BUFFER_MEMORY_CONFIG, Integer.toString(64 << 20));
        // Values are slices of one pseudo-random block, so they neither repeat nor compress to
        // nothing; keys are the record's number, zero-padded.
        byte[] noise = new byte[1 << 20];
        new java.util.Random(17).nextBytes(noise);
        java.util.concurrent.atomic.AtomicReference<Exception> failed =
            new java.util.concurrent.atomic.AtomicReference<>();
        long started = System.nanoTime();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < count && failed.get() == null; i++) {
                String digits = Long.toString(i);
                byte[] key = new byte[keyBytes];
                Arrays.fill(key, (byte) '0');
                byte[] d = utf8(digits);
                System.arraycopy(d, Math.max(0, d.length - keyBytes), key,
                                 Math.max(0, keyBytes - d.length), Math.min(d.length, keyBytes));
                int from = (int) ((i * 7919L) % (noise.length - valueBytes));
                byte[] value = Arrays.copyOfRange(noise, from, from + valueBytes);
                producer.send(new ProducerRecord<>(topic, i % partitions, baseTs + i * step, key,
                                                   value),
                              (m, e) -> { if (e != null) failed.compareAndSet(null, e); });
            }
            producer.flush();
        }
        if (failed.get() != null) throw failed.get();
        emit("fill", "\"topic\":" + json(topic) + ",\"count\":" + count + ",\"seconds\":"
             + (System.nanoTime() - started) / 1e9);
    }

    // ---- the Admin API's other calls, a share group, and the cluster as Admin describes it ----
    private static ConfigResource resource(String spec) {
        if (spec.equals("broker-default")) {
            return new ConfigResource(ConfigResource.Type.BROKER, "");
        }
        int colon = spec.indexOf(':');
        if (colon < 0) throw new IllegalArgumentException("not a config resource: " + spec);
        String name = spec.substring(colon + 1);
        switch (spec.substring(0, colon)) {
            case "topic": return new ConfigResource(ConfigResource.Type.TOPIC, name);
            case "broker": return new ConfigResource(ConfigResource.Type.BROKER, name);
            case "group": return new ConfigResource(ConfigResource.Type.GROUP, name);
            default: throw new IllegalArgumentException("not a config resource: " + spec);
        }
    }

    private void alterConfigs(Args a) throws Exception {
        String spec = a.topic();
        List<AlterConfigOp> ops = new ArrayList<>();
        for (String kv : a.all("set")) {
            int eq = kv.indexOf('=');
            ops.add(new AlterConfigOp(new ConfigEntry(kv.substring(0, eq), kv.substring(eq + 1)),
                                      AlterConfigOp.OpType.SET));
        }
        for (String name : a.all("delete")) {
            ops.add(new AlterConfigOp(new ConfigEntry(name, null), AlterConfigOp.OpType.DELETE));
        }
        admin().incrementalAlterConfigs(Map.of(resource(spec), ops)).all().get();
        emit("alter-configs", "\"resource\":" + json(spec) + ",\"set\":" + a.all("set").size()
             + ",\"deleted\":" + a.all("delete").size());
    }

    private void createPartitions(Args a) throws Exception {
        String topic = a.topic();
        int total = a.integer("total", 2);
        admin().createPartitions(Map.of(topic, NewPartitions.increaseTo(total))).all().get();
        emit("create-partitions", "\"topic\":" + json(topic) + ",\"partitions\":" + total);
    }

    private void deleteTopic(Args a) throws Exception {
        String topic = a.topic();
        String id = admin().describeTopics(List.of(topic)).allTopicNames().get().get(topic)
            .topicId().toString();
        admin().deleteTopics(List.of(topic)).all().get();
        emit("delete-topic", "\"topic\":" + json(topic) + ",\"topicId\":" + json(id));
    }

    private void scramUser(Args a) throws Exception {
        String user = a.topic();
        ScramMechanism mechanism = ScramMechanism.fromMechanismName(
            a.get("mechanism", "SCRAM-SHA-256"));
        int iterations = a.integer("iterations", 4096);
        admin().alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(
            user, new ScramCredentialInfo(mechanism, iterations), a.get("password", ""))))
            .all().get();
        emit("scram-user", "\"user\":" + json(user) + ",\"mechanism\":"
             + json(mechanism.mechanismName()) + ",\"iterations\":" + iterations);
    }

    private void shareConsume(Args a) throws Exception {
        String topic = a.topic(), group = a.get("group", "segmentlog-share");
        int count = a.integer("count", 10), rejectEvery = a.integer("reject-every", 0);
        Properties p = common();
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
              ByteArrayDeserializer.class.getName());
        int records = 0, rejected = 0;
        try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(p)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60_000;
            while (records < count) {
                if (System.currentTimeMillis() > deadline) {
                    throw new IllegalStateException("share group " + group + " read " + records
                                                    + " of " + count + " records of " + topic);
                }
                for (ConsumerRecord<byte[], byte[]> r
                         : consumer.poll(java.time.Duration.ofMillis(200))) {
                    records++;
                    boolean reject = rejectEvery > 0 && records % rejectEvery == 0;
                    if (reject) rejected++;
                    consumer.acknowledge(r, reject ? AcknowledgeType.REJECT
                                                   : AcknowledgeType.ACCEPT);
                }
                consumer.commitSync();
            }
        }
        emit("share-consume", "\"topic\":" + json(topic) + ",\"group\":" + json(group)
             + ",\"records\":" + records + ",\"rejected\":" + rejected);
    }

    private static String configsJson(Config config, boolean dynamicOnly) {
        StringBuilder b = new StringBuilder("{");
        List<ConfigEntry> entries = new ArrayList<>(config.entries());
        entries.sort((x, y) -> x.name().compareTo(y.name()));
        for (ConfigEntry e : entries) {
            if (dynamicOnly && !e.source().name().startsWith("DYNAMIC_")) continue;
            if (b.length() > 1) b.append(',');
            b.append(json(e.name())).append(":{\"value\":").append(json(e.value()))
             .append(",\"source\":").append(json(e.source().name()))
             .append(",\"sensitive\":").append(e.isSensitive())
             .append(",\"readOnly\":").append(e.isReadOnly()).append('}');
        }
        return b.append('}').toString();
    }

    private static String ints(List<Node> nodes) {
        StringBuilder b = new StringBuilder("[");
        for (Node n : nodes) b.append(b.length() > 1 ? "," : "").append(n.id());
        return b.append(']').toString();
    }

    private void describeAll() throws Exception {
        Admin admin = admin();
        List<String> names = new ArrayList<>(
            admin.listTopics(new ListTopicsOptions().listInternal(true)).names().get());
        names.sort(null);
        Map<String, TopicDescription> topics =
            admin.describeTopics(names).allTopicNames().get();
        List<ConfigResource> resources = new ArrayList<>();
        for (String name : names) {
            resources.add(new ConfigResource(ConfigResource.Type.TOPIC, name));
        }
        List<String> brokers = new ArrayList<>();
        for (Node n : admin.describeCluster().nodes().get()) brokers.add(Integer.toString(n.id()));
        resources.add(new ConfigResource(ConfigResource.Type.BROKER, ""));
        for (String id : brokers) resources.add(new ConfigResource(ConfigResource.Type.BROKER, id));
        Map<ConfigResource, Config> configs = admin.describeConfigs(resources).all().get();
        StringBuilder t = new StringBuilder("{");
        for (String name : names) {
            TopicDescription d = topics.get(name);
            StringBuilder parts = new StringBuilder("[");
            for (TopicPartitionInfo info : d.partitions()) {
                parts.append(parts.length() > 1 ? "," : "").append("{\"partition\":")
                     .append(info.partition()).append(",\"leader\":")
                     .append(info.leader() == null ? -1 : info.leader().id())
                     .append(",\"replicas\":").append(ints(info.replicas()))
                     .append(",\"isr\":").append(ints(info.isr())).append('}');
            }
            t.append(t.length() > 1 ? "," : "").append(json(name)).append(":{\"topicId\":")
             .append(json(d.topicId().toString())).append(",\"internal\":")
             .append(d.isInternal()).append(",\"partitions\":").append(parts)
             .append("],\"configs\":").append(configsJson(configs.get(
                 new ConfigResource(ConfigResource.Type.TOPIC, name)), false)).append('}');
        }
        StringBuilder perBroker = new StringBuilder("{");
        for (String id : brokers) {
            perBroker.append(perBroker.length() > 1 ? "," : "").append(json(id)).append(':')
                     .append(configsJson(configs.get(
                         new ConfigResource(ConfigResource.Type.BROKER, id)), true));
        }
        StringBuilder users = new StringBuilder("{");
        Map<String, UserScramCredentialsDescription> scram =
            admin.describeUserScramCredentials().all().get();
        List<String> userNames = new ArrayList<>(scram.keySet());
        userNames.sort(null);
        for (String user : userNames) {
            StringBuilder infos = new StringBuilder("[");
            for (ScramCredentialInfo info : scram.get(user).credentialInfos()) {
                infos.append(infos.length() > 1 ? "," : "").append("{\"mechanism\":")
                     .append(json(info.mechanism().mechanismName())).append(",\"iterations\":")
                     .append(info.iterations()).append('}');
            }
            users.append(users.length() > 1 ? "," : "").append(json(user)).append(':')
                 .append(infos).append(']');
        }
        emit("describe-all", "\"clusterId\":" + json(admin.describeCluster().clusterId().get())
             + ",\"topics\":" + t + "},\"brokerDefault\":"
             + configsJson(configs.get(new ConfigResource(ConfigResource.Type.BROKER, "")), true)
             + ",\"brokers\":" + perBroker + "},\"scramUsers\":" + users + "}");
    }
}
