//! Tests of `quota.rs`.

// Ported Kafka tests (names as in Kafka):
// - ClientQuotaManagerTest: testClientIdQuotaParsing, testUserQuotaParsing,
//   testUserClientIdQuotaParsing, testUserQuotaParsingWithDefaultClientIdQuota,
//   testUserClientQuotaParsingIdWithDefaultClientIdQuota,
//   testGetMaxValueInQuotaWindowWithNonDefaultQuotaWindow, testSetAndRemoveDefaultUserQuota,
//   testSetAndRemoveUserQuota, testSetAndRemoveUserClientQuota, testQuotaConfigPrecedence,
//   testQuotaViolation, testExpireThrottleTimeSensor / testExpireQuotaSensors (as expiry of
//   idle entities), testClientIdNotSanitized
// - ClientRequestQuotaManagerTest: testRequestPercentageQuotaViolation
// - QuotaUtilsTest: testThrottleTimeObservedRateEqualsQuota, ...BelowQuota, ...AboveQuota,
//   testBoundedThrottleTimeObservedRateEqualsQuota, ...BelowQuota, ...AboveQuotaBelowLimit,
//   ...AboveQuotaAboveLimit
// - RateTest: testRateWithNoPriorAvailableSamples, testRateIsConsistentAfterTheFirstWindow
// - SampledStatTest: testSampleIsPurgedIfDoesntOverlap, testSampleIsKeptIfOverlaps,
//   testSampleIsKeptIfOverlapsAndExtra
// - ConnectionQuotasTest: testMaxConnectionsPerIp, testNoConnectionLimitsByDefault;
//   SocketServerTest: testZeroMaxConnectionsPerIp, testMaxConnectionsPerIpOverrides
// - ClientQuotasRequestTest: testDescribeClientQuotasMatchExact,
//   testDescribeClientQuotasMatchPartial (without its two ip entities),
//   testDescribeClientQuotasInvalidFilterCombination, testClientQuotasUnsupportedEntityTypes,
//   testClientQuotasWithDefaultName
// - ClientQuotaControlManagerTest: testInvalidEntityTypes, testInvalidQuotaKeys,
//   testAlterAndRemove, testConfigKeysForEmptyEntity, testConfigKeysForEntityTypeWithIpAndUser,
//   testConfigKeysForEntityTypeWithIpAndClientId, testValidateQuotaKeyValueFor* (all)
use super::*;
use std::net::{Ipv4Addr, Ipv6Addr};

/// A fixed start, as MockTime's.
const T0: u64 = 1_700_000_000_000;
const N: f64 = 11.0;

#[expect(clippy::unnecessary_wraps, reason = "entity components are options")]
fn named(name: &str) -> Option<EntityName> {
    Some(EntityName::Named(name.to_owned()))
}

#[expect(clippy::unnecessary_wraps, reason = "entity components are options")]
fn dflt() -> Option<EntityName> {
    Some(EntityName::Default)
}

fn entity(user: Option<EntityName>, client_id: Option<EntityName>) -> ClientQuotaEntity {
    ClientQuotaEntity::new(user, client_id)
}

fn key(user: &str, client_id: &str) -> QuotaMetricKey {
    QuotaMetricKey { user: user.to_owned(), client_id: client_id.to_owned() }
}

fn manager(quota_type: QuotaType) -> ClientQuotaManager {
    ClientQuotaManager::new(
        quota_type,
        NUM_QUOTA_SAMPLES_DEFAULT,
        QUOTA_WINDOW_SIZE_MS_DEFAULT,
        10_000,
    )
}

#[test]
fn quota_type_config_keys() {
    assert_eq!(QuotaType::Produce.config_key(), "producer_byte_rate");
    assert_eq!(QuotaType::Fetch.config_key(), "consumer_byte_rate");
    assert_eq!(QuotaType::Request.config_key(), "request_percentage");
    assert_eq!(QuotaType::from_config_key("request_percentage"), Some(QuotaType::Request));
    assert_eq!(QuotaType::from_config_key("controller_mutation_rate"), None);
    assert_eq!(QuotaType::Produce.to_string(), "Produce");
}

/// ClientQuotaManagerTest.testQuotaParsing, all times at one instant (MockTime not moved).
fn quota_parsing(
    client1: &(&str, &str, ClientQuotaEntity),
    client2: &(&str, &str, ClientQuotaEntity),
    random: (&str, &str),
    default_entity: &ClientQuotaEntity,
) {
    let m = manager(QuotaType::Produce);
    m.update_quota(&client1.2, Some(2000.0));
    m.update_quota(&client2.2, Some(4000.0));
    assert_eq!(m.quota(random.0, random.1), None, "no quota means Long.MaxValue");
    assert_eq!(m.quota(client1.0, client1.1), Some(2000.0));
    assert_eq!(m.quota(client2.0, client2.1), Some(4000.0));

    // Case 1: 27500 over 10 s = 2750/s against 2000: (750 / 2000) * 10000 ms.
    let t = m.record_and_get_throttle_time_ms(client1.0, client1.1, 2500.0 * N, T0);
    assert_eq!(t, 3750);

    // Case 2: quota raised, the existing rate is checked against the new bound.
    m.update_quota(&client1.2, Some(3000.0));
    assert_eq!(m.quota(client1.0, client1.1), Some(3000.0));
    assert_eq!(m.record_and_get_throttle_time_ms(client1.0, client1.1, 0.0, T0), 0);

    // Case 3: back down to 500: (2250 / 500) * 10000 ms.
    m.update_quota(&client1.2, Some(500.0));
    assert_eq!(m.quota(client1.0, client1.1), Some(500.0));
    assert_eq!(m.record_and_get_throttle_time_ms(client1.0, client1.1, 0.0, T0), 45_000);

    // Case 4: override removed, a high default applies to the same rate: 38500 / 10 s.
    m.update_quota(&client1.2, None);
    m.update_quota(default_entity, Some(4000.0));
    assert_eq!(m.quota(client1.0, client1.1), Some(4000.0));
    assert_eq!(m.record_and_get_throttle_time_ms(client1.0, client1.1, 1000.0 * N, T0), 0);
}

#[test]
fn client_id_user_and_user_client_id_quota_parsing() {
    // testClientIdQuotaParsing
    quota_parsing(
        &("ANONYMOUS", "p1", entity(None, named("p1"))),
        &("ANONYMOUS", "p2", entity(None, named("p2"))),
        ("ANONYMOUS", "random-client-id"),
        &entity(None, dflt()),
    );
    // testUserQuotaParsing, testUserQuotaParsingWithDefaultClientIdQuota
    quota_parsing(
        &("User1", "p1", entity(named("User1"), None)),
        &("User2", "p2", entity(named("User2"), None)),
        ("RandomUser", "random-client-id"),
        &entity(dflt(), None),
    );
    // testUserClientIdQuotaParsing, testUserClientQuotaParsingIdWithDefaultClientIdQuota
    quota_parsing(
        &("User1", "p1", entity(named("User1"), named("p1"))),
        &("User2", "p2", entity(named("User2"), named("p2"))),
        ("RandomUser", "random-client-id"),
        &entity(dflt(), dflt()),
    );
}

