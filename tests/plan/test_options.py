import pytest

from segmentlog_source.errors import BadOptionError
from segmentlog_source.plan.options import EARLIEST, LATEST, parse_read_options


def parse(**kw):
    return parse_read_options({"path": "/data/logs", **kw})


def test_defaults_read_everything():
    o = parse()
    assert o.paths == ("/data/logs",)
    assert o.starting.default == EARLIEST and o.ending.default == LATEST
    assert not o.starting.by_timestamp() and o.fail_on_data_loss
    assert o.isolation_level == "read_uncommitted" and o.include_payload and not o.pushdown


def test_option_names_are_case_insensitive_and_paths_json():
    o = parse_read_options({"paths": '["/a","/b"]', "FAILONDATALOSS": "false"})
    assert o.paths == ("/a", "/b") and not o.fail_on_data_loss


def test_json_offsets_and_precedence_of_timestamps():
    o = parse(startingOffsets='{"t":{"0":5,"1":-2}}', endingOffsets='{"t":{"0":-1}}')
    assert o.starting.offsets == {"t": {0: 5, 1: EARLIEST}}
    assert o.ending.offsets == {"t": {0: LATEST}}
    o = parse(startingOffsets="earliest", startingTimestamp="1700000000000",
              startingOffsetsByTimestamp='{"t":{"0":1}}')
    assert o.starting.global_timestamp == 1700000000000  # startingTimestamp wins, as in Spark


@pytest.mark.parametrize("text,ms", [
    ("2018-08-15T03:00:00Z", 1534302000000),
    ("2018-08-15T03:00:00z", 1534302000000),
    ("2018-08-15T05:00:00+02:00", 1534302000000),
    ("2018-08-14T23:00:00.250-04:00", 1534302000250),
    ("  2018-08-15 03:00:00+00:00 ", 1534302000000),
    ("2018-08-15t03:00:00Z", 1534302000000),
    ("2018-08-15T03:00Z", 1534302000000),
    ("2018-08-15T03:00:00.5Z", 1534302000500),
    ("2018-08-15T03:00:00.12Z", 1534302000120),
    ("2018-08-15T03:00:00.123000Z", 1534302000123),    # zeros past the millisecond
    ("2018-08-15T05:00:00+0200", 1534302000000),
    ("2018-08-14T23:30:00-0330", 1534302000000),
    ("1970-01-01T00:00:00Z", 0),
    ("1534302000000", 1534302000000),
])
def test_timestamps_are_milliseconds_or_iso_8601_with_a_zone(text, ms):
    o = parse(startingTimestamp=text, endingOffsetsByTimestamp=f'{{"t":{{"0":"{text}"}}}}')
    assert o.starting.global_timestamp == ms
    assert o.ending.timestamps == {"t": {0: ms}}


@pytest.mark.parametrize("name,value,says", [
    ("startingTimestamp", "2018-08-15T03:00:00", "option startingTimestamp='2018-08-15T03:00:00'"
     ": an ISO-8601 time needs a zone (Z for UTC, or +HH:MM)"),
    ("endingTimestamp", "2018-08-15", "option endingTimestamp='2018-08-15': an ISO-8601 time "
     "needs a zone"),
    ("endingOffsetsByTimestamp", '{"t":{"0":"2018-08-15T03:00:00"}}',
     "t-0: '2018-08-15T03:00:00': an ISO-8601 time needs a zone"),
    ("endingOffsetsByTimestamp", '{"t":{"0":"-1"}}', "t-0: '-1': a timestamp cannot be negative"),
    ("startingOffsetsByTimestamp", '{"t":{"0":"1","3":"x"}}', "t-3: 'x': expected milliseconds"),
    ("startingTimestamp", "2018-08-15T03:00:00.1230009Z", "Kafka timestamps are milliseconds"),
    ("startingTimestamp", "20180815T030000Z", "the ISO-8601 basic format (no - or :) is not "
     "read"),
    ("startingTimestamp", "2018-08-15T03:00:00+00:00:00.5", "expected milliseconds since the "
     "epoch or an ISO-8601 time with a zone"),
    ("startingTimestamp", "2016-12-31T23:59:60Z", "a leap second (:60) has no timestamp"),
    ("startingTimestamp", "1969-12-31T23:59:59.999Z", "a timestamp cannot be negative"),
    ("startingTimestamp", "2018-02-30T00:00:00Z", "not a time: day is out of range"),
    ("startingTimestamp", "2018-08-15T03:00:00+24:00", "the zone +24:00 is not an offset"),
    ("startingTimestamp", "2018-08-15T03:00:00,5Z", "expected milliseconds since the epoch"),
    ("startingTimestamp", "\u0662018-08-15T03:00:00Z", "expected milliseconds since the epoch"),
    ("startingTimestamp", "2018-08-15T03:00:00.000100Z", "Kafka timestamps are milliseconds"),
    ("startingTimestamp", "1969-12-31T23:59:59Z", "a timestamp cannot be negative"),
    ("startingTimestamp", "last tuesday", "expected milliseconds since the epoch or an "
     "ISO-8601 time with a zone, e.g. 2018-08-15T03:00:00Z"),
])
def test_a_time_without_a_zone_is_an_error_naming_the_option(name, value, says):
    with pytest.raises(BadOptionError) as err:
        parse(**{name: value})
    message = str(err.value)
    assert message.startswith(f"option {name}="), message
    assert says in message, message


