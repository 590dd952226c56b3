//! The definition of a config key, in the style of Kafka's `ConfigDef`: its name, type,
//! validator, importance, documentation and broker synonyms (with their units). One table of
//! these ([`super::TOPIC_CONFIGS`]) drives parsing, `to_properties`, the broker defaults,
//! DescribeConfigs' types and synonyms, and the generated docs/configuration.md.

use std::collections::{BTreeMap, BTreeSet};

use seglog_format::TimestampType;

use super::{BrokerCompressionType, CleanupPolicy, ConfigError, DurabilityMode};

/// Kafka's `ConfigDef.Type`, with the ids DescribeConfigs v3+ carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    Boolean = 1,
    String = 2,
    Int = 3,
    Short = 4,
    Long = 5,
    Double = 6,
    List = 7,
    Class = 8,
    Password = 9,
}

impl ConfigType {
    /// DescribeConfigs' id.
    pub const fn id(self) -> i8 {
        self as i8
    }

    /// Kafka's name, as its documentation prints it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Boolean => "boolean",
            Self::String => "string",
            Self::Int => "int",
            Self::Short => "short",
            Self::Long => "long",
            Self::Double => "double",
            Self::List => "list",
            Self::Class => "class",
            Self::Password => "password",
        }
    }
}

/// Kafka's `ConfigDef.Importance`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Importance {
    High,
    Medium,
    Low,
}

/// The valid values of a key (Kafka's `ConfigDef.Validator`s that storage's keys use).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Validator {
    /// Any value of the type.
    Any,
    /// At least this (`ConfigDef.Range.atLeast`).
    AtLeast(i64),
    /// Between the two, inclusive (`ConfigDef.Range.between`).
    Between(i64, i64),
    /// `retention.ms`: at least -1 (forever); a broker synonym's negative value means forever.
    Retention,
    /// `compression.gzip.level`: -1 (the codec's default) or 1 to 9.
    GzipLevel,
    /// A ratio between 0 and 1.
    Ratio,
}

impl Validator {
    /// The lower bound, for documentation.
    pub fn describe(self) -> String {
        match self {
            Self::Any => String::new(),
            Self::AtLeast(min) => format!("[{min},...]"),
            Self::Between(min, max) => format!("[{min},...,{max}]"),
            Self::Retention => "[-1,...]".to_owned(),
            Self::GzipLevel => "[1,...,9] or -1".to_owned(),
            Self::Ratio => "[0,...,1]".to_owned(),
        }
    }

    fn check(self, key: &str, text: &str, value: i64) -> Result<(), ConfigError> {
        let (min, max) = match self {
            Self::Any | Self::Ratio => return Ok(()),
            Self::AtLeast(min) => (min, i64::MAX),
            Self::Between(min, max) => (min, max),
            Self::Retention => (-1, i64::MAX),
            Self::GzipLevel => {
                if value == 0 || !(-1..=9).contains(&value) {
                    return Err(ConfigError::invalid(
                        key,
                        text,
                        "value must be -1 or between 1 and 9",
                    ));
                }
                return Ok(());
            }
        };
        if value < min {
            return Err(ConfigError::invalid(key, text, format!("value must be at least {min}")));
        }
        if value > max {
            return Err(ConfigError::invalid(
                key,
                text,
                format!("value must be no more than {max}"),
            ));
        }
        Ok(())
    }
}

/// The unit of a broker synonym whose value is converted (`log.retention.hours`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// The topic key's own unit.
    Same,
    /// Minutes, for a key in milliseconds (an `INT`).
    Minutes,
    /// Hours, for a key in milliseconds (an `INT`).
    Hours,
}

impl Unit {
    /// The synonym's value in the topic key's unit, as text.
    pub(crate) fn to_topic_unit(self, key: &str, text: &str) -> Result<String, ConfigError> {
        let factor: i64 = match self {
            Self::Same => return Ok(text.to_owned()),
            Self::Minutes => 60 * 1000,
            Self::Hours => 60 * 60 * 1000,
        };
        let value: i32 =
            text.parse().map_err(|_| ConfigError::invalid(key, text, "not a 32-bit integer"))?;
        Ok((i64::from(value) * factor).to_string())
    }