#[test]
fn get_max_value_in_quota_window_with_non_default_quota_window() {
    let m = ClientQuotaManager::new(QuotaType::Fetch, 4, 1000, 100);
    assert!((m.max_value_in_quota_window("userA", "client1") - f64::MAX).abs() < 0.01);
    m.update_quota(&entity(dflt(), None), Some(10.0));
    assert!((m.max_value_in_quota_window("userA", "client1") - 30.0).abs() < 0.01);
}

/// ClientQuotaManagerTest.checkQuota, with the exact throttle time of a model that sums the
/// values recorded per expected metric key (all at one instant: a 10 s window).
struct Checker {
    m: ClientQuotaManager,
    sums: BTreeMap<QuotaMetricKey, f64>,
}

impl Checker {
    fn new() -> Self {
        Self { m: manager(QuotaType::Produce), sums: BTreeMap::new() }
    }

    fn check(
        &mut self,
        user: &str,
        client: &str,
        bound: Option<f64>,
        value: f64,
        throttle: bool,
        tags: (&str, &str),
    ) {
        assert_eq!(self.m.quota(user, client), bound, "{user}/{client}");
        let max = bound.map_or(f64::MAX, |b| 10.0 * b);
        assert!((self.m.max_value_in_quota_window(user, client) - max).abs() < 0.01);
        let got = self.m.record_and_get_throttle_time_ms(user, client, value * N, T0);
        if let Some(b) = bound {
            let sum = self.sums.entry(key(tags.0, tags.1)).or_insert(0.0);
            *sum += value * N;
            let rate = *sum / 10.0;
            let want = if rate > b { ((rate - b) / b * 10_000.0).round() as u64 } else { 0 };
            assert_eq!(got, want, "{user}/{client}");
            let (found, _) = self
                .m
                .lock()
                .quotas
                .quota_for(QuotaType::Produce, user, client)
                .expect("a quota applies");
            assert_eq!(found, key(tags.0, tags.1), "{user}/{client}");
        }
        assert_eq!(got > 0, throttle, "{user}/{client}: throttle {got}");
    }
}

#[test]
fn set_and_remove_default_user_quota() {
    let mut c = Checker::new();
    c.check("userA", "client1", None, 1000.0, false, ("", ""));
    c.m.update_quota(&entity(dflt(), None), Some(10.0));
    c.check("userA", "client1", Some(10.0), 1000.0, true, ("userA", ""));
    c.m.update_quota(&entity(dflt(), None), None);
    c.check("userA", "client1", None, 1000.0, false, ("", ""));
}

#[test]
fn set_and_remove_user_quota() {
    let mut c = Checker::new();
    c.m.update_quota(&entity(named("userA"), None), Some(10.0));
    c.check("userA", "client1", Some(10.0), 1000.0, true, ("userA", ""));
    c.m.update_quota(&entity(named("userA"), None), None);
    c.check("userA", "client1", None, 1000.0, false, ("", ""));
}

#[test]
fn set_and_remove_user_client_quota() {
    let mut c = Checker::new();
    let e = entity(named("userA"), named("client1"));
    c.m.update_quota(&e, Some(10.0));
    c.check("userA", "client1", Some(10.0), 1000.0, true, ("userA", "client1"));
    c.m.update_quota(&e, None);
    c.check("userA", "client1", None, 1000.0, false, ("", ""));
}

#[test]
fn quota_config_precedence() {
    let mut c = Checker::new();
    let q = |c: &Checker, u, cl, v| c.m.update_quota(&entity(u, cl), v);
    q(&c, dflt(), None, Some(1000.0));
    q(&c, None, dflt(), Some(2000.0));
    q(&c, dflt(), dflt(), Some(3000.0));
    q(&c, named("userA"), None, Some(4000.0));
    q(&c, named("userA"), named("client1"), Some(5000.0));
    q(&c, named("userB"), None, Some(6000.0));
    q(&c, named("userB"), named("client1"), Some(7000.0));
    q(&c, named("userB"), dflt(), Some(8000.0));
    q(&c, named("userC"), None, Some(10000.0));
    q(&c, None, named("client1"), Some(9000.0));

    c.check("userA", "client1", Some(5000.0), 4500.0, false, ("userA", "client1"));
    c.check("userA", "client2", Some(4000.0), 4500.0, true, ("userA", ""));
    c.check("userA", "client3", Some(4000.0), 0.0, true, ("userA", ""));
    c.check("userA", "client1", Some(5000.0), 0.0, false, ("userA", "client1"));

    c.check("userB", "client1", Some(7000.0), 8000.0, true, ("userB", "client1"));
    c.check("userB", "client2", Some(8000.0), 7000.0, false, ("userB", "client2"));
    c.check("userB", "client3", Some(8000.0), 7000.0, false, ("userB", "client3"));

    c.check("userD", "client1", Some(3000.0), 3500.0, true, ("userD", "client1"));
    c.check("userD", "client2", Some(3000.0), 2500.0, false, ("userD", "client2"));
    c.check("userE", "client1", Some(3000.0), 2500.0, false, ("userE", "client1"));

    // Remove default <user, client> quota config, revert to <user> default.
    q(&c, dflt(), dflt(), None);
    c.check("userD", "client1", Some(1000.0), 0.0, false, ("userD", ""));
    c.check("userE", "client4", Some(1000.0), 1500.0, true, ("userE", ""));
    c.check("userF", "client4", Some(1000.0), 800.0, false, ("userF", ""));
    c.check("userF", "client5", Some(1000.0), 800.0, true, ("userF", ""));

    // Remove default <user> quota config, revert to <client-id> default.
    q(&c, dflt(), None, None);
    c.check("userF", "client4", Some(2000.0), 0.0, false, ("", "client4"));
    c.check("userF", "client5", Some(2000.0), 0.0, false, ("", "client5"));
    c.check("userF", "client5", Some(2000.0), 2500.0, true, ("", "client5"));
    c.check("userG", "client5", Some(2000.0), 0.0, true, ("", "client5"));

    // Update quotas.
    q(&c, named("userA"), None, Some(8000.0));
    q(&c, named("userA"), named("client1"), Some(10000.0));
    c.check("userA", "client2", Some(8000.0), 0.0, false, ("userA", ""));
    c.check("userA", "client2", Some(8000.0), 4500.0, true, ("userA", ""));
    c.check("userA", "client1", Some(10000.0), 0.0, false, ("userA", "client1"));
    c.check("userA", "client1", Some(10000.0), 6000.0, true, ("userA", "client1"));
    q(&c, named("userA"), named("client1"), None);
    c.check("userA", "client6", Some(8000.0), 0.0, true, ("userA", ""));
    q(&c, named("userA"), named("client6"), Some(11000.0));
    c.check("userA", "client6", Some(11000.0), 8500.0, false, ("userA", "client6"));
    q(&c, named("userA"), dflt(), Some(12000.0));
    q(&c, named("userA"), named("client6"), None);
    c.check("userA", "client6", Some(12000.0), 4000.0, true, ("userA", "client6"));
}

