//! Tests of the topic and broker configuration: Kafka's defaults, ranges, synonyms and the
//! `.properties` syntax.

use super::*;

fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(key, value)| ((*key).to_owned(), (*value).to_owned())).collect()
}

/// Asserts that `pairs` are rejected, naming `key` and the value as given.
fn check_rejected(pairs: &[(&str, &str)], key: &str) {
    let error = LogConfig::from_properties(&props(pairs)).unwrap_err();
    assert_eq!(error.key(), Some(key), "{pairs:?}: {error}");
    let message = error.to_string();
    assert!(message.contains(key), "{message}");
    let value = pairs.iter().find(|(k, _)| *k == key).map_or("", |(_, value)| value.trim());
    assert!(message.contains(&format!("{value:?}")), "{message}");
}

fn check_broker_rejected(pairs: &[(&str, &str)], key: &str) {
    let error = BrokerLogConfig::from_properties(&props(pairs)).unwrap_err();
    assert_eq!(error.key(), Some(key), "{pairs:?}: {error}");
    assert!(error.to_string().contains(key));
}

#[test]
fn defaults_equal_kafkas() {
    let config = LogConfig::default();
    assert_eq!(config.segment_bytes, 1_073_741_824);
    assert_eq!(config.segment_ms, 604_800_000);
    assert_eq!(config.segment_jitter_ms, 0);
    assert_eq!(config.segment_index_bytes, 10_485_760);
    assert_eq!(config.index_interval_bytes, 4096);
    assert_eq!(config.flush_messages, 9_223_372_036_854_775_807);
    assert_eq!(config.flush_ms, 9_223_372_036_854_775_807);
    assert_eq!(config.retention_ms, 604_800_000);
    assert_eq!(config.retention_bytes, -1);
    assert_eq!(config.max_message_bytes, 1_048_588);
    assert_eq!(config.file_delete_delay_ms, 60_000);
    assert_eq!(config.cleanup_policy, BTreeSet::from([CleanupPolicy::Delete]));
    assert!(config.is_delete() && !config.is_compact());
    assert_eq!(config.delete_retention_ms, 86_400_000);
    assert_eq!(config.min_compaction_lag_ms, 0);
    assert_eq!(config.max_compaction_lag_ms, i64::MAX);
    assert!((config.min_cleanable_dirty_ratio - 0.5).abs() < f64::EPSILON);
    assert_eq!(config.compression_type, BrokerCompressionType::Producer);
    assert_eq!(config.compression_type.target(), None);
    assert_eq!(
        (config.compression_gzip_level, config.compression_lz4_level),
        (-1, 9),
        "gzip and lz4 levels"
    );
    assert_eq!(config.compression_zstd_level, 3);
    assert!(!config.preallocate);
    assert_eq!(config.message_timestamp_type, TimestampType::CreateTime);
    assert_eq!(config.message_timestamp_before_max_ms, i64::MAX);
    assert_eq!(config.message_timestamp_after_max_ms, i64::MAX);
    assert_eq!(config.message_timestamp_difference_max_ms, i64::MAX);
    assert_eq!(config.durability, DurabilityMode::PageCache);
    assert_eq!(config.group_commit_interval_ms, 5);

    // An empty map and an empty server.properties give the same defaults.
    assert_eq!(LogConfig::from_properties(&BTreeMap::new()).unwrap(), config);
    let broker = BrokerLogConfig::from_server_properties("").unwrap();
    assert_eq!(broker, BrokerLogConfig::default());
    assert_eq!(broker.default_log_config, config);
    assert_eq!(broker.log_dirs, vec![PathBuf::from("./seglog-data")]);
    assert_eq!(broker.n_partitions, 1);
    assert_eq!(broker.n_recovery_threads_per_data_dir, 1);
    assert_eq!(broker.retention_check_interval_ms, 300_000);
    assert_eq!(broker.flush_scheduler_interval_ms, i64::MAX);
    assert_eq!(broker.flush_offset_checkpoint_interval_ms, 60_000);
    assert_eq!(broker.flush_start_offset_checkpoint_interval_ms, 60_000);
    assert_eq!(broker.high_watermark_checkpoint_interval_ms, 5_000);
}

