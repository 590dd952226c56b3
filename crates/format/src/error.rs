//! The one error type of `seglog-format`: every variant says what was wrong and, where it applies,
//! where in the input it was found.

/// Why bytes could not be decoded as Kafka data.
///
/// Positions are byte positions inside the slice that was given to the decoder, unless the variant
/// is [`DecodeError::At`], which locates an inner error inside a larger input such as a `.log` file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ended before a field or a declared length could be read.
    #[error("truncated input: needed {needed} bytes, only {available} available")]
    Truncated { needed: usize, available: usize },

    /// A stored checksum does not match the bytes it covers.
    #[error("record is corrupt (stored crc = {stored}, computed crc = {computed})")]
    CrcMismatch { stored: u32, computed: u32 },

    /// The magic byte is not one that this reader knows (0, 1 or 2).
    #[error("unsupported magic byte {0}")]
    UnsupportedMagic(i8),

    /// A varint ran past five bytes or past the end of its buffer.
    #[error("invalid varint at byte {at}")]
    InvalidVarint { at: usize },

    /// A varlong ran past ten bytes or past the end of its buffer.
    #[error("invalid varlong at byte {at}")]
    InvalidVarlong { at: usize },

    /// A log entry's size field is below the smallest legal entry (Kafka 0.7 files end here).
    #[error(
        "entry size {size} is smaller than the minimum record overhead (14): not a Kafka 0.8+ log"
    )]
    EntryTooSmall { size: i32 },

    /// A v2 batch is smaller than its fixed header.
    #[error("the size {size} is smaller than the minimum allowed overhead 61")]
    BatchTooSmall { size: i64 },

    /// A v2 batch declares more bytes than a limit allows.
    #[error("batch of {size} bytes exceeds the limit of {limit_bytes} bytes")]
    BatchTooLarge { size: i64, limit_bytes: usize },

    /// The number of records in a batch differs from its `recordsCount` field.
    #[error("incorrect declared batch size: {declared} records declared, {detail}")]
    RecordCountMismatch { declared: i32, detail: &'static str },

    /// A record inside a batch is malformed.
    #[error("invalid record at byte {at}: {reason}")]
    InvalidRecord { at: usize, reason: &'static str },

    /// A record's length prefix disagrees with the bytes its fields used.
    #[error(
        "invalid record size: expected to read {expected} bytes in record payload, but instead read {actual}"
    )]
    InvalidRecordSize { expected: usize, actual: usize },

    /// The codec id in the attributes is not one of Kafka's.
    #[error("unknown compression type id {0}")]
    UnknownCompression(u8),

    /// A compressed payload could not be decompressed.
    #[error("cannot decompress {codec} payload: {message}")]
    Decompression { codec: &'static str, message: String },

    /// A compressed payload inflates beyond the configured bound.
    #[error("{codec} payload decompresses to more than the limit of {limit_bytes} bytes")]
    DecompressedTooLarge { codec: &'static str, limit_bytes: usize },

    /// A legacy (magic 0/1) compressed wrapper message is malformed.
    #[error("invalid compressed wrapper message: {reason}")]
    InvalidWrapper { reason: &'static str },

    /// A control record's key or value is malformed.
    #[error("invalid control record: {reason}")]
    InvalidControlRecord { reason: &'static str },

    /// A `__consumer_offsets` record key or value is malformed.
    #[error("invalid {what} of a group coordinator record: {reason}")]
    InvalidGroupRecord { what: &'static str, reason: String },

    /// A schema-described message (a coordinator record, a KRaft control record) did not read;
    /// the text is Kafka's.
    #[error(transparent)]
    Message(#[from] crate::schema::message::MessageError),
    /// A file name is not one of Kafka's segment or index file names.
    #[error("not a Kafka segment file name: {name:?}")]
    InvalidFileName { name: String },

    /// A directory name is not `topic-partition` or one of its `.uuid-delete` forms.
    #[error(
        "{name:?} is not in the form of topic-partition or topic-partition.uniqueId-delete (or -future, -stray): {reason}"
    )]
    InvalidPartitionDir { name: String, reason: &'static str },

    /// A topic name breaks Kafka's rules.
    #[error("invalid topic name {name:?}: {reason}")]
    InvalidTopic { name: String, reason: &'static str },

    /// A checkpoint text file is malformed.
    #[error("malformed checkpoint file at line {line}: {reason}")]
    Checkpoint { line: usize, reason: String },

    /// A field of a schema-described structure could not be read (Kafka's `Schema.read`, which
    /// names the field, nesting the inner error of an array element's field).
    #[error("error reading field '{field}': {source}")]
    SchemaField { field: &'static str, source: Box<DecodeError> },

    /// An array's declared element count is negative, or larger than the bytes left (Kafka's
    /// `ArrayOf.read`).
    #[error("invalid array size {size}: {available} bytes left")]
    ArraySize { size: i32, available: usize },

    /// A versioned file holds a version this reader does not know.
    #[error("unknown {file} version {version}")]
    UnsupportedVersion { file: &'static str, version: i16 },

    /// A value cannot be encoded in Kafka's format (an out-of-range offset or length).
    #[error("cannot encode: {reason}")]
    Unencodable { reason: &'static str },

    /// An error found at a byte position of a larger input, such as a `.log` file.
    #[error("at byte position {position}: {source}")]
    At { position: u64, source: Box<DecodeError> },
}

impl DecodeError {
    /// Locates this error at `position` of an enclosing input.
    #[must_use]
    pub fn at(self, position: u64) -> Self {
        Self::At { position, source: Box::new(self) }
    }

    /// The innermost error, with any [`DecodeError::At`] wrappers removed.
    pub fn root(&self) -> &Self {
        match self {
            Self::At { source, .. } => source.root(),
            other => other,
        }
    }
}

/// Shorthand for results of this crate.
pub type Result<T, E = DecodeError> = std::result::Result<T, E>;