#[test]
fn quota_violation() {
    let m = manager(QuotaType::Produce);
    m.update_quota(&entity(None, dflt()), Some(500.0));
    let mut now = T0;
    for _ in 0..10 {
        assert_eq!(m.record_and_get_throttle_time_ms("ANONYMOUS", "unknown", 400.0, now), 0);
        now += 1000;
    }
    // 400 * 10 + 2300 = 6300 over 10.5 s = 600/s; (600 - 500) / 500 * 10500 ms = 2100.
    now += 500;
    let throttle = m.record_and_get_throttle_time_ms("ANONYMOUS", "unknown", 2300.0, now);
    assert_eq!(throttle, 2100);
    let channel = m.throttle("ANONYMOUS", "unknown", throttle, now).expect("throttled");
    assert_eq!(channel, ThrottledChannel { throttle_time_ms: 2100, unmute_at_ms: now + 2100 });
    assert_eq!(channel.delay_ms(now), 2100);
    assert_eq!(m.unmute_at_ms("ANONYMOUS", "unknown", now), Some(now + 2100));
    assert_eq!(m.unmute_at_ms("ANONYMOUS", "other-client", now), None);
    now += throttle;
    assert_eq!(channel.delay_ms(now), 0);
    assert_eq!(m.unmute_at_ms("ANONYMOUS", "unknown", now), None);

    // Delays continue until the bursty sample rolls over (values from a model of Kafka's
    // SampledStat / Rate run on the same sequence).
    let mut seen = Vec::new();
    for _ in 0..10 {
        seen.push(m.record_and_get_throttle_time_ms("ANONYMOUS", "unknown", 400.0, now));
        now += 1000;
    }
    assert_eq!(seen, [1200, 1200, 1200, 1200, 1200, 1200, 1200, 1200, 1700, 0]);
    assert_eq!(m.record_and_get_throttle_time_ms("ANONYMOUS", "unknown", 0.0, now), 0);
    assert_eq!(m.throttle("ANONYMOUS", "unknown", 0, now), None);
}

#[test]
fn request_percentage_quota_violation() {
    let m = manager(QuotaType::Request);
    m.update_quota(&entity(named("ANONYMOUS"), named("test-client")), Some(1.0));
    let pct = |millis: f64| millis * 1000.0 * 1000.0 * NANOS_TO_PERCENTAGE_PER_SECOND;
    let rec =
        |v: f64, now: u64| m.record_and_get_throttle_time_ms("ANONYMOUS", "test-client", v, now);
    let mut now = T0;
    for _ in 0..10 {
        assert_eq!(rec(pct(4.0), now), 0);
        now += 1000;
    }
    // 4 * 10 + 67.1 = 107.1 ms over 10.5 s = 10.2 ms/s; (10.2 - 10) / 10 * 10500 = 210 ms.
    now += 500;
    let throttle = rec(pct(67.1), now);
    assert_eq!(throttle, 210);
    now += throttle;
    let mut seen = Vec::new();
    for _ in 0..11 {
        seen.push(rec(pct(4.0), now));
        now += 1000;
    }
    assert_eq!(seen, [400, 400, 400, 400, 400, 400, 400, 400, 400, 400, 900]);
    assert_eq!(rec(0.0, now), 0, "unthrottled once the bursty sample rolled over");

    // A spike needing more than one window is capped at one window (1000 ms).
    assert_eq!(rec(pct(500.0), now), 1000);
    for _ in 0..10 {
        now += 1000;
        assert_eq!(rec(0.0, now), 1000);
    }
    now += 1000;
    assert_eq!(rec(0.0, now), 0);
}

#[test]
fn request_time_in_nanos_is_a_percentage_of_one_thread_second() {
    assert!((nanos_to_percentage(1_000_000_000) - 100.0).abs() < 1e-9);
    assert!((nanos_to_percentage(4_000_000) - 0.4).abs() < 1e-12);
    let m = manager(QuotaType::Request);
    m.update_quota(&entity(dflt(), None), Some(1.0));
    // 200 ms in one instant: 20 % over 10 s = 2 %/s against 1 %: capped at one window.
    let t = m.record_request_time_and_get_throttle_time_ms("u", "c", 200_000_000, T0);
    assert_eq!(t, 1000);
}

#[test]
fn produce_throttle_is_not_capped() {
    // Only ClientRequestQuotaManager bounds the throttle time; byte-rate quotas do not.
    let m = manager(QuotaType::Fetch);
    m.update_quota(&entity(None, dflt()), Some(100.0));
    // 100000 bytes over 10 s = 10000/s: (9900 / 100) * 10000 ms.
    assert_eq!(m.record_and_get_throttle_time_ms("u", "c", 100_000.0, T0), 990_000);
}

#[test]
fn unrecord_takes_back_a_throttled_fetch() {
    let m = manager(QuotaType::Fetch);
    m.update_quota(&entity(None, dflt()), Some(500.0));
    assert_eq!(m.record_and_get_throttle_time_ms("u", "c", 11_000.0, T0), 12_000);
    m.unrecord("u", "c", 11_000.0, T0);
    assert_eq!(m.record_and_get_throttle_time_ms("u", "c", 0.0, T0), 0);
    m.record_no_throttle("u", "c", 11_000.0, T0);
    assert_eq!(m.record_and_get_throttle_time_ms("u", "c", 0.0, T0), 12_000);
}