    /// The synonym's type: converted ones are Kafka's `INT` hours or minutes.
    pub const fn config_type(self, topic_type: ConfigType) -> ConfigType {
        match self {
            Self::Same => topic_type,
            Self::Minutes | Self::Hours => ConfigType::Int,
        }
    }
}

/// One topic key (Kafka's `ConfigDef.ConfigKey`).
#[derive(Debug, Clone, Copy)]
pub struct ConfigKey {
    /// Kafka's name (`segment.bytes`).
    pub name: &'static str,
    /// Kafka's type.
    pub config_type: ConfigType,
    /// The valid values.
    pub validator: Validator,
    /// The broker keys that give its default, first set wins (`log.retention.ms`, then
    /// `log.retention.minutes`, then `log.retention.hours`).
    pub synonyms: &'static [(&'static str, Unit)],
    /// Kafka's importance.
    pub importance: Importance,
    /// What it does.
    pub doc: &'static str,
    /// Kafka's default where seglog's differs (or `Some("")` for seglog's own keys).
    pub kafka_default: Option<&'static str>,
}

/// Reads typed values from a key-value map with Kafka's `ConfigDef` parsing rules: the one
/// parser of topic keys, storage's broker keys and the broker's own.
#[derive(Debug)]
pub struct Reader<'a> {
    pub(crate) properties: &'a BTreeMap<String, String>,
}

impl<'a> Reader<'a> {
    /// A reader over `properties` (`server.properties` keys, or a topic's).
    pub fn new(properties: &'a BTreeMap<String, String>) -> Self {
        Self { properties }
    }
}

impl Reader<'_> {
    /// The trimmed value of `key`, if set.
    pub fn raw(&self, key: &str) -> Option<&str> {
        self.properties.get(key).map(|value| value.trim())
    }

    /// The value of `key`, or `default` when it is not set.
    pub fn value<T: ConfigValue + Clone>(
        &self,
        key: &str,
        default: &T,
        validator: Validator,
    ) -> Result<T, ConfigError> {
        match self.raw(key) {
            Some(text) => T::parse(key, text, validator),
            None => Ok(default.clone()),
        }
    }

    /// A `LONG` of at least `min`.
    pub(crate) fn long(&self, key: &str, default: i64, min: i64) -> Result<i64, ConfigError> {
        self.value(key, &default, Validator::AtLeast(min))
    }

    /// An `INT` in `min..=max`.
    pub(crate) fn int(
        &self,
        key: &str,
        default: i32,
        min: i64,
        max: i64,
    ) -> Result<i32, ConfigError> {
        self.value(key, &default, Validator::Between(min, max))
    }

    /// An `INT` of at least `min` (itself at least 0), as `u32`.
    pub(crate) fn uint(&self, key: &str, default: u32, min: i64) -> Result<u32, ConfigError> {
        assert!(min >= 0, "uint keys have a non-negative minimum");
        self.value(key, &default, Validator::AtLeast(min))
    }
}

/// A typed config value: parsed from and written as Kafka's text.
pub trait ConfigValue: Sized {
    /// Parses `text` (trimmed), checking `validator`.
    fn parse(key: &str, text: &str, validator: Validator) -> Result<Self, ConfigError>;
    /// The value as Kafka writes it.
    fn to_text(&self) -> String;
}

impl ConfigValue for i64 {
    fn parse(key: &str, text: &str, validator: Validator) -> Result<Self, ConfigError> {
        let value: i64 =
            text.parse().map_err(|_| ConfigError::invalid(key, text, "not a 64-bit integer"))?;
        validator.check(key, text, value)?;
        Ok(value)
    }

    fn to_text(&self) -> String {
        self.to_string()
    }
}

impl ConfigValue for i32 {
    fn parse(key: &str, text: &str, validator: Validator) -> Result<Self, ConfigError> {
        let value: i32 =
            text.parse().map_err(|_| ConfigError::invalid(key, text, "not a 32-bit integer"))?;
        validator.check(key, text, i64::from(value))?;
        Ok(value)
    }

    fn to_text(&self) -> String {
        self.to_string()
    }
}

/// An `INT` whose validator keeps it non-negative.
impl ConfigValue for u32 {
    fn parse(key: &str, text: &str, validator: Validator) -> Result<Self, ConfigError> {
        let value = i32::parse(key, text, validator)?;
        u32::try_from(value)
            .map_err(|_| ConfigError::invalid(key, text, "value must be at least 0"))
    }

