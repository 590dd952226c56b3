//! Kafka's schema-described messages (the JSON schemas under `common/message` and the
//! coordinators' `resources/common/message`), read the way the generated Java `*Data` classes
//! read them and written as their generated `*JsonConverter`s and Jackson write them.
//!
//! A schema is a [`Message`]: a root [`Struct`] of [`Field`]s, each present in some
//! [`Versions`], maybe nullable, maybe tagged (flexible versions only). [`read`] turns bytes into
//! a [`Value`] tree; [`to_json`] prints it. Errors are [`MessageError`]s whose texts are the
//! ones Kafka's `ByteBufferAccessor` and generated readers throw.
//!
//! Wire encodings (Kafka's `Type`s): integers big-endian; a string is an int16 length (or, in a
//! flexible version, an unsigned varint of length + 1) then UTF-8; bytes and arrays use an int32
//! length (flexible: unsigned varint of length + 1); -1 (flexible: 0) is null. A flexible struct
//! ends with its tagged fields: an unsigned varint count, then per field its tag, size and value.

use std::fmt::Write as _;

use crate::error::{DecodeError, Result};
use crate::java::{BASE64_STANDARD, BASE64_URL_SAFE, base64, java_double_to_string};

/// Why a schema-described message did not read, in the words of Kafka's Java readers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MessageError {
    /// The bytes ended inside a fixed-size field (a `BufferUnderflowException`, which has no
    /// message: Java prints `null`).
    #[error("null")]
    Underflow,
    /// A message's leading int16 version is missing.
    #[error("the version is missing")]
    MissingVersion,
    /// An unsigned varint has its continuation bit set in the fifth byte.
    #[error(
        "Varint is too long, the most significant bit in the 5th byte is set, converted value: {value:x}"
    )]
    VarintTooLong { value: u32 },
    /// A string or bytes field declares more bytes than are left.
    #[error("Error reading byte array of {size} byte(s): only {available} byte(s) available")]
    ByteArray { size: i32, available: usize },
    /// The version is outside the struct's versions.
    #[error("Can't read version {version} of {name}")]
    UnsupportedVersion { name: &'static str, version: i16 },
    /// A known tag appears in a version where its field is not tagged.
    #[error("Tag {tag} is not valid for version {version}")]
    InvalidTag { tag: u32, version: i16 },
    /// A non-nullable field holds null.
    #[error("non-nullable field {name} was serialized as null")]
    NullField { name: String },
    /// A string is longer than 32767 bytes.
    #[error("string field {name} had invalid length {length}")]
    StringLength { name: String, length: i32 },
    /// A string is not UTF-8, read by a strict [`Reader`] (Java would replace the bytes).
    #[error("string field {name} is not UTF-8")]
    NotUtf8 { name: String },
    /// An array declares more elements than there are bytes left.
    #[error(
        "Tried to allocate a collection of size {length}, but there are only {available} bytes remaining."
    )]
    CollectionTooLarge { length: i32, available: usize },
}

/// An inclusive range of versions; empty when `lo > hi`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Versions {
    lo: i16,
    hi: i16,
}

impl Versions {
    /// No version.
    pub const NONE: Self = Self { lo: 1, hi: 0 };
    /// Every version (`0+`).
    pub const ALL: Self = Self::from(0);

    /// `lo-hi`.
    pub const fn range(lo: i16, hi: i16) -> Self {
        Self { lo, hi }
    }

    /// `N+`.
    pub const fn from(lo: i16) -> Self {
        Self { lo, hi: i16::MAX }
    }

    /// Exactly `N`.
    pub const fn only(version: i16) -> Self {
        Self { lo: version, hi: version }
    }

    /// Whether `version` is in the range.
    pub const fn contains(self, version: i16) -> bool {
        self.lo <= version && version <= self.hi
    }
}