#[test]
fn expire_idle_entities() {
    // testExpireThrottleTimeSensor / testExpireQuotaSensors: a forgotten entity is
    // recreated on its next record and throttled from its new history.
    let m = manager(QuotaType::Produce);
    m.update_quota(&entity(None, dflt()), Some(500.0));
    assert_eq!(m.record_and_get_throttle_time_ms("ANONYMOUS", "client1", 100.0, T0), 0);
    assert_eq!(m.tracked_entities(), 1);
    m.expire_inactive_sensors(T0 + INACTIVE_SENSOR_EXPIRATION_TIME_MS);
    assert_eq!(m.tracked_entities(), 1, "expiry is after more than one hour");
    let later = T0 + INACTIVE_SENSOR_EXPIRATION_TIME_MS + 1;
    m.expire_inactive_sensors(later);
    assert_eq!(m.tracked_entities(), 0);
    // 10000 over 10 s = 1000/s against 500: (500 / 500) * 10000 ms; the 100 is forgotten.
    assert_eq!(m.record_and_get_throttle_time_ms("ANONYMOUS", "client1", 10_000.0, later), 10_000);
    assert_eq!(m.tracked_keys(), BTreeSet::from([key("", "client1")]));
    // Expiry also runs lazily when another entity records.
    let much_later = later + INACTIVE_SENSOR_EXPIRATION_TIME_MS + 1;
    m.record_and_get_throttle_time_ms("ANONYMOUS", "client2", 1.0, much_later);
    assert_eq!(m.tracked_keys(), BTreeSet::from([key("", "client2")]));
}

#[test]
fn client_id_not_sanitized() {
    let m = manager(QuotaType::Produce);
    m.update_quota(&entity(None, dflt()), Some(500.0));
    m.record_and_get_throttle_time_ms("ANONYMOUS", "client@#$%", 100.0, T0);
    assert_eq!(m.tracked_keys(), BTreeSet::from([key("", "client@#$%")]));
}

#[test]
fn tracked_entities_are_bounded() {
    let m = ClientQuotaManager::new(QuotaType::Produce, 11, 1000, 3);
    m.update_quota(&entity(None, dflt()), Some(500.0));
    for i in 0..10 {
        m.record_and_get_throttle_time_ms("u", &format!("c{i}"), 1.0, T0 + i);
        assert!(m.tracked_entities() <= 3);
    }
    assert_eq!(m.tracked_keys(), BTreeSet::from([key("", "c7"), key("", "c8"), key("", "c9")]));
    // Least recently used goes first: touching c7 makes c8 the one evicted.
    m.record_and_get_throttle_time_ms("u", "c7", 1.0, T0 + 20);
    m.record_and_get_throttle_time_ms("u", "c10", 1.0, T0 + 21);
    assert_eq!(m.tracked_keys(), BTreeSet::from([key("", "c7"), key("", "c9"), key("", "c10")]));
    // Zero is taken as one.
    let one = ClientQuotaManager::new(QuotaType::Produce, 11, 1000, 0);
    one.update_quota(&entity(None, dflt()), Some(500.0));
    one.record_and_get_throttle_time_ms("u", "a", 1.0, T0);
    one.record_and_get_throttle_time_ms("u", "b", 1.0, T0);
    assert_eq!(one.tracked_keys(), BTreeSet::from([key("", "b")]));
}

#[test]
fn rotating_client_ids_share_a_user_quota() {
    let m = ClientQuotaManager::new(QuotaType::Produce, 11, 1000, 3);
    m.update_quota(&entity(named("mallory"), None), Some(100.0));
    let mut last = 0;
    for i in 0..1000 {
        last = m.record_and_get_throttle_time_ms("mallory", &format!("id-{i}"), 1.0, T0);
    }
    assert_eq!(m.tracked_keys(), BTreeSet::from([key("mallory", "")]));
    // 1000 over 10 s = 100/s: exactly the bound, not above it.
    assert_eq!(last, 0);
    assert_eq!(m.record_and_get_throttle_time_ms("mallory", "id-x", 10.0, T0), 100);
    // Connections with no quota are not tracked at all.
    m.record_and_get_throttle_time_ms("alice", "c", 1e9, T0);
    assert_eq!(m.tracked_entities(), 1);
}

#[test]
fn set_quotas_takes_only_this_type() {
    let mut store = ClientQuotas::new();
    let e = entity(named("alice"), None);
    store
        .alter_all(&e, &[(PRODUCER_BYTE_RATE, Some(1000.0)), (REQUEST_PERCENTAGE, Some(50.0))])
        .expect("valid");
    let produce = manager(QuotaType::Produce);
    let fetch = manager(QuotaType::Fetch);
    let request = manager(QuotaType::Request);
    for m in [&produce, &fetch, &request] {
        m.set_quotas(&store);
    }
    assert_eq!(produce.quota("alice", "c"), Some(1000.0));
    assert_eq!(fetch.quota("alice", "c"), None);
    assert_eq!(request.quota("alice", "c"), Some(50.0));
    assert_eq!(store.quota_for(QuotaType::Request, "alice", "c"), Some((key("alice", ""), 50.0)));
}

#[test]
fn quota_for_follows_the_precedence_list() {
    // One row per level of ClientQuotaManager's list, each added above the previous ones.
    let levels = [
        (entity(None, dflt()), 8.0, key("", "c")),
        (entity(None, named("c")), 7.0, key("", "c")),
        (entity(dflt(), None), 6.0, key("u", "")),
        (entity(dflt(), dflt()), 5.0, key("u", "c")),
        (entity(dflt(), named("c")), 4.0, key("u", "c")),
        (entity(named("u"), None), 3.0, key("u", "")),
        (entity(named("u"), dflt()), 2.0, key("u", "c")),
        (entity(named("u"), named("c")), 1.0, key("u", "c")),
    ];
    let mut store = ClientQuotas::new();
    assert_eq!(store.quota_for(QuotaType::Produce, "u", "c"), None);
    for (e, bound, want) in levels {
        store.alter(&e, PRODUCER_BYTE_RATE, Some(bound)).expect("valid");
        assert_eq!(store.quota_for(QuotaType::Produce, "u", "c"), Some((want, bound)), "{e}");
        assert_eq!(store.quota_for(QuotaType::Fetch, "u", "c"), None);
    }
}

#[test]
fn quota_utils_throttle_time() {
    // QuotaUtilsTest: a fresh Rate has a window of (samples - 1) s.
    let window = |samples: u32| SampledRate::new(samples, 1000).window_size(T0);
    // testThrottleTimeObservedRateEqualsQuota
    assert_eq!(throttle_time(16.5, 16.5, window(10)), 0);
    assert_eq!(throttle_time(16.5, 16.5, window(11)), 0);
    // testThrottleTimeObservedRateBelowQuota
    assert!(throttle_time(16.5, 20.4, window(10)) < 0);
    assert!(throttle_time(16.5, 20.4, window(11)) < 0);
    // testThrottleTimeObservedRateAboveQuota
    assert_eq!(throttle_time(100.0, 50.0, window(3)), 2000);
    // testBoundedThrottleTimeObservedRateEqualsQuota
    assert_eq!(bounded_throttle_time(18.2, 18.2, window(10), 500), 0);
    assert_eq!(bounded_throttle_time(18.2, 18.2, window(11), 500), 0);
    // testBoundedThrottleTimeObservedRateBelowQuota
    assert!(bounded_throttle_time(16.5, 22.4, window(10), 500) < 0);
    assert!(bounded_throttle_time(16.5, 22.4, window(11), 500) < 0);
    // testBoundedThrottleTimeObservedRateAboveQuotaBelowLimit
    assert_eq!(bounded_throttle_time(55.0, 50.0, window(2), 500), 100);
    // testBoundedThrottleTimeObservedRateAboveQuotaAboveLimit
    assert_eq!(bounded_throttle_time(100.0, 50.0, window(10), 500), 500);
}