    fn to_text(&self) -> String {
        self.to_string()
    }
}

/// A `LONG` whose validator keeps it non-negative.
impl ConfigValue for u64 {
    fn parse(key: &str, text: &str, validator: Validator) -> Result<Self, ConfigError> {
        let value = i64::parse(key, text, validator)?;
        u64::try_from(value)
            .map_err(|_| ConfigError::invalid(key, text, "value must be at least 0"))
    }

    fn to_text(&self) -> String {
        self.to_string()
    }
}

/// An `INT` used as a size or count.
impl ConfigValue for usize {
    fn parse(key: &str, text: &str, validator: Validator) -> Result<Self, ConfigError> {
        let value = i32::parse(key, text, validator)?;
        usize::try_from(value)
            .map_err(|_| ConfigError::invalid(key, text, "value must be at least 0"))
    }

    fn to_text(&self) -> String {
        self.to_string()
    }
}

impl ConfigValue for f64 {
    fn parse(key: &str, text: &str, validator: Validator) -> Result<Self, ConfigError> {
        let value: f64 =
            text.parse().map_err(|_| ConfigError::invalid(key, text, "not a number"))?;
        if validator == Validator::Ratio && !(0.0..=1.0).contains(&value) {
            return Err(ConfigError::invalid(key, text, "value must be between 0 and 1"));
        }
        Ok(value)
    }

    fn to_text(&self) -> String {
        format!("{self:?}")
    }
}

impl ConfigValue for bool {
    fn parse(key: &str, text: &str, _validator: Validator) -> Result<Self, ConfigError> {
        if text.eq_ignore_ascii_case("true") {
            Ok(true)
        } else if text.eq_ignore_ascii_case("false") {
            Ok(false)
        } else {
            Err(ConfigError::invalid(key, text, "expected true or false"))
        }
    }

    fn to_text(&self) -> String {
        self.to_string()
    }
}

/// A `cleanup.policy` list: comma-separated `compact` and `delete`, possibly empty.
impl ConfigValue for BTreeSet<CleanupPolicy> {
    fn parse(key: &str, text: &str, _validator: Validator) -> Result<Self, ConfigError> {
        let mut policies = BTreeSet::new();
        if text.is_empty() {
            return Ok(policies);
        }
        for item in text.split(',').map(str::trim) {
            let policy = match item {
                "compact" => CleanupPolicy::Compact,
                "delete" => CleanupPolicy::Delete,
                _ => {
                    return Err(ConfigError::invalid(
                        key,
                        text,
                        format!("invalid item {item:?}: each item must be compact or delete"),
                    ));
                }
            };
            policies.insert(policy);
        }
        Ok(policies)
    }

    fn to_text(&self) -> String {
        let names: Vec<&str> = self.iter().map(|policy| policy.name()).collect();
        names.join(",")
    }
}

/// One of a fixed set of names (Kafka's `ValidString`, case-sensitive).
fn choice<T: Copy>(
    key: &str,
    text: &str,
    all: &[T],
    name: fn(T) -> &'static str,
) -> Result<T, ConfigError> {
    all.iter().copied().find(|candidate| name(*candidate) == text).ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|candidate| name(*candidate)).collect();
        ConfigError::invalid(key, text, format!("string must be one of: {}", names.join(", ")))
    })
}

impl ConfigValue for BrokerCompressionType {
    fn parse(key: &str, text: &str, _validator: Validator) -> Result<Self, ConfigError> {
        choice(key, text, &Self::ALL, Self::name)
    }

    fn to_text(&self) -> String {
        self.name().to_owned()
    }
}

/// `message.timestamp.type`: `CreateTime` or `LogAppendTime`, never `NoTimestampType`.
impl ConfigValue for TimestampType {
    fn parse(key: &str, text: &str, _validator: Validator) -> Result<Self, ConfigError> {
        choice(key, text, &[Self::CreateTime, Self::LogAppendTime], Self::name)
    }

    fn to_text(&self) -> String {
        self.name().to_owned()
    }
}

impl ConfigValue for DurabilityMode {
    fn parse(key: &str, text: &str, _validator: Validator) -> Result<Self, ConfigError> {
        choice(key, text, &Self::ALL, Self::name)
    }

    fn to_text(&self) -> String {
        self.name().to_owned()
    }
}