/// A field type.
#[derive(Debug, Clone, Copy)]
pub enum Ty {
    Bool,
    Int8,
    Int16,
    Uint16,
    Int32,
    Int64,
    Float64,
    Uuid,
    Str,
    Bytes,
    Struct(&'static Struct),
    Array(&'static Ty),
}

/// A tagged field's default: the JSON writer omits a tagged field holding it.
#[derive(Debug, Clone, Copy)]
pub enum Default {
    Int(i64),
    Null,
    /// An empty array (an array field's default when its schema names none).
    Empty,
}

impl Default {
    fn value(self) -> Value {
        match self {
            Self::Int(value) => Value::Int(value),
            Self::Null => Value::Null,
            Self::Empty => Value::Array(Vec::new()),
        }
    }
}

/// One field of a struct.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    /// The JSON name (Kafka's `camelCaseName`).
    pub name: &'static str,
    pub ty: Ty,
    pub versions: Versions,
    pub nullable: Versions,
    /// The tag, the tagged versions and the default.
    pub tag: Option<(u32, Versions, Default)>,
}

impl Field {
    /// A field present in `versions`, never null.
    pub const fn new(name: &'static str, ty: Ty, versions: Versions) -> Self {
        Self { name, ty, versions, nullable: Versions::NONE, tag: None }
    }

    /// The same field, nullable in `versions`.
    #[must_use]
    pub const fn nullable(mut self, versions: Versions) -> Self {
        self.nullable = versions;
        self
    }

    /// The same field, tagged (present only as a tag in `versions`).
    #[must_use]
    pub const fn tagged(mut self, tag: u32, versions: Versions, default: Default) -> Self {
        self.tag = Some((tag, versions, default));
        self
    }

    fn is_tagged_in(&self, version: i16) -> bool {
        self.tag.is_some_and(|(_, versions, _)| versions.contains(version))
    }
}

/// A struct: a message or a nested structure.
#[derive(Debug)]
pub struct Struct {
    pub name: &'static str,
    pub versions: Versions,
    pub fields: &'static [Field],
}

/// A top-level message.
#[derive(Debug)]
pub struct Message {
    pub root: Struct,
    pub flexible: Versions,
}

impl Message {
    /// A record key (Kafka's coordinator keys): one version, never flexible.
    pub const fn key(name: &'static str, version: i16, fields: &'static [Field]) -> Self {
        Self {
            root: Struct { name, versions: Versions::only(version), fields },
            flexible: Versions::NONE,
        }
    }

    /// A record value of version 0 only, flexible (the KIP-848 and KRaft records).
    pub const fn flexible_v0(name: &'static str, fields: &'static [Field]) -> Self {
        Self { root: Struct { name, versions: Versions::only(0), fields }, flexible: Versions::ALL }
    }
}

/// A decoded value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    /// A float64, as its IEEE 754 bits (so that values compare as Java's `equals` does).
    Float(u64),
    Uuid([u8; 16]),
    Str(String),
    Bytes(Vec<u8>),
    Array(Vec<Value>),
    Object(Vec<(&'static str, Value)>),
}

impl Value {
    /// The field `name` of an object.
    pub fn get(&self, name: &str) -> Option<&Value> {
        match self {
            Self::Object(fields) => {
                fields.iter().find(|(key, _)| *key == name).map(|(_, value)| value)
            }
            _ => None,
        }
    }

    /// The field `name` of an object, to change it.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Value> {
        match self {
            Self::Object(fields) => {
                fields.iter_mut().find(|(key, _)| *key == name).map(|(_, value)| value)
            }
            _ => None,
        }
    }

    /// The integer, if this is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Self::Int(value) => Some(*value),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Str(text) => Some(text),
            _ => None,
        }
    }

    /// The elements, if this is an array.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Self::Array(items) => Some(items),
            _ => None,
        }
    }
}

/// A big-endian reader with the failures of Kafka's `ByteBufferAccessor`.
#[derive(Debug)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    /// Whether a string that is not UTF-8 is an error rather than replaced.
    strict_utf8: bool,
}