#[test]
fn rate_with_no_prior_available_samples() {
    // RateTest.testRateWithNoPriorAvailableSamples: "1,1", "1,11", "11,1", "11,11".
    for (samples, window_s) in [(1_u32, 1_u32), (1, 11), (11, 1), (11, 11)] {
        let mut rate = SampledRate::new(samples, u64::from(window_s) * 1000);
        rate.record(50.0, T0);
        let measurement_ms = window_s * 1000 - 1;
        let observed = rate.measure(T0 + u64::from(measurement_ms));
        let window =
            f64::from(measurement_ms) / 1000.0 + f64::from(samples - 1) * f64::from(window_s);
        assert!((observed - 50.0 / window).abs() < 1e-6, "{samples},{window_s}: {observed}");
    }
}

#[test]
fn rate_is_consistent_after_the_first_window() {
    // RateTest.testRateIsConsistentAfterTheFirstWindow
    let mut rate = SampledRate::new(2, 1000);
    let steps = [0, 99, 100, 100, 100, 100, 100, 100, 100, 100, 100];
    let mut now = T0;
    for step in steps {
        now += step;
        rate.record(1.0, now);
    }
    now += 101;
    for step in steps {
        now += step;
        rate.record(1.0, now);
        let observed = rate.measure(now);
        assert!((10.0..=11.0).contains(&observed), "{observed}");
        assert!((rate.measure(now) - observed).abs() < f64::EPSILON);
    }
}

/// SampledStatTest.completeSample: events at the start and end of a window, clock after it.
fn complete_sample(rate: &mut SampledRate, now: &mut u64) {
    rate.record(1.0, *now);
    *now += 999;
    rate.record(1.0, *now);
    *now += 1;
}

#[test]
fn sampled_stat_purges_and_keeps_samples() {
    // testSampleIsPurgedIfDoesntOverlap
    let (mut rate, mut now) = (SampledRate::new(2, 1000), T0);
    complete_sample(&mut rate, &mut now);
    now += 2500;
    rate.measure(now);
    assert_eq!(rate.samples_with_events(), 0);
    // testSampleIsKeptIfOverlaps
    let (mut rate, mut now) = (SampledRate::new(2, 1000), T0);
    complete_sample(&mut rate, &mut now);
    now += 1500;
    rate.measure(now);
    assert_eq!(rate.samples_with_events(), 1);
    // testSampleIsKeptIfOverlapsAndExtra: three samples, the first overlapping the window.
    let (mut rate, mut now) = (SampledRate::new(2, 1000), T0);
    complete_sample(&mut rate, &mut now);
    now += 100;
    complete_sample(&mut rate, &mut now);
    now += 100;
    rate.record(1.0, now);
    rate.measure(now);
    assert_eq!(rate.samples_with_events(), 3);
    // 5 events over the 2200 ms since the oldest sample started.
    assert_eq!(rate.window_size(now), 2200);
    assert!((rate.measure(now) - 5.0 / 2.2).abs() < 1e-9);
}

#[test]
fn rate_window_never_below_one_ms() {
    let mut rate = SampledRate::new(1, 1000);
    assert_eq!(rate.window_size(T0), 1);
    rate.record(3.0, T0);
    assert!((rate.measure(T0) - 3000.0).abs() < 1e-9);
    // Time going backwards neither panics nor yields a negative window.
    assert_eq!(rate.window_size(T0 - 10), 1);
    let mut zero = SampledRate::new(0, 0);
    zero.record(1.0, 0);
    assert!(zero.measure(u64::MAX).is_finite());
}

fn ip(s: &str) -> IpAddr {
    s.parse().expect("test address")
}

#[test]
fn max_connections_per_ip() {
    // ConnectionQuotasTest.testMaxConnectionsPerIp
    let quotas = Arc::new(ConnectionQuotas::new(17, BTreeMap::new()));
    let default_ip = ip("127.0.0.1");
    let known_host = ip("192.168.1.2");
    let mut held: Vec<ConnectionPermit> =
        (0..17).map(|_| quotas.try_acquire(default_ip).expect("below the limit")).collect();
    assert_eq!(quotas.get(default_ip), 17);
    for _ in 0..2 {
        let err = quotas.try_acquire(default_ip).expect_err("above the limit");
        assert_eq!(err, TooManyConnections { ip: default_ip, max: 17 });
        assert_eq!(err.to_string(), "too many connections from 127.0.0.1 (maximum = 17)");
    }
    assert_eq!(quotas.get(default_ip), 17, "refused connections are not counted");
    let other: Vec<ConnectionPermit> =
        (0..17).map(|_| quotas.try_acquire(known_host).expect("another address")).collect();
    held.truncate(15);
    assert_eq!(quotas.get(default_ip), 15);
    held.extend((0..2).map(|_| quotas.try_acquire(default_ip).expect("freed slots")));
    assert_eq!(quotas.get(default_ip), 17);
    drop(held);
    drop(other);
    assert_eq!((quotas.get(default_ip), quotas.tracked_ips()), (0, 0));
}

#[test]
fn no_connection_limits_by_default() {
    // ConnectionQuotasTest.testNoConnectionLimitsByDefault
    let quotas = Arc::new(ConnectionQuotas::new(DEFAULT_MAX_CONNECTIONS_PER_IP, BTreeMap::new()));
    let a = ip("10.0.0.1");
    let mut held: Vec<ConnectionPermit> =
        (0..10_000).map(|_| quotas.try_acquire(a).expect("no limit")).collect();
    assert_eq!(quotas.get(a), 10_000);
    held.pop();
    assert_eq!(quotas.get(a), 9_999);
}

#[test]
fn zero_max_connections_per_ip_with_override() {
    // SocketServerTest.testZeroMaxConnectionsPerIp
    let overrides = ConnectionQuotas::parse_overrides("127.0.0.1:5").expect("valid");
    assert_eq!(ConnectionQuotas::validate_config(0, &overrides), Ok(()));
    let quotas = Arc::new(ConnectionQuotas::new(0, overrides));
    let held: Vec<_> =
        (0..5).map(|_| quotas.try_acquire(ip("127.0.0.1")).expect("override")).collect();
    assert_eq!(held.len(), 5);
    assert!(quotas.try_acquire(ip("127.0.0.1")).is_err());
    assert_eq!(
        quotas.try_acquire(ip("10.1.1.1")).expect_err("zero default"),
        TooManyConnections { ip: ip("10.1.1.1"), max: 0 }
    );
    let err = ConnectionQuotas::validate_config(0, &BTreeMap::new()).expect_err("no overrides");
    assert_eq!(err, QuotaError::ZeroMaxConnectionsWithoutOverrides);
}

