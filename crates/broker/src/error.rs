//! The broker's one error type, built on `kafka_protocol::ResponseError` (Kafka's
//! `org.apache.kafka.common.protocol.Errors`), and the one mapping from storage errors to wire
//! codes.
//!
//! A [`Error::Wire`] is an answer: its code (and message, where the response has a field for
//! one) goes into the response for one partition or resource. Every other variant is a
//! connection-level failure: the request cannot be answered, and the connection is closed, as
//! Kafka closes it.

use kafka_protocol::ResponseError;
use kafka_protocol::messages::ApiKey;

/// The error code of success, which `ResponseError` has no variant for.
pub(crate) const NONE: i16 = 0;

/// A boxed cause: `kafka-protocol` codecs fail with `anyhow` errors, which the broker carries
/// as a plain `std::error::Error`.
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

/// Why the broker did not answer as asked.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A per-partition or per-resource answer: Kafka's code and, where the response carries
    /// one, its message.
    #[error("{code}{}", message.as_deref().map(|text| format!(": {text}")).unwrap_or_default())]
    Wire { code: ResponseError, message: Option<String> },
    /// A frame too short to hold an API key and version.
    #[error("a {len}-byte request has no header")]
    NoHeader { len: usize },
    /// An API key Kafka does not define.
    #[error("unknown api key {0}")]
    UnknownApiKey(i16),
    /// A request header that does not decode.
    #[error("request header does not decode: {0}")]
    HeaderDecode(#[source] Cause),
    /// An API Kafka defines that this broker does not serve.
    #[error("api {0:?} is not enabled on this broker")]
    NotEnabled(ApiKey),
    /// A version outside the advertised range (ApiVersions is answered instead).
    #[error("{api:?} v{version} is not supported (v{min} to v{max} are)")]
    UnsupportedVersion { api: ApiKey, version: i16, min: i16, max: i16 },
    /// A request body that does not decode with its API's codec.
    #[error("{api:?} v{version} body does not decode: {source}")]
    Decode {
        api: ApiKey,
        version: i16,
        #[source]
        source: Cause,
    },
    /// A response (`what`: its body or header) that does not encode.
    #[error("{what} does not encode: {source}")]
    Encode {
        what: &'static str,
        #[source]
        source: Cause,
    },
    /// A Fetch response's records, left in their segment's file, could not be read from it
    /// (for a response that had to be sent from memory after all).
    #[error("fetched records could not be read from their file: {0}")]
    FileSend(#[source] seglog_storage::Error),
    /// A response whose size does not fit the frame's `i32`.
    #[error("response larger than 2 GiB")]
    ResponseTooLarge,
    /// A task (`what`: a handler on the blocking pool, a partition's produce) that panicked or
    /// was cancelled.
    #[error("{what} failed: {source}")]
    Task {
        what: &'static str,
        #[source]
        source: tokio::task::JoinError,
    },
    /// An acks=0 produce with a failed partition: Kafka closes the connection so that the
    /// client notices and refreshes its metadata (`KafkaApis.handleProduceRequest`).
    #[error(
        "acks=0 produce failed with error {code} for partition {partition}; closing as Kafka does"
    )]
    AcksZeroFailed { code: i16, partition: i32 },
    /// An internal topic (`__consumer_offsets`, `__transaction_state`) did not replay at start
    /// (`at`: the partition, offset, group or transactional id).
    // The cause is the source, so that a chain (`{:#}`) names it once.
    #[error("{at}")]
    GroupLoad {
        at: String,
        #[source]
        source: Cause,
    },
    /// A replay of an internal topic that stopped moving forward.
    #[error("{topic}-{partition}: no progress reading at offset {offset}")]
    GroupLoadStalled { topic: &'static str, partition: i32, offset: i64 },
}

impl Error {
    /// A wire answer without a message.
    pub(crate) fn wire(code: ResponseError) -> Self {
        Self::Wire { code, message: None }
    }

    /// A wire answer with a message for the response's message field.
    pub(crate) fn wire_with(code: ResponseError, message: impl Into<String>) -> Self {
        Self::Wire { code, message: Some(message.into()) }
    }

    /// The code a response carries for this error: its own for a wire answer,
    /// UNKNOWN_SERVER_ERROR for a failure that has none.
    pub(crate) fn code(&self) -> i16 {
        match self {
            Self::Wire { code, .. } => code.code(),
            _ => ResponseError::UnknownServerError.code(),
        }
    }

    /// The message a response carries for this error.
    pub(crate) fn message(&self) -> String {
        match self {
            Self::Wire { message: Some(message), .. } => message.clone(),
            Self::Wire { message: None, code } => code.to_string(),
            other => other.to_string(),
        }
    }
}

impl From<ResponseError> for Error {
    fn from(code: ResponseError) -> Self {
        Self::wire(code)
    }
}

/// The wire code a storage error answers with: the one place storage errors become codes.
pub(crate) fn storage_error(error: &seglog_storage::Error) -> ResponseError {
    use seglog_storage::Error as Storage;
    match error {
        Storage::UnknownTopicOrPartition { .. } => ResponseError::UnknownTopicOrPartition,
        // Below the local segments: the Fetch reads it from the bucket before it gets here,
        // unless tiering is off on this broker.
        Storage::OffsetOutOfRange { .. } | Storage::OffsetNotLocal { .. } => {
            ResponseError::OffsetOutOfRange
        }
        Storage::Validation(validation) => ResponseError::try_from_code(validation.error_code())
            .unwrap_or(ResponseError::UnknownServerError),
        Storage::TopicAlreadyExists { .. } => ResponseError::TopicAlreadyExists,
        Storage::InvalidArgument(_) => ResponseError::InvalidRequest,
        Storage::Io { .. }
        | Storage::Offline { .. }
        | Storage::Corrupt { .. }
        | Storage::CorruptLog { .. }
        | Storage::CorruptIndex { .. }
        | Storage::Malformed { .. } => ResponseError::KafkaStorageError,
        Storage::OffsetOverflow { .. } | Storage::CleaningAborted { .. } => {
            ResponseError::UnknownServerError
        }
        Storage::LogDirNotFound { .. } => ResponseError::LogDirNotFound,
    }
}

/// The leader-epoch check of Fetch, ListOffsets and OffsetForLeaderEpoch: a client's epoch
/// older than the partition's is fenced, a newer one is unknown; -1 means not given.
pub(crate) fn check_leader_epoch(requested: i32, current: i32) -> i16 {
    if requested < 0 || requested == current {
        NONE
    } else if requested < current {
        ResponseError::FencedLeaderEpoch.code()
    } else {
        ResponseError::UnknownLeaderEpoch.code()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_and_where() {
        let error = Error::wire_with(ResponseError::InvalidConfig, "bad value");
        assert_eq!(error.to_string(), "InvalidConfig: bad value");
        assert_eq!(error.code(), 40);
        assert_eq!(Error::NoHeader { len: 3 }.to_string(), "a 3-byte request has no header");
        assert_eq!(Error::ResponseTooLarge.code(), -1);
    }
}