@pytest.mark.parametrize("name,value", [
    ("startingOffsets", "latest"),
    ("endingOffsets", "earliest"),
    ("startingOffsets", '{"t":{"0":-1}}'),
    ("endingOffsets", '{"t":{"0":-2}}'),
    ("startingOffsets", '{"t":{"x":1}}'),
    ("startingOffsets", "{not json"),
    ("startingTimestamp", "yesterday"),
    ("failOnDataLoss", "maybe"),
    ("minPartitions", "0"),
    ("minPartitions", str(10**7)),               # every group is a Spark task: bounded
    ("maxBytesPerPartition", "1024"),            # (a plan of a group per batch is no plan)
    ("maxBytesPerPartition", str(2**63)),
    ("fs.retries", "1000000"),
    ("fs.retryBackoffMs", str(10**9)),
    ("fs.readAheadBytes", str(2**40)),
    ("fs.parallelism", "100000"),
    ("isolationLevel", "serializable"),
    ("assign", '{"t": 0}'),
    ("subscribePattern", "(unclosed"),
])
def test_bad_values_name_the_option(name, value):
    with pytest.raises(BadOptionError) as err:
        parse(**{name: value})
    assert name.lower() in str(err.value).lower()


def test_only_one_topic_selector():
    with pytest.raises(BadOptionError, match="only one of"):
        parse(subscribe="a", assign='{"a":[0]}')
    # given counts, empty or not (KafkaSourceProvider.scala:230-241)
    with pytest.raises(BadOptionError, match="only one of"):
        parse(subscribe="a", subscribePattern="")


@pytest.mark.parametrize("name, value", [("subscribe", ""), ("subscribe", " , "),
                                         ("subscribePattern", ""), ("subscribePattern", "  "),
                                         ("assign", ""), ("assign", "orders-0")])
def test_an_empty_selector_is_an_error_never_every_topic(name, value):
    # KafkaSourceProvider.scala:244-264
    with pytest.raises(BadOptionError) as err:
        parse(**{name: value})
    assert err.value.name == name


def test_max_records_per_partition_and_selection_described():
    assert parse(maxRecordsPerPartition="500").max_records_per_partition == 500
    with pytest.raises(BadOptionError, match="maxRecordsPerPartition"):
        parse(maxRecordsPerPartition="0")        # KafkaSourceProvider.scala:277-283
    assert "every topic" in parse().describe_selection()
    assert parse(subscribe="a,b").describe_selection() == "subscribe=a,b"


def test_topic_selection():
    assert parse(subscribe="a,b").selects_topic("b")
    assert not parse(subscribe="a,b").selects_topic("c")
    assert parse(subscribePattern="ord.*").selects_topic("orders")
    # Spark's default topic listing finds the pattern anywhere in a name (Regex.findFirstIn,
    # ConsumerStrategy.scala:138-140) and never lists internal topics
    found = parse(subscribePattern="ord")
    assert found.selects_topic("orders") and found.selects_topic("eu-orders")
    assert not parse(subscribePattern="^ord$").selects_topic("orders")
    assert not parse(subscribePattern=".*").selects_topic("__consumer_offsets")
    assert parse().selects_topic("__consumer_offsets")       # no selector: every topic
    o = parse(assign='{"a":[1]}')
    assert o.selects_partition("a", 1) and not o.selects_partition("a", 0)


def test_missing_path():
    with pytest.raises(BadOptionError, match="no path"):
        parse_read_options({})


@pytest.mark.parametrize("extra,words", [
    ({"valueFormat": "string"}, "no key or value column"),
    ({"includeHeaders": "true"}, "no headers column"),
    ({"view": "rows"}, "expected one of records, batches, segments"),
])
def test_view_refuses_what_its_rows_do_not_have(extra, words):
    with pytest.raises(BadOptionError) as err:
        parse_read_options({"path": "/x", "view": "batches", **extra})
    assert err.value.name == "view" and words in str(err.value)


def test_a_view_is_a_batch_read_and_plans_by_bytes():
    from segmentlog_source.plan.stream_options import parse_stream_options

    with pytest.raises(BadOptionError, match="streaming query reads records"):
        parse_stream_options({"path": "/x", "view": "segments"})
    opts = parse_read_options({"path": "/x", "view": "segments", "maxRecordsPerPartition": "10"})
    assert opts.view == "segments" and opts.max_records_per_partition is None
    assert parse_read_options({"path": "/x"}).view == "records"


def test_remote_tier_options():
    opts = parse_read_options({"path": "/d", "remoteTier": "s3://b/rsm",
                               "remoteLogMetadata": "/a, /b,", "remoteTierPrivateKey": "k.pem"})
    assert (opts.remote_tier, opts.remote_log_metadata, opts.remote_private_key) == (
        "s3://b/rsm", ("/a", "/b"), "k.pem")
    with pytest.raises(BadOptionError, match="remoteTier"):
        parse_read_options({"path": "/d", "remoteTier": " "})


def test_a_stream_refuses_the_remote_tier():
    from segmentlog_source.plan.stream_options import parse_stream_options

    for name in ("remoteTier", "remoteLogMetadata", "remoteTierPrivateKey"):
        with pytest.raises(BadOptionError, match=f"{name}.*tails a local log"):
            parse_stream_options({"path": "/d", name: "/x"})