fn message_error(error: MessageError) -> DecodeError {
    DecodeError::Message(error)
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, at: 0, strict_utf8: false }
    }

    /// A reader that refuses strings that are not UTF-8 ([`MessageError::NotUtf8`]), for
    /// state that seglog keeps (Java's readers replace malformed bytes).
    pub fn strict(bytes: &'a [u8]) -> Self {
        Self { bytes, at: 0, strict_utf8: true }
    }

    /// The bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.at)
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N]> {
        let chunk = self
            .bytes
            .get(self.at..)
            .and_then(<[u8]>::first_chunk::<N>)
            .ok_or(message_error(MessageError::Underflow))?;
        self.at += N;
        Ok(*chunk)
    }

    /// A message's leading version ([`MessageError::MissingVersion`] if absent).
    pub fn version(&mut self) -> Result<i16> {
        self.take::<2>()
            .map(i16::from_be_bytes)
            .map_err(|_| message_error(MessageError::MissingVersion))
    }

    /// An int16.
    pub fn i16(&mut self) -> Result<i16> {
        self.take::<2>().map(i16::from_be_bytes)
    }

    fn i32(&mut self) -> Result<i32> {
        self.take::<4>().map(i32::from_be_bytes)
    }

    /// An unsigned varint (at most five bytes).
    pub fn unsigned_varint(&mut self) -> Result<i32> {
        let mut value: u32 = 0;
        for idx in 0..5 {
            let [byte] = self.take::<1>()?;
            value |= u32::from(byte & 0x7F) << (7 * idx);
            if byte & 0x80 == 0 {
                return Ok(value as i32);
            }
        }
        Err(message_error(MessageError::VarintTooLong { value }))
    }

    fn array(&mut self, size: i32) -> Result<&'a [u8]> {
        let available = self.remaining();
        let len = usize::try_from(size).unwrap_or(0);
        if len > available {
            return Err(message_error(MessageError::ByteArray { size, available }));
        }
        let bytes = self.bytes.get(self.at..self.at + len).unwrap_or_default();
        self.at += len;
        Ok(bytes)
    }
}

/// Reads a message at `version`, as the generated `read(Readable, short)` does.
pub fn read(message: &Message, reader: &mut Reader<'_>, version: i16) -> Result<Value> {
    read_struct(&message.root, reader, version, message.flexible.contains(version))
}

/// Reads a message whose int16 version leads `bytes` (a coordinator record's key or value):
/// the version and the value.
pub fn read_versioned(message: &Message, bytes: &[u8]) -> Result<(i16, Value)> {
    let mut reader = Reader::new(bytes);
    let version = reader.version()?;
    Ok((version, read(message, &mut reader, version)?))
}