#[test]
fn max_connections_per_ip_overrides() {
    // SocketServerTest.testMaxConnectionsPerIpOverrides, with an IP literal for localhost.
    let quotas = Arc::new(ConnectionQuotas::new(
        2,
        ConnectionQuotas::parse_overrides("127.0.0.1:3").expect("valid"),
    ));
    let held: Vec<_> =
        (0..3).map(|_| quotas.try_acquire(ip("127.0.0.1")).expect("override")).collect();
    assert!(quotas.try_acquire(ip("127.0.0.1")).is_err());
    assert_eq!(quotas.max_connections(ip("127.0.0.1")), 3);
    assert_eq!(quotas.max_connections(ip("127.0.0.2")), 2);
    // An IPv4 client seen through a dual-stack listener counts as its IPv4 address.
    let mapped = IpAddr::V6(Ipv4Addr::LOCALHOST.to_ipv6_mapped());
    assert!(quotas.try_acquire(mapped).is_err());
    drop(held);
    let permit = quotas.try_acquire(mapped).expect("freed");
    assert_eq!(permit.ip(), ip("127.0.0.1"));
    assert_eq!(format!("{permit:?}"), "ConnectionPermit { ip: 127.0.0.1, .. }");
    // Dynamic updates.
    quotas.update_overrides(BTreeMap::new());
    quotas.update_max_connections_per_ip(1);
    assert!(quotas.try_acquire(ip("127.0.0.1")).is_err());
}

#[test]
fn parse_max_connections_per_ip_overrides() {
    let parsed =
        ConnectionQuotas::parse_overrides(" 127.0.0.1:5 , ::1:10,192.168.0.1:0,").expect("valid");
    assert_eq!(
        parsed,
        BTreeMap::from([
            (ip("127.0.0.1"), 5),
            (ip("192.168.0.1"), 0),
            (IpAddr::V6(Ipv6Addr::LOCALHOST), 10),
        ])
    );
    assert_eq!(ConnectionQuotas::parse_overrides("").expect("empty"), BTreeMap::new());
    let cases: [(&str, QuotaError); 6] = [
        ("localhost:5", QuotaError::HostnameOverride { host: "localhost".to_owned() }),
        (
            "127.0.0.1",
            QuotaError::InvalidConnectionsOverride {
                entry: "127.0.0.1".to_owned(),
                reason: "expected host:count",
            },
        ),
        (
            "1.2.3.4:x",
            QuotaError::InvalidConnectionsOverride {
                entry: "1.2.3.4:x".to_owned(),
                reason: "the count is not an integer",
            },
        ),
        (
            "1.2.3.4:-1",
            QuotaError::InvalidConnectionsOverride {
                entry: "1.2.3.4:-1".to_owned(),
                reason: "the count is negative",
            },
        ),
        (
            "1.2.3.4:2147483648",
            QuotaError::InvalidConnectionsOverride {
                entry: "1.2.3.4:2147483648".to_owned(),
                reason: "the count is not an integer",
            },
        ),
        (
            "not a host:1",
            QuotaError::InvalidConnectionsOverride {
                entry: "not a host:1".to_owned(),
                reason: "the host is not a valid address",
            },
        ),
    ];
    for (input, want) in cases {
        assert_eq!(ConnectionQuotas::parse_overrides(input), Err(want), "{input}");
    }
    assert_eq!(
        QuotaError::HostnameOverride { host: "localhost".to_owned() }.to_string(),
        "max.connections.per.ip.overrides names host \"localhost\": host names are not resolved, give an IP address literal"
    );
}

#[test]
fn connection_quotas_are_thread_safe() {
    let quotas = Arc::new(ConnectionQuotas::new(250, BTreeMap::new()));
    let a = ip("10.0.0.9");
    let permits: Vec<Vec<ConnectionPermit>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| (0..100).filter_map(|_| quotas.try_acquire(a).ok()).collect()))
            .collect();
        handles.into_iter().map(|h| h.join().expect("thread")).collect()
    });
    assert_eq!(permits.iter().map(Vec::len).sum::<usize>(), 250);
    assert_eq!(quotas.get(a), 250);
    std::thread::scope(|s| {
        for batch in permits {
            s.spawn(move || drop(batch));
        }
    });
    assert_eq!((quotas.get(a), quotas.tracked_ips()), (0, 0));
}