#[test]
fn topic_keys_parse_typed_values() {
    let config = LogConfig::from_properties(&props(&[
        ("segment.bytes", " 1048576 "),
        ("segment.ms", "3600000"),
        ("segment.jitter.ms", "1000"),
        ("segment.index.bytes", "4096"),
        ("index.interval.bytes", "0"),
        ("flush.messages", "1"),
        ("flush.ms", "0"),
        ("retention.ms", "-1"),
        ("retention.bytes", "-5"),
        ("max.message.bytes", "0"),
        ("file.delete.delay.ms", "0"),
        ("cleanup.policy", "delete, compact"),
        ("compression.type", "zstd"),
        ("compression.zstd.level", "-131072"),
        ("preallocate", "TRUE"),
        ("message.timestamp.type", "LogAppendTime"),
        ("message.timestamp.before.max.ms", "10"),
        ("message.timestamp.after.max.ms", "20"),
        ("seglog.durability", "group-commit"),
        ("seglog.group.commit.interval.ms", "2"),
        ("unclean.leader.election.enable", "true"),
    ]))
    .unwrap();
    assert_eq!(config.segment_bytes, 1_048_576);
    assert_eq!(config.segment_ms, 3_600_000);
    assert_eq!(config.segment_jitter_ms, 1000);
    assert_eq!(config.segment_index_bytes, 4096);
    assert_eq!(config.index_interval_bytes, 0);
    assert_eq!((config.flush_messages, config.flush_ms), (1, 0));
    assert_eq!((config.retention_ms, config.retention_bytes), (-1, -5));
    assert_eq!(config.max_message_bytes, 0);
    assert_eq!(config.file_delete_delay_ms, 0);
    assert!(config.is_compact() && config.is_delete());
    assert_eq!(config.compression_type.target(), Some(Compression::Zstd));
    assert_eq!(config.compression_zstd_level, -131_072);
    assert!(config.preallocate);
    assert_eq!(config.init_file_bytes(), 1_048_576);
    assert_eq!(config.message_timestamp_type, TimestampType::LogAppendTime);
    assert_eq!(config.message_timestamp_before_max_ms, 10);
    assert_eq!(config.message_timestamp_after_max_ms, 20);
    assert_eq!(config.durability, DurabilityMode::GroupCommit);
    assert_eq!(config.group_commit_interval_ms, 2);

    let config = LogConfig::from_properties(&props(&[("cleanup.policy", "")])).unwrap();
    assert!(config.cleanup_policy.is_empty());
    let config = LogConfig::from_properties(&props(&[("cleanup.policy", "compact")])).unwrap();
    assert!(config.is_compact() && !config.is_delete());
    for mode in DurabilityMode::ALL {
        let config =
            LogConfig::from_properties(&props(&[("seglog.durability", mode.name())])).unwrap();
        assert_eq!(config.durability, mode);
        assert_eq!(mode.to_string(), mode.name());
    }
}

#[test]
fn deprecated_timestamp_difference_is_the_fallback_of_both_bounds() {
    let config =
        LogConfig::from_properties(&props(&[("message.timestamp.difference.max.ms", "500")]))
            .unwrap();
    assert_eq!(config.message_timestamp_before_max_ms, 500);
    assert_eq!(config.message_timestamp_after_max_ms, 500);
    assert_eq!(config.message_timestamp_difference_max_ms, 500);

    let config = LogConfig::from_properties(&props(&[
        ("message.timestamp.difference.max.ms", "500"),
        ("message.timestamp.before.max.ms", "100"),
    ]))
    .unwrap();
    assert_eq!(config.message_timestamp_before_max_ms, 100);
    assert_eq!(config.message_timestamp_after_max_ms, 500);

    // The broker's deprecated key falls back the same way.
    let broker = BrokerLogConfig::from_properties(&props(&[
        ("log.message.timestamp.difference.max.ms", "700"),
        ("log.message.timestamp.after.max.ms", "50"),
    ]))
    .unwrap();
    assert_eq!(broker.default_log_config.message_timestamp_before_max_ms, 700);
    assert_eq!(broker.default_log_config.message_timestamp_after_max_ms, 50);
}