fn read_struct(
    st: &Struct,
    reader: &mut Reader<'_>,
    version: i16,
    flexible: bool,
) -> Result<Value> {
    if !st.versions.contains(version) {
        return Err(message_error(MessageError::UnsupportedVersion { name: st.name, version }));
    }
    let mut fields: Vec<(&'static str, Value)> = Vec::with_capacity(st.fields.len());
    let mut tagged: Vec<(usize, Value)> = Vec::new();
    for field in st.fields {
        if !field.versions.contains(version) {
            continue;
        }
        if field.is_tagged_in(version) {
            // A tagged field: its default until the tag section says otherwise.
            let default = field.tag.map_or(Value::Null, |(_, _, default)| default.value());
            tagged.push((fields.len(), default.clone()));
            fields.push((field.name, default));
        } else {
            let read = ValueRead { nullable: field.nullable.contains(version), version, flexible };
            fields.push((field.name, read.value(field.name, &field.ty, reader, false)?));
        }
    }
    if flexible {
        read_tagged_fields(st, reader, version, &mut fields)?;
    }
    // The JSON writer leaves out tagged fields that hold their default.
    for (idx, default) in tagged.into_iter().rev() {
        if fields.get(idx).is_some_and(|(_, value)| *value == default) {
            fields.remove(idx);
        }
    }
    Ok(Value::Object(fields))
}

/// A flexible struct's tag section: known tags replace their field's default, unknown ones are
/// skipped.
fn read_tagged_fields(
    st: &Struct,
    reader: &mut Reader<'_>,
    version: i16,
    fields: &mut [(&'static str, Value)],
) -> Result<()> {
    let n_tagged = reader.unsigned_varint()?;
    for _ in 0..n_tagged {
        let tag = reader.unsigned_varint()? as u32;
        let size = reader.unsigned_varint()?;
        let known = st.fields.iter().find(|field| field.tag.is_some_and(|(t, ..)| t == tag));
        match known {
            Some(field) if field.is_tagged_in(version) => {
                let read = ValueRead {
                    nullable: field.nullable.contains(version),
                    version,
                    flexible: true,
                };
                let value = read.value(field.name, &field.ty, reader, true)?;
                if let Some(slot) = fields.iter_mut().find(|(name, _)| *name == field.name) {
                    slot.1 = value;
                }
            }
            Some(_) => return Err(message_error(MessageError::InvalidTag { tag, version })),
            None => {
                reader.array(size)?;
            }
        }
    }
    Ok(())
}

fn read_length(reader: &mut Reader<'_>, flexible: bool, short: bool) -> Result<i32> {
    if flexible {
        Ok(reader.unsigned_varint()?.wrapping_sub(1))
    } else if short {
        reader.i16().map(i32::from)
    } else {
        reader.i32()
    }
}

/// How one value is read: whether null is allowed, at which version, flexible or not.
#[derive(Debug, Clone, Copy)]
struct ValueRead {
    nullable: bool,
    version: i16,
    flexible: bool,
}

impl ValueRead {
    fn null_or_fail(self, name: &str) -> Result<Value> {
        if self.nullable {
            Ok(Value::Null)
        } else {
            Err(message_error(MessageError::NullField { name: name.to_owned() }))
        }
    }

    /// Reads one value of type `ty`; `name` is the field's name in error messages (with
    /// ` element` for the items of an array, as Kafka's generated code says).
    fn value(self, name: &str, ty: &Ty, reader: &mut Reader<'_>, tagged: bool) -> Result<Value> {
        Ok(match ty {
            Ty::Bool => Value::Bool(reader.take::<1>()? != [0]),
            Ty::Int8 => Value::Int(i64::from(i8::from_be_bytes(reader.take::<1>()?))),
            Ty::Int16 => Value::Int(i64::from(reader.i16()?)),
            Ty::Uint16 => Value::Int(i64::from(reader.take::<2>().map(u16::from_be_bytes)?)),
            Ty::Int32 => Value::Int(i64::from(reader.i32()?)),
            Ty::Int64 => Value::Int(reader.take::<8>().map(i64::from_be_bytes)?),
            Ty::Float64 => Value::Float(reader.take::<8>().map(u64::from_be_bytes)?),
            Ty::Uuid => Value::Uuid(reader.take::<16>()?),
            Ty::Str => {
                let length = read_length(reader, self.flexible, true)?;
                if length < 0 {
                    return self.null_or_fail(name);
                }
                if length > 0x7fff {
                    let name = name.to_owned();
                    return Err(message_error(MessageError::StringLength { name, length }));
                }
                let bytes = reader.array(length)?;
                if reader.strict_utf8 {
                    let text = std::str::from_utf8(bytes).map_err(|_| {
                        message_error(MessageError::NotUtf8 { name: name.to_owned() })
                    })?;
                    Value::Str(text.to_owned())
                } else {
                    // Java's `new String(bytes, UTF_8)` replaces malformed input.
                    Value::Str(String::from_utf8_lossy(bytes).into_owned())
                }
            }
            Ty::Bytes => {
                let length = read_length(reader, self.flexible, false)?;
                if length < 0 {
                    return self.null_or_fail(name);
                }
                Value::Bytes(reader.array(length)?.to_vec())
            }
            Ty::Struct(st) => {
                let present = if !self.nullable {
                    true
                } else if tagged {
                    reader.unsigned_varint()? > 0
                } else {
                    i8::from_be_bytes(reader.take::<1>()?) >= 0
                };
                if present {
                    read_struct(st, reader, self.version, self.flexible)?
                } else {
                    Value::Null
                }
            }
            Ty::Array(element) => self.array(name, element, reader)?,
        })
    }

    fn array(self, name: &str, element: &Ty, reader: &mut Reader<'_>) -> Result<Value> {
        let length = read_length(reader, self.flexible, false)?;
        if length < 0 {
            return self.null_or_fail(name);
        }
        let available = reader.remaining();
        if length as usize > available {
            return Err(message_error(MessageError::CollectionTooLarge { length, available }));
        }
        let element_name = format!("{name} element");
        let element_read = Self { nullable: false, ..self };
        let mut items = Vec::with_capacity(length as usize);
        for _ in 0..length {
            items.push(element_read.value(&element_name, element, reader, false)?);
        }
        Ok(Value::Array(items))
    }
}

/// Writes a message at `version`, as the generated `write(Writable, ObjectSerializationCache,
/// short)` does: `value` is an object of the message's fields (a field it lacks is written as
/// its type's zero, or null where nullable); a tagged field is written only when it differs
/// from its default, in tag order.
pub fn write(message: &Message, version: i16, value: &Value, out: &mut Vec<u8>) {
    write_struct(&message.root, version, message.flexible.contains(version), value, out);
}

fn write_struct(st: &Struct, version: i16, flexible: bool, value: &Value, out: &mut Vec<u8>) {
    let mut tagged: Vec<(u32, &Field, &Value)> = Vec::new();
    for field in st.fields {
        if !field.versions.contains(version) {
            continue;
        }
        let nullable = field.nullable.contains(version);
        let field_value = value.get(field.name);
        if let Some((tag, versions, default)) = field.tag
            && versions.contains(version)
        {
            if let Some(field_value) = field_value
                && *field_value != default.value()
            {
                tagged.push((tag, field, field_value));
            }
            continue;
        }
        let zero;
        let field_value = if let Some(present) = field_value {
            present
        } else {
            zero = zero_value(&field.ty, nullable);
            &zero
        };
        write_value(&field.ty, nullable, version, flexible, field_value, out);
    }
    if flexible {
        tagged.sort_by_key(|(tag, ..)| *tag);
        write_unsigned_varint(tagged.len() as u32, out);
        for (tag, field, field_value) in tagged {
            let mut body = Vec::new();
            let nullable = field.nullable.contains(version);
            write_value(&field.ty, nullable, version, true, field_value, &mut body);
            write_unsigned_varint(tag, out);
            write_unsigned_varint(body.len() as u32, out);
            out.extend_from_slice(&body);
        }
    }
}

/// What an absent field is written as.
fn zero_value(ty: &Ty, nullable: bool) -> Value {
    match ty {
        _ if nullable => Value::Null,
        Ty::Bool => Value::Bool(false),
        Ty::Float64 => Value::Float(0),
        Ty::Uuid => Value::Uuid([0; 16]),
        Ty::Str => Value::Str(String::new()),
        Ty::Bytes => Value::Bytes(Vec::new()),
        Ty::Struct(_) => Value::Object(Vec::new()),
        Ty::Array(_) => Value::Array(Vec::new()),
        Ty::Int8 | Ty::Int16 | Ty::Uint16 | Ty::Int32 | Ty::Int64 => Value::Int(0),
    }
}

fn write_unsigned_varint(mut value: u32, out: &mut Vec<u8>) {
    while value >= 0x80 {
        out.push((value & 0x7f) as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// A length (or -1 for null): an unsigned varint of length + 1 when flexible, else int16
/// (`short`) or int32.
fn write_length(length: Option<usize>, flexible: bool, short: bool, out: &mut Vec<u8>) {
    match (length, flexible) {
        (None, true) => out.push(0),
        (Some(n), true) => write_unsigned_varint(u32::try_from(n + 1).unwrap_or(u32::MAX), out),
        (None, false) if short => out.extend_from_slice(&(-1i16).to_be_bytes()),
        (None, false) => out.extend_from_slice(&(-1i32).to_be_bytes()),
        (Some(n), false) if short => {
            out.extend_from_slice(&i16::try_from(n).unwrap_or(i16::MAX).to_be_bytes());
        }
        (Some(n), false) => {
            out.extend_from_slice(&i32::try_from(n).unwrap_or(i32::MAX).to_be_bytes());
        }
    }
}

fn write_value(
    ty: &Ty,
    nullable: bool,
    version: i16,
    flexible: bool,
    value: &Value,
    out: &mut Vec<u8>,
) {
    let int = value.as_int().unwrap_or(0);
    match ty {
        Ty::Bool => out.push(u8::from(matches!(value, Value::Bool(true)))),
        Ty::Int8 => out.push(int as i8 as u8),
        Ty::Int16 => out.extend_from_slice(&(int as i16).to_be_bytes()),
        Ty::Uint16 => out.extend_from_slice(&(int as u16).to_be_bytes()),
        Ty::Int32 => out.extend_from_slice(&(int as i32).to_be_bytes()),
        Ty::Int64 => out.extend_from_slice(&int.to_be_bytes()),
        Ty::Float64 => {
            let bits = if let Value::Float(bits) = value { *bits } else { 0 };
            out.extend_from_slice(&bits.to_be_bytes());
        }
        Ty::Uuid => {
            let bytes = if let Value::Uuid(bytes) = value { *bytes } else { [0; 16] };
            out.extend_from_slice(&bytes);
        }
        Ty::Str | Ty::Bytes => {
            let bytes = match value {
                Value::Str(text) => Some(text.as_bytes()),
                Value::Bytes(bytes) => Some(bytes.as_slice()),
                _ if nullable => None,
                _ => Some(&[][..]),
            };
            write_length(bytes.map(<[u8]>::len), flexible, matches!(ty, Ty::Str), out);
            out.extend_from_slice(bytes.unwrap_or_default());
        }
        Ty::Struct(st) => {
            if nullable {
                // A nullable struct's presence byte (Kafka writes -1 for null, 1 otherwise).
                if matches!(value, Value::Null) {
                    out.push(0xff);
                    return;
                }
                out.push(1);
            }
            write_struct(st, version, flexible, value, out);
        }
        Ty::Array(element) => {
            let items = value.as_array();
            let items = if items.is_none() && !nullable { Some(&[][..]) } else { items };
            write_length(items.map(<[Value]>::len), flexible, false, out);
            for item in items.unwrap_or_default() {
                write_value(element, false, version, flexible, item, out);
            }
        }
    }
}

/// Jackson's compact JSON for a value.
pub fn to_json(value: &Value) -> String {
    let mut json = String::new();
    write_json(value, &mut json);
    json
}

/// Appends Jackson's compact JSON for a value: a `Uuid` as Kafka's base64url text, bytes as
/// padded standard base64.
pub fn write_json(value: &Value, json: &mut String) {
    match value {
        Value::Null => json.push_str("null"),
        Value::Bool(flag) => json.push_str(if *flag { "true" } else { "false" }),
        Value::Int(number) => {
            let _ = write!(json, "{number}");
        }
        Value::Float(bits) => json.push_str(&java_double_to_string(f64::from_bits(*bits))),
        Value::Uuid(bytes) => {
            json.push('"');
            json.push_str(&base64(bytes, BASE64_URL_SAFE, false));
            json.push('"');
        }
        Value::Str(text) => write_json_string(text, json),
        Value::Bytes(bytes) => {
            json.push('"');
            json.push_str(&base64(bytes, BASE64_STANDARD, true));
            json.push('"');
        }
        Value::Array(items) => {
            json.push('[');
            for (idx, item) in items.iter().enumerate() {
                if idx > 0 {
                    json.push(',');
                }
                write_json(item, json);
            }
            json.push(']');
        }
        Value::Object(fields) => {
            json.push('{');
            for (idx, (name, item)) in fields.iter().enumerate() {
                if idx > 0 {
                    json.push(',');
                }
                write_json_string(name, json);
                json.push(':');
                write_json(item, json);
            }
            json.push('}');
        }
    }
}

/// A JSON string as Jackson escapes it: `"` and `\`, and control characters (short forms for
/// `\b \t \n \f \r`, `\u00XX` otherwise).
pub fn write_json_string(text: &str, json: &mut String) {
    json.push('"');
    for ch in text.chars() {
        match ch {
            '"' => json.push_str("\\\""),
            '\\' => json.push_str("\\\\"),
            '\u{8}' => json.push_str("\\b"),
            '\t' => json.push_str("\\t"),
            '\n' => json.push_str("\\n"),
            '\u{c}' => json.push_str("\\f"),
            '\r' => json.push_str("\\r"),
            ch if (ch as u32) < 0x20 => {
                let _ = write!(json, "\\u{:04X}", ch as u32);
            }
            ch => json.push(ch),
        }
    }
    json.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_like_jackson() {
        // Kafka's `Uuid.ZERO_UUID` and `Uuid.METADATA_TOPIC_ID` (0, 1).
        assert_eq!(to_json(&Value::Uuid([0; 16])), "\"AAAAAAAAAAAAAAAAAAAAAA\"");
        assert_eq!(to_json(&Value::Uuid(1u128.to_be_bytes())), "\"AAAAAAAAAAAAAAAAAAAAAQ\"");
        let text = Value::Str("a\"b\\c\n\t\u{1}\u{7f}/\u{e9}".to_owned());
        assert_eq!(to_json(&text), "\"a\\\"b\\\\c\\n\\t\\u0001\u{7f}/\u{e9}\"");
        let object = Value::Object(vec![
            ("n", Value::Null),
            ("b", Value::Bytes(vec![0xFF, 0xFE])),
            ("list", Value::Array(vec![Value::Int(-1), Value::Int(2)])),
        ]);
        assert_eq!(to_json(&object), "{\"n\":null,\"b\":\"//4=\",\"list\":[-1,2]}");
    }

    static TAGGED: Message = Message {
        root: Struct {
            name: "Tagged",
            versions: Versions::range(0, 1),
            fields: &[
                Field::new("a", Ty::Int32, Versions::ALL),
                Field::new("b", Ty::Int64, Versions::from(1)).tagged(
                    0,
                    Versions::from(1),
                    Default::Int(-1),
                ),
                Field::new("s", Ty::Str, Versions::ALL).nullable(Versions::ALL),
            ],
        },
        flexible: Versions::from(1),
    };

    #[test]
    fn versions_tags_and_errors_in_kafkas_words() {
        // Version 0: int16 string length; version 1: compact string, then tags.
        let (version, value) = read_versioned(&TAGGED, &[0, 0, 0, 0, 0, 7, 0xff, 0xff]).unwrap();
        assert_eq!((version, to_json(&value).as_str()), (0, "{\"a\":7,\"s\":null}"));
        let v1 = [0, 1, 0, 0, 0, 7, 2, b'x', 1, 0, 8, 0, 0, 0, 0, 0, 0, 0, 9];
        let (_, value) = read_versioned(&TAGGED, &v1).unwrap();
        assert_eq!(to_json(&value), "{\"a\":7,\"b\":9,\"s\":\"x\"}");
        // The default is left out; an unknown tag is skipped.
        let (_, value) = read_versioned(&TAGGED, &[0, 1, 0, 0, 0, 7, 0, 1, 5, 1, 0xaa]).unwrap();
        assert_eq!(to_json(&value), "{\"a\":7,\"s\":null}");
        let error = |bytes: &[u8]| read_versioned(&TAGGED, bytes).unwrap_err().to_string();
        assert_eq!(error(&[0]), "the version is missing");
        assert_eq!(error(&[0, 2]), "Can't read version 2 of Tagged");
        assert_eq!(error(&[0, 0, 0, 0]), "null");
        assert_eq!(
            error(&[0, 0, 0, 0, 0, 7, 0, 5, b'x']),
            "Error reading byte array of 5 byte(s): only 1 byte(s) available"
        );
        assert_eq!(
            error(&[0, 1, 0, 0, 0, 7, 0x80, 0x80, 0x80, 0x80, 0x80]),
            "Varint is too long, the most significant bit in the 5th byte is set, converted \
             value: 0"
        );
    }
}