#[test]
fn entity_from_wire_validation() {
    // ClientQuotaControlManagerTest.testInvalidEntityTypes, testConfigKeysForEmptyEntity,
    // testConfigKeysForEntityTypeWithIpAndUser, testConfigKeysForEntityTypeWithIpAndClientId
    type Wire<'a> = &'a [(&'a str, Option<&'a str>)];
    let cases: [(Wire<'_>, QuotaError); 8] = [
        (
            &[("foo", Some("bar"))],
            QuotaError::UnhandledEntityType { entity_type: "foo".to_owned() },
        ),
        (
            &[("user", Some("user-1")), ("foo", Some("bar"))],
            QuotaError::UnhandledEntityType { entity_type: "foo".to_owned() },
        ),
        (
            &[("foo", Some("bar")), ("ip", Some("1.2.3.4"))],
            QuotaError::UnhandledEntityType { entity_type: "foo".to_owned() },
        ),
        (&[("user", Some("user-1")), ("ip", Some("1.2.3.4"))], QuotaError::IpEntityCombination),
        (
            &[("client-id", Some("user-1")), ("ip", Some("1.2.3.4"))],
            QuotaError::IpEntityCombination,
        ),
        (&[], QuotaError::EmptyEntity),
        (&[("user", Some(""))], QuotaError::EmptyEntityName { entity_type: "user".to_owned() }),
        (
            &[("user", Some("a")), ("user", None)],
            QuotaError::DuplicateEntityEntry { entity_type: "user".to_owned() },
        ),
    ];
    for (wire, want) in cases {
        let got = ClientQuotaEntity::from_wire(wire.iter().copied());
        assert_eq!(got.as_ref().map_err(QuotaError::error_code).err(), Some(42));
        assert_eq!(got, Err(want), "{wire:?}");
    }
    assert_eq!(
        ClientQuotaEntity::from_wire([("ip", Some("1.2.3.4"))]),
        Err(QuotaError::IpEntityUnsupported)
    );
    let e =
        ClientQuotaEntity::from_wire([("client-id", Some("c")), ("user", None)]).expect("valid");
    assert_eq!(e, entity(dflt(), named("c")));
    assert_eq!(e.to_wire(), vec![("user", None), ("client-id", Some("c"))]);
    assert_eq!(e.to_string(), "ClientQuotaEntity(entries={user=null, client-id=c})");
    assert_eq!(QuotaError::EmptyEntity.to_string(), "Invalid empty client quota entity");
    assert_eq!(
        QuotaError::IpEntityCombination.to_string(),
        "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
    );
    assert_eq!(
        QuotaError::EmptyEntityName { entity_type: "user".to_owned() }.to_string(),
        "Empty user not supported"
    );
}

#[test]
fn validate_quota_key_value() {
    // ClientQuotaControlManagerTest.testValidateQuotaKeyValueFor*
    let cases: [(&str, f64, Option<&str>); 10] = [
        ("foobar", 1.0, Some("Invalid configuration key foobar")),
        ("producer_byte_rate", 0.0, Some("Quota producer_byte_rate must be greater than 0")),
        ("consumer_byte_rate", -2.0, Some("Quota consumer_byte_rate must be greater than 0")),
        ("consumer_byte_rate", 1234.0, None),
        (
            "consumer_byte_rate",
            36_893_488_147_419_103_232.4,
            Some("Proposed value for consumer_byte_rate is too large for a LONG."),
        ),
        ("consumer_byte_rate", 2.245, Some("consumer_byte_rate cannot be a fractional value.")),
        ("consumer_byte_rate", 1_235.000_000_1, None),
        ("request_percentage", 56.623_67, None),
        ("controller_mutation_rate", 0.5, None),
        ("request_percentage", f64::NAN, Some("Quota request_percentage must be greater than 0")),
    ];
    for (k, v, want) in cases {
        let got = validate_quota_value(k, v).map_err(|e| e.to_string());
        assert_eq!(got, want.map_or(Ok(()), |m| Err(m.to_owned())), "{k}={v}");
    }
}

#[test]
fn invalid_quota_keys_change_nothing() {
    // ClientQuotaControlManagerTest.testInvalidQuotaKeys
    let mut store = ClientQuotas::new();
    let e = entity(named("user-1"), None);
    let err = store
        .alter_all(&e, &[("not.a.quota.key", Some(0.0)), (REQUEST_PERCENTAGE, Some(99.9))])
        .expect_err("invalid key");
    assert_eq!(err.to_string(), "Invalid configuration key not.a.quota.key");
    let err = store
        .alter_all(&e, &[(REQUEST_PERCENTAGE, Some(99.9)), ("not.a.quota.key", Some(0.0))])
        .expect_err("invalid key");
    assert_eq!(err, QuotaError::InvalidConfigKey { key: "not.a.quota.key".to_owned() });
    assert!(store.is_empty());
    // Duplicate keys: Kafka's final answer for the entity.
    let err = store
        .alter_all(&e, &[(REQUEST_PERCENTAGE, Some(1.0)), (REQUEST_PERCENTAGE, None)])
        .expect_err("duplicate key");
    assert_eq!(
        err.to_string(),
        "Ignoring duplicate entity ClientQuotaEntity(entries={user=user-1})"
    );
    // An empty entity built by hand.
    assert_eq!(
        store.alter(&entity(None, None), PRODUCER_BYTE_RATE, Some(1.0)),
        Err(QuotaError::EmptyEntity)
    );
    assert!(store.is_empty());
}

#[test]
fn alter_and_remove() {
    // ClientQuotaControlManagerTest.testAlterAndRemove
    let mut store = ClientQuotas::new();
    let e = entity(named("user-1"), None);
    store.alter(&e, PRODUCER_BYTE_RATE, Some(10000.0)).expect("valid");
    assert_eq!(store.entries().next().map(|(_, q)| q.len()), Some(1));
    assert_eq!(store.get(&e, PRODUCER_BYTE_RATE), Some(10000.0));
    store
        .alter_all(&e, &[(PRODUCER_BYTE_RATE, Some(10001.0)), (CONSUMER_BYTE_RATE, Some(20000.0))])
        .expect("valid");
    assert_eq!(store.get(&e, PRODUCER_BYTE_RATE), Some(10001.0));
    assert_eq!(store.get(&e, CONSUMER_BYTE_RATE), Some(20000.0));
    store.alter(&e, PRODUCER_BYTE_RATE, None).expect("removal");
    assert_eq!(store.get(&e, PRODUCER_BYTE_RATE), None);
    store.alter(&e, REQUEST_PERCENTAGE, None).expect("removing nothing");
    assert_eq!(store.get(&e, CONSUMER_BYTE_RATE), Some(20000.0));
    store.alter(&e, CONSUMER_BYTE_RATE, None).expect("removal");
    assert!(store.is_empty(), "an entity without quotas is dropped");
    store.alter(&e, CONSUMER_BYTE_RATE, None).expect("removing nothing");
    assert!(store.is_empty());
    store
        .alter_all(
            &e,
            &[
                (REQUEST_PERCENTAGE, Some(99.0)),
                (CONTROLLER_MUTATION_RATE, None),
                (PRODUCER_BYTE_RATE, Some(10002.0)),
                (CONSUMER_BYTE_RATE, Some(20001.0)),
            ],
        )
        .expect("mixed update");
    let all: Vec<_> = store.entries().map(|(e, q)| (e.clone(), q.clone())).collect();
    assert_eq!(
        all,
        vec![(
            e,
            BTreeMap::from([
                (CONSUMER_BYTE_RATE.to_owned(), 20001.0),
                (PRODUCER_BYTE_RATE.to_owned(), 10002.0),
                (REQUEST_PERCENTAGE.to_owned(), 99.0),
            ])
        )]
    );
    assert_eq!(store.len(), 1);
}

/// ClientQuotasRequestTest.matchUserClientEntities (`Some(null)` is the default).
fn match_store() -> (ClientQuotas, Vec<(ClientQuotaEntity, f64)>) {
    let rows = [
        (named("user-1"), named("client-id-1"), 50.50),
        (named("user-2"), named("client-id-1"), 51.51),
        (named("user-3"), named("client-id-2"), 52.52),
        (dflt(), named("client-id-1"), 53.53),
        (named("user-1"), dflt(), 54.54),
        (named("user-3"), dflt(), 55.55),
        (named("user-1"), None, 56.56),
        (named("user-2"), None, 57.57),
        (named("user-3"), None, 58.58),
        (dflt(), None, 59.59),
        (None, named("client-id-2"), 60.60),
    ];
    let mut store = ClientQuotas::new();
    let mut all = Vec::new();
    for (u, c, v) in rows {
        let e = entity(u, c);
        store.alter(&e, REQUEST_PERCENTAGE, Some(v)).expect("valid");
        all.push((e, v));
    }
    (store, all)
}

fn exact_components(e: &ClientQuotaEntity) -> Vec<FilterComponent> {
    e.to_wire()
        .into_iter()
        .map(|(t, n)| {
            n.map_or_else(
                || FilterComponent::of_default_entity(t),
                |n| FilterComponent::of_entity(t, n),
            )
        })
        .collect()
}

#[test]
fn describe_client_quotas_match_exact() {
    let (store, all) = match_store();
    for (e, v) in &all {
        let got = store.describe(&exact_components(e), true).expect("valid filter");
        assert_eq!(got, vec![(e.clone(), BTreeMap::from([(REQUEST_PERCENTAGE.to_owned(), *v)]))]);
    }
    let not_matching = [
        entity(named("user-1"), named("client-id-2")),
        entity(named("user-3"), named("client-id-1")),
        entity(named("user-2"), dflt()),
        entity(named("user-4"), None),
        entity(dflt(), named("client-id-2")),
        entity(None, named("client-id-1")),
        entity(None, named("client-id-3")),
    ];
    for e in &not_matching {
        assert_eq!(
            store.describe(&exact_components(e), true).expect("valid filter"),
            vec![],
            "{e}"
        );
    }
}

#[test]
fn describe_client_quotas_match_partial() {
    type Pick = fn(&ClientQuotaEntity) -> bool;
    let (store, all) = match_store();
    let user = ENTITY_TYPE_USER;
    let client = ENTITY_TYPE_CLIENT_ID;
    let cases: [(Vec<FilterComponent>, bool, usize, Pick); 13] = [
        (vec![FilterComponent::of_entity(user, "user-1")], false, 3, |e| e.user == named("user-1")),
        (vec![FilterComponent::of_entity(user, "unknown")], false, 0, |_| false),
        (vec![FilterComponent::of_entity(client, "client-id-2")], false, 2, |e| {
            e.client_id == named("client-id-2")
        }),
        (vec![FilterComponent::of_default_entity(user)], false, 2, |e| e.user == dflt()),
        (vec![FilterComponent::of_entity(user, "user-2")], true, 1, |e| {
            e.user == named("user-2") && e.client_id.is_none()
        }),
        (vec![FilterComponent::of_entity(client, "client-id-1")], true, 0, |_| false),
        // MATCH_TYPE_SPECIFIED matches the default entity too (4 includes <default> user).
        (vec![FilterComponent::of_entity_type(user)], true, 4, |e| {
            e.user.is_some() && e.client_id.is_none()
        }),
        (vec![FilterComponent::of_entity_type(user)], false, 10, |e| e.user.is_some()),
        (vec![FilterComponent::of_entity_type(client)], true, 1, |e| {
            e.client_id.is_some() && e.user.is_none()
        }),
        (vec![FilterComponent::of_entity_type(client)], false, 7, |e| e.client_id.is_some()),
        // Kafka's test has two ip entities here; no ip quotas are kept by this broker.
        (vec![FilterComponent::of_entity_type(ENTITY_TYPE_IP)], false, 0, |_| false),
        (vec![], false, 11, |_| true),
        (vec![], true, 0, |_| false),
    ];
    for (components, strict, count, pick) in cases {
        let got = store.describe(&components, strict).expect("valid filter");
        let want: Vec<_> = all
            .iter()
            .filter(|(e, _)| pick(e))
            .map(|(e, v)| (e.clone(), BTreeMap::from([(REQUEST_PERCENTAGE.to_owned(), *v)])))
            .collect();
        assert_eq!(want.len(), count, "{components:?}");
        let mut got_sorted = got.clone();
        got_sorted.sort_by(|a, b| a.0.cmp(&b.0));
        let mut want_sorted = want;
        want_sorted.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(got_sorted, want_sorted, "{components:?} strict={strict}");
    }
}

#[test]
fn describe_filter_errors() {
    // testDescribeClientQuotasInvalidFilterCombination, testClientQuotasUnsupportedEntityTypes
    // and ClientQuotasImage.describe's other checks.
    let store = match_store().0;
    let component = |t: &str, m: i8, n: Option<&str>| FilterComponent {
        entity_type: t.to_owned(),
        match_type: m,
        match_name: n.map(str::to_owned),
    };
    let cases: [(Vec<FilterComponent>, &str, i16); 9] = [
        (
            vec![FilterComponent::of_entity_type("ip"), FilterComponent::of_entity_type("user")],
            "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.",
            42,
        ),
        (
            vec![
                FilterComponent::of_entity_type("ip"),
                FilterComponent::of_default_entity("client-id"),
            ],
            "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.",
            42,
        ),
        (vec![FilterComponent::of_entity("other", "name")], "Unsupported entity type other", 35),
        (vec![FilterComponent::of_entity_type("")], "Invalid empty entity type.", 42),
        (
            vec![FilterComponent::of_entity("user", "a"), FilterComponent::of_entity_type("user")],
            "Entity type user cannot appear more than once in the filter.",
            42,
        ),
        (
            vec![component("user", MATCH_TYPE_EXACT, None)],
            "Request specified MATCH_TYPE_EXACT, but set match string to null.",
            42,
        ),
        (
            vec![component("user", MATCH_TYPE_DEFAULT, Some("a"))],
            "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
            42,
        ),
        (
            vec![component("user", MATCH_TYPE_SPECIFIED, Some("a"))],
            "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
            42,
        ),
        (vec![component("user", 5, None)], "Unknown match type 5", 42),
    ];
    for (components, text, code) in cases {
        let err = store.describe(&components, false).expect_err("invalid filter");
        assert_eq!((err.to_string().as_str(), err.error_code()), (text, code), "{components:?}");
    }
}

#[test]
fn client_quotas_with_default_name() {
    // ClientQuotasRequestTest.testClientQuotasWithDefaultName: a client-id literally called
    // `<default>` is not the default entity.
    let mut store = ClientQuotas::new();
    let e = ClientQuotaEntity::from_wire([("client-id", Some("<default>"))]).expect("valid");
    store.alter(&e, PRODUCER_BYTE_RATE, Some(20000.0)).expect("valid");
    let got = store.describe(&exact_components(&e), true).expect("valid");
    assert_eq!(got, vec![(e, BTreeMap::from([(PRODUCER_BYTE_RATE.to_owned(), 20000.0)]))]);
    let defaults =
        store.describe(&[FilterComponent::of_default_entity("client-id")], true).expect("valid");
    assert_eq!(defaults, vec![]);
    assert_eq!(store.quota_for(QuotaType::Produce, "u", "other"), None);
    assert_eq!(
        store.quota_for(QuotaType::Produce, "u", "<default>"),
        Some((key("", "<default>"), 20000.0))
    );
}