#[test]
fn invalid_topic_values_are_rejected_naming_the_key() {
    let cases: &[(&str, &str)] = &[
        ("segment.bytes", "13"),
        ("segment.bytes", "2147483648"),
        ("segment.bytes", "1g"),
        ("segment.ms", "0"),
        ("segment.jitter.ms", "-1"),
        ("segment.index.bytes", "3"),
        ("index.interval.bytes", "-1"),
        ("flush.messages", "0"),
        ("flush.ms", "-1"),
        ("retention.ms", "-2"),
        ("retention.bytes", "lots"),
        ("max.message.bytes", "-1"),
        ("file.delete.delay.ms", "-1"),
        ("cleanup.policy", "delete,archive"),
        ("cleanup.policy", "delete,"),
        ("cleanup.policy", "Delete"),
        ("delete.retention.ms", "-1"),
        ("max.compaction.lag.ms", "0"),
        ("min.cleanable.dirty.ratio", "1.5"),
        ("min.cleanable.dirty.ratio", "NaN"),
        ("compression.type", "brotli"),
        ("compression.type", "GZIP"),
        ("compression.gzip.level", "0"),
        ("compression.gzip.level", "10"),
        ("compression.lz4.level", "18"),
        ("compression.zstd.level", "23"),
        ("preallocate", "yes"),
        ("message.timestamp.type", "createtime"),
        ("message.timestamp.type", "NoTimestampType"),
        ("message.timestamp.before.max.ms", "-1"),
        ("message.timestamp.after.max.ms", "-1"),
        ("message.timestamp.difference.max.ms", "-1"),
        ("seglog.durability", "fsync"),
        ("seglog.group.commit.interval.ms", "0"),
    ];
    for &(key, value) in cases {
        check_rejected(&[(key, value)], key);
    }
    let error = LogConfig::from_properties(&props(&[("segment.bytes", "13")])).unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid value \"13\" for configuration segment.bytes: value must be at least 14"
    );
    let error = LogConfig::from_properties(&props(&[
        ("min.compaction.lag.ms", "10"),
        ("max.compaction.lag.ms", "5"),
    ]))
    .unwrap_err();
    assert_eq!(error.key(), Some("min.compaction.lag.ms"));
}

#[test]
fn overrides_apply_over_the_broker_defaults() {
    let broker = BrokerLogConfig::from_properties(&props(&[
        ("log.segment.bytes", "2097152"),
        ("log.retention.hours", "1"),
        ("compression.type", "lz4"),
    ]))
    .unwrap();
    let defaults = &broker.default_log_config;
    let topic = defaults
        .with_overrides(&props(&[("retention.ms", "1000"), ("cleanup.policy", "compact")]))
        .unwrap();
    assert_eq!(topic.segment_bytes, 2_097_152, "from the broker");
    assert_eq!(topic.compression_type, BrokerCompressionType::Lz4, "from the broker");
    assert_eq!(topic.retention_ms, 1000, "overridden");
    assert!(topic.is_compact() && !topic.is_delete(), "overridden");
    assert_eq!(defaults.with_overrides(&BTreeMap::new()).unwrap(), *defaults);
    let error = defaults.with_overrides(&props(&[("segment.ms", "0")])).unwrap_err();
    assert_eq!(error.key(), Some("segment.ms"));
}

#[test]
fn to_properties_round_trips() {
    let configs = [
        LogConfig::default(),
        LogConfig::from_properties(&props(&[
            ("segment.bytes", "14"),
            ("cleanup.policy", "compact,delete"),
            ("min.cleanable.dirty.ratio", "1"),
            ("compression.type", "gzip"),
            ("compression.gzip.level", "9"),
            ("preallocate", "true"),
            ("message.timestamp.difference.max.ms", "42"),
            ("seglog.durability", "fsync-every-append"),
        ]))
        .unwrap(),
        LogConfig::from_properties(&props(&[("cleanup.policy", "")])).unwrap(),
    ];
    for config in configs {
        let properties = config.to_properties();
        assert_eq!(properties.len(), 31);
        assert_eq!(LogConfig::from_properties(&properties).unwrap(), config);
        let text = write_properties(&properties);
        assert_eq!(parse_properties(&text).unwrap(), properties);
    }
    let properties = LogConfig::default().to_properties();
    assert_eq!(properties["segment.bytes"], "1073741824");
    assert_eq!(properties["cleanup.policy"], "delete");
    assert_eq!(properties["min.cleanable.dirty.ratio"], "0.5");
    assert_eq!(properties["message.timestamp.type"], "CreateTime");
    assert_eq!(properties["compression.type"], "producer");
    assert_eq!(properties["seglog.durability"], "page-cache");
}

#[test]
fn broker_retention_precedence_is_ms_then_minutes_then_hours() {
    let retention = |pairs: &[(&str, &str)]| {
        BrokerLogConfig::from_properties(&props(pairs)).unwrap().default_log_config.retention_ms
    };
    assert_eq!(retention(&[]), 168 * 3_600_000);
    assert_eq!(retention(&[("log.retention.hours", "2")]), 2 * 3_600_000);
    assert_eq!(
        retention(&[("log.retention.hours", "2"), ("log.retention.minutes", "3")]),
        3 * 60_000
    );
    assert_eq!(
        retention(&[
            ("log.retention.hours", "2"),
            ("log.retention.minutes", "3"),
            ("log.retention.ms", "4"),
        ]),
        4
    );
    assert_eq!(retention(&[("log.retention.ms", "4"), ("log.retention.hours", "2")]), 4);
}

#[test]
fn negative_broker_retention_means_forever() {
    let retention = |pairs: &[(&str, &str)]| {
        BrokerLogConfig::from_properties(&props(pairs)).unwrap().default_log_config.retention_ms
    };
    assert_eq!(retention(&[("log.retention.ms", "-1")]), -1);
    assert_eq!(retention(&[("log.retention.ms", "-100")]), -1);
    assert_eq!(retention(&[("log.retention.minutes", "-5")]), -1);
    assert_eq!(retention(&[("log.retention.hours", "-1")]), -1);
    assert_eq!(retention(&[("log.retention.ms", "0")]), 0);
    // At topic level the same value is out of range.
    check_rejected(&[("retention.ms", "-100")], "retention.ms");
}

#[test]
fn broker_synonyms_produce_the_default_log_config() {
    let broker = BrokerLogConfig::from_server_properties(
        "# server.properties\n\
         log.dirs=/data/a, /data/b\n\
         log.dir=/ignored\n\
         num.partitions=3\n\
         num.recovery.threads.per.data.dir=4\n\
         log.retention.check.interval.ms=1000\n\
         log.flush.scheduler.interval.ms=2000\n\
         log.flush.offset.checkpoint.interval.ms=3000\n\
         log.flush.start.offset.checkpoint.interval.ms=4000\n\
         replica.high.watermark.checkpoint.interval.ms=6000\n\
         log.segment.bytes=1048576\n\
         log.roll.hours=2\n\
         log.roll.jitter.hours=1\n\
         log.index.size.max.bytes=8192\n\
         log.index.interval.bytes=100\n\
         log.flush.interval.messages=10\n\
         log.retention.bytes=5000\n\
         message.max.bytes=2000\n\
         log.segment.delete.delay.ms=7\n\
         log.cleanup.policy=compact\n\
         log.cleaner.delete.retention.ms=8\n\
         log.cleaner.min.compaction.lag.ms=9\n\
         log.cleaner.max.compaction.lag.ms=10\n\
         log.cleaner.min.cleanable.ratio=0.25\n\
         compression.type=snappy\n\
         log.preallocate=true\n\
         log.message.timestamp.type=LogAppendTime\n\
         seglog.durability=fsync-every-append\n\
         listeners=PLAINTEXT://:9092\n\
         segment.bytes=99\n",
    )
    .unwrap();
    assert_eq!(broker.log_dirs, vec![PathBuf::from("/data/a"), PathBuf::from("/data/b")]);
    assert_eq!(broker.n_partitions, 3);
    assert_eq!(broker.n_recovery_threads_per_data_dir, 4);
    assert_eq!(broker.retention_check_interval_ms, 1000);
    assert_eq!(broker.flush_scheduler_interval_ms, 2000);
    assert_eq!(broker.flush_offset_checkpoint_interval_ms, 3000);
    assert_eq!(broker.flush_start_offset_checkpoint_interval_ms, 4000);
    assert_eq!(broker.high_watermark_checkpoint_interval_ms, 6000);
    let config = &broker.default_log_config;
    assert_eq!(config.segment_bytes, 1_048_576, "log.segment.bytes, not segment.bytes");
    assert_eq!(config.segment_ms, 2 * 3_600_000);
    assert_eq!(config.segment_jitter_ms, 3_600_000);
    assert_eq!(config.segment_index_bytes, 8192);
    assert_eq!(config.index_interval_bytes, 100);
    assert_eq!(config.flush_messages, 10);
    assert_eq!(config.flush_ms, 2000, "falls back to log.flush.scheduler.interval.ms");
    assert_eq!(config.retention_bytes, 5000);
    assert_eq!(config.max_message_bytes, 2000);
    assert_eq!(config.file_delete_delay_ms, 7);
    assert!(config.is_compact() && !config.is_delete());
    assert_eq!(config.delete_retention_ms, 8);
    assert_eq!(config.min_compaction_lag_ms, 9);
    assert_eq!(config.max_compaction_lag_ms, 10);
    assert_eq!(config.max_segment_ms(), 10, "capped by max.compaction.lag.ms");
    assert!((config.min_cleanable_dirty_ratio - 0.25).abs() < f64::EPSILON);
    assert_eq!(config.compression_type, BrokerCompressionType::Snappy);
    assert!(config.preallocate);
    assert_eq!(config.message_timestamp_type, TimestampType::LogAppendTime);
    assert_eq!(config.durability, DurabilityMode::FsyncEveryAppend);

    let broker = BrokerLogConfig::from_properties(&props(&[
        ("log.roll.ms", "5"),
        ("log.roll.hours", "2"),
        ("log.roll.jitter.ms", "3"),
        ("log.flush.interval.ms", "4"),
        ("log.flush.scheduler.interval.ms", "2000"),
        ("log.dir", "/single"),
    ]))
    .unwrap();
    assert_eq!(broker.default_log_config.segment_ms, 5, "log.roll.ms wins");
    assert_eq!(broker.default_log_config.segment_jitter_ms, 3);
    assert_eq!(broker.default_log_config.flush_ms, 4, "log.flush.interval.ms wins");
    assert_eq!(broker.log_dirs, vec![PathBuf::from("/single")]);
}

#[test]
fn invalid_broker_values_are_rejected_naming_the_broker_key() {
    let cases: &[(&str, &str)] = &[
        ("log.segment.bytes", "13"),
        ("log.roll.ms", "0"),
        ("log.roll.hours", "0"),
        ("log.roll.jitter.hours", "-1"),
        ("log.index.size.max.bytes", "3"),
        ("log.flush.interval.messages", "0"),
        ("log.flush.interval.ms", "-1"),
        ("log.flush.scheduler.interval.ms", "-1"),
        ("message.max.bytes", "-1"),
        ("log.cleanup.policy", "archive"),
        ("log.message.timestamp.type", "Now"),
        ("log.retention.ms", "soon"),
        ("log.retention.hours", "99999999999"),
        ("num.partitions", "0"),
        ("num.recovery.threads.per.data.dir", "0"),
        ("log.retention.check.interval.ms", "0"),
        ("log.flush.offset.checkpoint.interval.ms", "-1"),
        ("log.flush.start.offset.checkpoint.interval.ms", "-1"),
        ("log.dirs", "/a,,/b"),
        ("log.dirs", "/a,/a"),
        ("log.dirs", ""),
        ("log.dir", ""),
        ("seglog.durability", "always"),
    ];
    for &(key, value) in cases {
        check_broker_rejected(&[(key, value)], key);
    }
}

#[test]
fn jitter_is_bounded_by_segment_ms() {
    let config =
        LogConfig::from_properties(&props(&[("segment.ms", "100"), ("segment.jitter.ms", "1000")]))
            .unwrap();
    assert_eq!(config.segment_jitter_ms_for(250), 50);
    assert_eq!(config.segment_jitter_ms_for(u64::MAX), (u64::MAX % 100) as i64);
    assert_eq!(LogConfig::default().segment_jitter_ms_for(12_345), 0);
    assert_eq!(LogConfig::default().max_segment_ms(), 604_800_000);
    assert_eq!(LogConfig::default().init_file_bytes(), 0);
}

#[test]
fn properties_text_subset() {
    let text = "# comment\n\
                ! another comment\n\
                \n\
                \t  key.one = value one  \r\n\
                key.two:two\n\
                key.three=a\\=b\\:c\\\\d\\ \n\
                key\\ four=\\u0041\\t\n\
                key.one=later wins\n\
                empty=\n";
    let properties = parse_properties(text).unwrap();
    assert_eq!(
        properties,
        props(&[
            ("key.one", "later wins"),
            ("key.two", "two"),
            ("key.three", "a=b:c\\d "),
            ("key four", "A\t"),
            ("empty", ""),
        ])
    );
    assert_eq!(parse_properties(&write_properties(&properties)).unwrap(), properties);
    let unusual = props(&[("k", " lead#!\n\u{e9}\u{1F600}trail ")]);
    let text = write_properties(&unusual);
    assert!(text.is_ascii(), "{text}");
    assert_eq!(parse_properties(&text).unwrap(), unusual);

    for (text, line) in [
        ("a=1\nnovalue\n", 2),
        ("=1\n", 1),
        ("a=1\\\nb=2\n", 1),
        ("a=\\u00G1\n", 1),
        ("a=\\u12\n", 1),
    ] {
        match parse_properties(text) {
            Err(ConfigError::Syntax { line: found, .. }) => assert_eq!(found, line, "{text:?}"),
            other => panic!("{text:?} gave {other:?}"),
        }
    }
}
