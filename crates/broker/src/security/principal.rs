//! Who a connection is: Kafka's `KafkaPrincipal`, the `SslPrincipalMapper` of
//! `ssl.principal.mapping.rules`, the subject name of a client certificate as Java's
//! `X500Principal.getName()` prints it (RFC 2253), and the parts of `DefaultKafkaPrincipalBuilder`
//! that seglog needs (PLAINTEXT and SSL without a client certificate are `User:ANONYMOUS`, SSL
//! with one is `User:` and the mapped subject name, SASL is `User:` and the authorization id).
//!
//! The rules' patterns are Java regular expressions; they are compiled with the `regex` crate,
//! which has Java's leftmost-first semantics but not its backreferences, lookaround, possessive
//! quantifiers or `\Q..\E`; a rule that uses them is refused when the rules are read. Its `\w`,
//! `\d` and `\s` are Unicode-aware (Java's are ASCII), and case-insensitive matching `(?i)` is
//! not available (the crate is built without Unicode case tables).

#![cfg_attr(
    not(test),
    allow(
        dead_code,
        reason = "Kafka's principal classes whole: the SASL builder and accessors serve the tests"
    )
)]

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use regex::{Captures, Regex};
use x509_parser::asn1_rs::{Any, Class};
use x509_parser::prelude::{FromDer, X509Certificate};
use x509_parser::x509::AttributeTypeAndValue;

/// Why a principal, a mapping rule, a mapping or a certificate was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PrincipalError {
    /// A principal that is not `Type:name` (`SecurityUtils.parseKafkaPrincipal`'s message).
    #[error("expected a string in format principalType:principalName but got {0}")]
    InvalidPrincipal(String),
    /// A rule of `ssl.principal.mapping.rules` that is neither `DEFAULT` nor `RULE:p/r/[LU]`.
    #[error("invalid rule in ssl.principal.mapping.rules: {0}")]
    InvalidRule(String),
    /// A rule followed by text that is not part of it.
    #[error(
        "invalid rule in ssl.principal.mapping.rules: `{rule}`, unmatched substring: `{unmatched}`"
    )]
    UnmatchedSubstring { rule: String, unmatched: String },
    /// A rule whose pattern does not compile.
    #[error("invalid pattern `{pattern}` in ssl.principal.mapping.rules: {reason}")]
    InvalidPattern { pattern: String, reason: String },
    /// A replacement that refers to a group the pattern lacks, or ends in `\` or `$`.
    #[error("invalid replacement `{replacement}` in ssl.principal.mapping.rules: {reason}")]
    InvalidReplacement { replacement: String, reason: String },
    /// No rule maps the name (Kafka's `NoMatchingRule`).
    #[error("no rules apply to {distinguished_name}, rules {rules}")]
    NoMatchingRule { distinguished_name: String, rules: String },
    /// The certificate could not be read.
    #[error("invalid client certificate: {0}")]
    InvalidCertificate(String),
}

/// Kafka's `KafkaPrincipal`: a principal type (always `User` for Kafka's own principal builder)
/// and a name, written `Type:name`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct KafkaPrincipal {
    principal_type: Cow<'static, str>,
    name: Cow<'static, str>,
}

impl KafkaPrincipal {
    /// The type of every principal Kafka's principal builder makes (`KafkaPrincipal.USER_TYPE`).
    pub(crate) const USER_TYPE: &'static str = "User";

    /// The principal of an unauthenticated connection (`KafkaPrincipal.ANONYMOUS`).
    pub(crate) const ANONYMOUS: KafkaPrincipal =
        KafkaPrincipal { principal_type: Cow::Borrowed("User"), name: Cow::Borrowed("ANONYMOUS") };

    /// A principal of any type.
    pub(crate) fn new(principal_type: impl Into<String>, name: impl Into<String>) -> Self {
        Self { principal_type: Cow::Owned(principal_type.into()), name: Cow::Owned(name.into()) }
    }

    /// A `User` principal.
    pub(crate) fn user(name: impl Into<String>) -> Self {
        Self { principal_type: Cow::Borrowed(Self::USER_TYPE), name: Cow::Owned(name.into()) }
    }

    /// Parses `Type:name` at the first `:` (Kafka's `SecurityUtils.parseKafkaPrincipal`: the
    /// type or the name may be empty, the name may hold more colons).
    pub(crate) fn parse(s: &str) -> Result<Self, PrincipalError> {
        match s.split_once(':') {
            Some((principal_type, name)) if !s.is_empty() => Ok(Self::new(principal_type, name)),
            _ => Err(PrincipalError::InvalidPrincipal(s.to_owned())),
        }
    }

    /// The principal type (`User`).
    pub(crate) fn principal_type(&self) -> &str {
        &self.principal_type
    }

    /// The name (`alice`).
    pub(crate) fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for KafkaPrincipal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.principal_type, self.name)
    }
}

impl FromStr for KafkaPrincipal {
    type Err = PrincipalError;

    fn from_str(s: &str) -> Result<Self, PrincipalError> {
        Self::parse(s)
    }
}

/// The principal of a SASL connection (Kafka's `DefaultKafkaPrincipalBuilder` for PLAIN,
/// SCRAM and OAUTHBEARER): `User:` and the authorization id.
pub(crate) fn sasl_principal(authorization_id: &str) -> KafkaPrincipal {
    KafkaPrincipal::user(authorization_id)
}

/// The principal of an SSL connection (Kafka's `DefaultKafkaPrincipalBuilder` for
/// `SslAuthenticationContext`): `User:ANONYMOUS` without a client certificate, otherwise
/// `User:` and the certificate's subject name mapped by `ssl.principal.mapping.rules`.
pub(crate) fn ssl_principal(
    mapper: &SslPrincipalMapper,
    peer_certificate_der: Option<&[u8]>,
) -> Result<KafkaPrincipal, PrincipalError> {
    let Some(der) = peer_certificate_der else {
        return Ok(KafkaPrincipal::ANONYMOUS);
    };
    let distinguished_name = subject_distinguished_name(der)?;
    Ok(KafkaPrincipal::user(mapper.principal_name(&distinguished_name)?))
}

/// Java's `.` (any character but a line terminator).
const JAVA_DOT: &str = r"[^\n\r\x{85}\x{2028}\x{2029}]";
/// Java's `\s` (ASCII whitespace).
const JAVA_SPACE: &str = r"[\t\n\x0B\x0C\r ]";

/// Kafka's `SslPrincipalMapper.RULE_PATTERN`, with Java's `.` spelled out.
fn rule_pattern() -> String {
    let d = JAVA_DOT;
    format!(r"(DEFAULT)|RULE:((\\{d}|[^\\/])*)/((\\{d}|[^\\/])*)/([LU]?){d}*?|({d}*?)")
}

/// Compiles one of this module's own regular expressions.
fn compile(pattern: &str) -> Result<Regex, PrincipalError> {
    Regex::new(pattern).map_err(|e| PrincipalError::InvalidPattern {
        pattern: pattern.to_owned(),
        reason: e.to_string(),
    })
}

/// How a rule changes the case of its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CaseChange {
    None,
    Lower,
    Upper,
}

/// One rule of `ssl.principal.mapping.rules` (Kafka's `SslPrincipalMapper.Rule`).
#[derive(Clone, Debug)]
enum Rule {
    /// `DEFAULT`: the distinguished name itself.
    Default,
    /// `RULE:pattern/replacement/[LU]`.
    Mapping {
        /// The pattern as written.
        source: String,
        /// The pattern, for Java's `replaceAll`.
        pattern: Regex,
        /// The pattern anchored at both ends, for Java's `matches`.
        whole: Regex,
        replacement: String,
        case: CaseChange,
    },
}

impl Rule {
    fn mapping(source: &str, replacement: &str, case: CaseChange) -> Result<Self, PrincipalError> {
        let invalid = |e: regex::Error| PrincipalError::InvalidPattern {
            pattern: source.to_owned(),
            reason: e.to_string(),
        };
        let pattern = Regex::new(source).map_err(invalid)?;
        let whole = Regex::new(&format!(r"\A(?:{source})\z")).map_err(invalid)?;
        Ok(Rule::Mapping {
            source: source.to_owned(),
            pattern,
            whole,
            replacement: replacement.to_owned(),
            case,
        })
    }

    /// Kafka's `Rule.apply`: the mapped name, or `None` when the rule does not match.
    fn apply(&self, distinguished_name: &str) -> Result<Option<String>, PrincipalError> {
        let Rule::Mapping { pattern, whole, replacement, case, .. } = self else {
            return Ok(Some(distinguished_name.to_owned()));
        };
        if !whole.is_match(distinguished_name) {
            return Ok(None);
        }
        let group_count = pattern.captures_len() - 1;
        let escaped = escape_literal_back_references(replacement, group_count)?;
        let replaced = java_replace_all(pattern, distinguished_name, &escaped, group_count)
            .map_err(|reason| PrincipalError::InvalidReplacement {
                replacement: replacement.clone(),
                reason,
            })?;
        Ok(Some(match case {
            CaseChange::None => replaced,
            CaseChange::Lower => replaced.to_lowercase(),
            CaseChange::Upper => replaced.to_uppercase(),
        }))
    }
}

impl fmt::Display for Rule {
    /// Kafka's `Rule.toString`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::Default => f.write_str("DEFAULT"),
            Rule::Mapping { source, replacement, case, .. } => {
                write!(f, "RULE:{source}/{replacement}")?;
                match case {
                    CaseChange::None => Ok(()),
                    CaseChange::Lower => f.write_str("/L"),
                    CaseChange::Upper => f.write_str("/U"),
                }
            }
        }
    }
}

/// Kafka's `SslPrincipalMapper`: maps the distinguished name of a client certificate to a
/// principal name by `ssl.principal.mapping.rules` (`RULE:pattern/replacement/[LU]` and
/// `DEFAULT`, comma separated; the first rule that matches wins).
#[derive(Clone, Debug)]
pub(crate) struct SslPrincipalMapper {
    rules: Vec<Rule>,
}

impl SslPrincipalMapper {
    /// The value of `ssl.principal.mapping.rules` when it is not set.
    pub(crate) const DEFAULT_RULES: &'static str = "DEFAULT";

    /// Reads `ssl.principal.mapping.rules` as Kafka does (`SslPrincipalMapper.fromRules`): the
    /// text is trimmed and split by Kafka's `RULE_SPLITTER`, each part parsed by `RULE_PARSER`;
    /// empty parts are ignored, so an empty text has no rule and maps nothing.
    pub(crate) fn from_rules(rules: &str) -> Result<Self, PrincipalError> {
        let pattern = rule_pattern();
        let s = JAVA_SPACE;
        let splitter = compile(&format!(r"{s}*({pattern}){s}*(,{s}*|\z)"))?;
        let parser = compile(&format!(r"\A(?:{pattern})"))?;
        let text = rules.trim_matches(|c: char| c <= ' ');
        let mut parsed = Vec::new();
        for caps in java_find_iter(&splitter, text) {
            let rule = caps.get(1).map_or("", |m| m.as_str());
            let Some(found) = parser.captures(rule) else {
                return Err(PrincipalError::InvalidRule(rule.to_owned()));
            };
            let end = found.get(0).map_or(0, |m| m.end());
            if end != rule.len() {
                return Err(PrincipalError::UnmatchedSubstring {
                    rule: rule.to_owned(),
                    unmatched: rule.get(end..).unwrap_or_default().to_owned(),
                });
            }
            if found.get(1).is_some() {
                parsed.push(Rule::Default);
            } else if let (Some(source), Some(replacement)) = (found.get(2), found.get(4)) {
                let case = match found.get(6).map(|m| m.as_str()) {
                    Some("L") => CaseChange::Lower,
                    Some("U") => CaseChange::Upper,
                    _ => CaseChange::None,
                };
                parsed.push(Rule::mapping(source.as_str(), replacement.as_str(), case)?);
            }
            // Anything else is an empty rule, which Kafka ignores.
        }
        Ok(Self { rules: parsed })
    }

    /// The principal name of a distinguished name (Kafka's `SslPrincipalMapper.getName`): the
    /// result of the first rule that matches; an error when none does.
    pub(crate) fn principal_name(
        &self,
        distinguished_name: &str,
    ) -> Result<String, PrincipalError> {
        for rule in &self.rules {
            if let Some(name) = rule.apply(distinguished_name)? {
                return Ok(name);
            }
        }
        Err(PrincipalError::NoMatchingRule {
            distinguished_name: distinguished_name.to_owned(),
            rules: self.rules_string(),
        })
    }

    /// The rules as Java prints a list of them: `[RULE:^CN=(.*)$/$1/L, DEFAULT]`.
    fn rules_string(&self) -> String {
        let rules: Vec<String> = self.rules.iter().map(ToString::to_string).collect();
        format!("[{}]", rules.join(", "))
    }
}

impl fmt::Display for SslPrincipalMapper {
    /// Kafka's `SslPrincipalMapper.toString`: `SslPrincipalMapper(rules = [DEFAULT])`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SslPrincipalMapper(rules = {})", self.rules_string())
    }
}

/// The successive matches of `regex` in `haystack` as Java's `Matcher.find` finds them: after an
/// empty match the next search starts one character later, after any other at its end (so an
/// empty match may follow a non-empty one).
fn java_find_iter<'h>(regex: &Regex, haystack: &'h str) -> Vec<Captures<'h>> {
    let mut found = Vec::new();
    let mut start = 0;
    while start <= haystack.len() {
        let Some(caps) = regex.captures_at(haystack, start) else {
            break;
        };
        let Some(whole) = caps.get(0) else {
            break;
        };
        start = if whole.is_empty() {
            whole.end()
                + haystack
                    .get(whole.end()..)
                    .and_then(|rest| rest.chars().next())
                    .map_or(1, char::len_utf8)
        } else {
            whole.end()
        };
        found.push(caps);
    }
    found
}

/// Java's `String.replaceAll(pattern, replacement)` (`Matcher.replaceAll` with
/// `appendReplacement`'s `$n`, `${name}` and `\x`). The error is Java's exception message.
fn java_replace_all(
    pattern: &Regex,
    text: &str,
    replacement: &str,
    group_count: usize,
) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for caps in java_find_iter(pattern, text) {
        let Some(whole) = caps.get(0) else {
            continue;
        };
        out.push_str(text.get(last..whole.start()).unwrap_or_default());
        expand_replacement(pattern, &caps, replacement, group_count, &mut out)?;
        last = whole.end();
    }
    out.push_str(text.get(last..).unwrap_or_default());
    Ok(out)
}

/// Java's `Matcher.appendExpandedReplacement`.
fn expand_replacement(
    pattern: &Regex,
    caps: &Captures<'_>,
    replacement: &str,
    group_count: usize,
    out: &mut String,
) -> Result<(), String> {
    let mut chars = replacement.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let escaped =
                    chars.next().ok_or_else(|| "character to be escaped is missing".to_owned())?;
                out.push(escaped);
            }
            '$' => {
                let first = chars
                    .next()
                    .ok_or_else(|| "Illegal group reference: group index is missing".to_owned())?;
                let group = if first == '{' {
                    let mut name = String::new();
                    while let Some(&c) = chars.peek() {
                        if c.is_ascii_alphanumeric() {
                            name.push(c);
                            chars.next();
                        } else {
                            break;
                        }
                    }
                    if name.is_empty() {
                        return Err("named capturing group has 0 length name".to_owned());
                    }
                    if chars.next() != Some('}') {
                        return Err("named capturing group is missing trailing '}'".to_owned());
                    }
                    if name.starts_with(|c: char| c.is_ascii_digit()) {
                        return Err(format!(
                            "capturing group name {{{name}}} starts with digit character"
                        ));
                    }
                    if !pattern.capture_names().any(|known| known == Some(name.as_str())) {
                        return Err(format!("No group with name {{{name}}}"));
                    }
                    caps.name(&name)
                } else {
                    let mut number =
                        first.to_digit(10).ok_or_else(|| "Illegal group reference".to_owned())?
                            as usize;
                    // The largest group number that exists.
                    while let Some(digit) = chars.peek().and_then(|c| c.to_digit(10)) {
                        let longer = number * 10 + digit as usize;
                        if longer > group_count {
                            break;
                        }
                        number = longer;
                        chars.next();
                    }
                    if number > group_count {
                        return Err(format!("No group {number}"));
                    }
                    caps.get(number)
                };
                if let Some(group) = group {
                    out.push_str(group.as_str());
                }
            }
            other => out.push(other),
        }
    }
    Ok(())
}

/// Kafka's `Rule.escapeLiteralBackReferences` (taken from Apache NiFi): a `$n` whose group does
/// not exist, after dropping trailing digits down to one, becomes the literal text `\$n`. As in
/// Kafka, the positions found in the original text are applied to the text as it is being
/// escaped.
fn escape_literal_back_references(
    unescaped: &str,
    group_count: usize,
) -> Result<String, PrincipalError> {
    if group_count == 0 {
        return Ok(unescaped.to_owned());
    }
    let original: Vec<char> = unescaped.chars().collect();
    let mut value = original.clone();
    let mut i = 0;
    while i < original.len() {
        // Java's `\$(\d+)` with `find`.
        if original.get(i) != Some(&'$') {
            i += 1;
            continue;
        }
        let digits_start = i + 1;
        let mut digits_end = digits_start;
        while original.get(digits_end).is_some_and(char::is_ascii_digit) {
            digits_end += 1;
        }
        if digits_end == digits_start {
            i += 1;
            continue;
        }
        i = digits_end;
        let digits: String =
            original.get(digits_start..digits_end).unwrap_or_default().iter().collect();
        if digits.starts_with('0') {
            continue;
        }
        let mut index: u64 =
            digits.parse::<i32>().map_err(|e| PrincipalError::InvalidReplacement {
                replacement: unescaped.to_owned(),
                reason: e.to_string(),
            })? as u64;
        let groups = group_count as u64;
        while index > groups && index >= 10 {
            index /= 10;
        }
        if index > groups {
            let at = (digits_start - 1).min(value.len());
            value.insert(at, '\\');
        }
    }
    Ok(value.into_iter().collect())
}

/// The subject of an X.509 certificate as Java's `X500Principal.getName()` prints it (RFC 2253,
/// `sun.security.x509.X500Name.getRFC2253Name`): the RDNs from the last encoded to the first,
/// joined by `,`; the values of a multi-valued RDN joined by `+` in their encoded order; the
/// attribute types CN, C, L, ST, O, OU, STREET, DC and UID by name and every other type by its
/// dotted OID; string values with `,=+<>#;"\` escaped by `\`, NUL as `\00`, leading and trailing
/// spaces (and carriage returns) escaped; OID-named types and non-string values as `#` and the
/// lowercase hex of the value's DER encoding.
pub(crate) fn subject_distinguished_name(certificate_der: &[u8]) -> Result<String, PrincipalError> {
    let (_, certificate) = X509Certificate::from_der(certificate_der)
        .map_err(|e| PrincipalError::InvalidCertificate(e.to_string()))?;
    let rdns: Vec<String> = certificate
        .subject()
        .iter()
        .map(|rdn| rdn.iter().map(rfc2253_attribute).collect::<Vec<_>>().join("+"))
        .collect();
    Ok(rdns.into_iter().rev().collect::<Vec<_>>().join(","))
}

/// The RFC 2253 keyword of an attribute type, as `AVAKeyword` has it (only the ones marked
/// RFC 2253 compliant).
fn rfc2253_keyword(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.3" => "CN",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "2.5.4.9" => "STREET",
        "0.9.2342.19200300.100.1.25" => "DC",
        "0.9.2342.19200300.100.1.1" => "UID",
        _ => return None,
    })
}

/// Lowercase hexadecimal digits, as Java's `Character.forDigit(d, 16)` writes them.
const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Java's `AVA.toRFC2253String`.
fn rfc2253_attribute(attribute: &AttributeTypeAndValue<'_>) -> String {
    let oid = attribute.attr_type().to_id_string();
    let value = attribute.attr_value();
    let mut out = String::new();
    let keyword = rfc2253_keyword(&oid);
    out.push_str(keyword.unwrap_or(&oid));
    out.push('=');
    // PrintableString, T61String, IA5String, GeneralString, BMPString, UTF8String.
    let is_der_string = value.header.class() == Class::Universal
        && !value.header.is_constructed()
        && matches!(value.header.tag().0, 19 | 20 | 22 | 27 | 30 | 12);
    if keyword.is_none() || !is_der_string {
        out.push('#');
        for byte in der_encoding(value) {
            out.push(char::from(HEX_DIGITS[usize::from(byte >> 4)]));
            out.push(char::from(HEX_DIGITS[usize::from(byte & 0x0f)]));
        }
        return out;
    }
    // Java decodes the content bytes as UTF-8 whatever the string type.
    let text = String::from_utf8_lossy(value.data);
    let mut escaped: Vec<char> = Vec::with_capacity(text.len());
    for c in text.chars() {
        if ",=+<>#;\"\\".contains(c) {
            escaped.push('\\');
            escaped.push(c);
        } else if c == '\0' {
            escaped.extend(['\\', '0', '0']);
        } else {
            escaped.push(c);
        }
    }
    let is_space = |c: &char| *c == ' ' || *c == '\r';
    let lead = escaped.iter().take_while(|c| is_space(c)).count();
    let trail = escaped.len() - escaped.iter().rev().take_while(|c| is_space(c)).count();
    for (i, c) in escaped.iter().enumerate() {
        if i < lead || i >= trail {
            out.push('\\');
        }
        out.push(*c);
    }
    out
}

/// The DER encoding of a value: identifier octets, definite length, contents (Java's
/// `DerValue.toByteArray`).
fn der_encoding(value: &Any<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(value.data.len() + 6);
    if let Some(raw) = value.header.raw_tag() {
        out.extend_from_slice(raw);
    } else {
        let leading = ((value.header.class() as u8) << 6)
            | if value.header.is_constructed() { 0x20 } else { 0 };
        let tag = value.header.tag().0;
        if tag < 31 {
            out.push(leading | tag as u8);
        } else {
            out.push(leading | 0x1f);
            out.extend(base128(tag));
        }
    }
    let len = value.data.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let significant: Vec<u8> = bytes.iter().copied().skip_while(|b| *b == 0).collect();
        out.push(0x80 | significant.len() as u8);
        out.extend(significant);
    }
    out.extend_from_slice(value.data);
    out
}

/// A high tag number in base 128, most significant group first, continuation bits set.
fn base128(mut value: u32) -> Vec<u8> {
    let mut groups = vec![(value & 0x7f) as u8];
    value >>= 7;
    while value > 0 {
        groups.push((value & 0x7f) as u8 | 0x80);
        value >>= 7;
    }
    groups.reverse();
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_principal_parses_and_prints() {
        let alice = KafkaPrincipal::parse("User:alice").expect("valid");
        assert_eq!(alice.principal_type(), "User");
        assert_eq!(alice.name(), "alice");
        assert_eq!(alice.to_string(), "User:alice");
        assert_eq!(alice, KafkaPrincipal::user("alice"));
        assert_eq!(KafkaPrincipal::ANONYMOUS.to_string(), "User:ANONYMOUS");
        assert_eq!(KafkaPrincipal::parse("User:ANONYMOUS"), Ok(KafkaPrincipal::ANONYMOUS));
        let colons: KafkaPrincipal = "Group:a:b".parse().expect("valid");
        assert_eq!((colons.principal_type(), colons.name()), ("Group", "a:b"));
        assert_eq!(KafkaPrincipal::parse(":alice").map(|p| p.to_string()), Ok(":alice".to_owned()));
        assert_eq!(KafkaPrincipal::parse("User:").map(|p| p.to_string()), Ok("User:".to_owned()));
        assert_eq!(
            KafkaPrincipal::parse("bob").map_err(|e| e.to_string()),
            Err("expected a string in format principalType:principalName but got bob".to_owned())
        );
        assert!(KafkaPrincipal::parse("").is_err());
        assert_eq!(sasl_principal("carol").to_string(), "User:carol");
    }

    // SslPrincipalMapperTest.testValidRules.
    #[test]
    fn valid_rules() {
        for rules in [
            "DEFAULT",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
            "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/",
            "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L",
            "RULE:^cn=(.?),ou=(.?),dc=(.?),dc=(.?)$/$1@$2/U",
            "RULE:^CN=([^,ADEFLTU,]+)(,.*|$)/$1/",
            "RULE:^CN=([^,DEFAULT,]+)(,.*|$)/$1/",
        ] {
            assert!(SslPrincipalMapper::from_rules(rules).is_ok(), "{rules}");
        }
    }

    // SslPrincipalMapperTest.testInvalidRules.
    #[test]
    fn invalid_rules() {
        for rules in [
            "default",
            "DEFAUL",
            "DEFAULT/L",
            "DEFAULT/U",
            "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
            "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
        ] {
            assert!(SslPrincipalMapper::from_rules(rules).is_err(), "{rules}");
        }
        assert_eq!(
            SslPrincipalMapper::from_rules("DEFAULT/L").map(|m| m.to_string()).map_err(|e| e.to_string()),
            Err("invalid rule in ssl.principal.mapping.rules: `DEFAULT/L`, unmatched substring: `/L`".to_owned())
        );
        assert!(matches!(
            SslPrincipalMapper::from_rules("RULE:(?<=x)a/b/"),
            Err(PrincipalError::InvalidPattern { .. })
        ));
    }

    // SslPrincipalMapperTest.testSslPrincipalMapper.
    #[test]
    fn ssl_principal_mapper() {
        let rules = [
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
            "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
            "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
            "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
            "DEFAULT",
        ]
        .join(", ");
        let mapper = SslPrincipalMapper::from_rules(&rules).expect("valid rules");
        let name = |dn| mapper.principal_name(dn).expect("a rule matches");
        assert_eq!(name("CN=Duke,OU=ServiceUsers,O=Org,C=US"), "duke");
        assert_eq!(name("CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US"), "duke@sme");
        assert_eq!(name("cn=duke,ou=sme,dc=mycp,dc=com"), "DUKE@SME");
        assert_eq!(name("cN=duke,OU=JavaSoft,O=Sun Microsystems"), "DUKE");
        assert_eq!(
            name("OU=JavaSoft,O=Sun Microsystems,C=US"),
            "OU=JavaSoft,O=Sun Microsystems,C=US"
        );
    }

    // SslPrincipalMapperTest.testRulesSplitting.
    #[test]
    fn rules_splitting() {
        let cases = [
            ("[]", ""),
            ("[DEFAULT]", "DEFAULT"),
            ("[RULE:/]", "RULE://"),
            ("[RULE:/.*]", "RULE:/.*/"),
            ("[RULE:/.*/L]", "RULE:/.*/L"),
            ("[RULE:/, DEFAULT]", "RULE://,DEFAULT"),
            ("[RULE:/, DEFAULT]", "  RULE:// ,  DEFAULT  "),
            ("[RULE:   /     , DEFAULT]", "  RULE:   /     / ,  DEFAULT  "),
            ("[RULE:  /     /U, DEFAULT]", "  RULE:  /     /U   ,DEFAULT  "),
            (
                "[RULE:([A-Z]*)/$1/U, RULE:([a-z]+)/$1, DEFAULT]",
                "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ",
            ),
            // Empty rules are ignored.
            ("[]", ",   , , ,      , , ,   "),
            ("[RULE:/, DEFAULT]", ",,RULE://,,,DEFAULT,,"),
            ("[RULE: /   , DEFAULT]", ",  , RULE: /   /    ,,,   DEFAULT, ,   "),
            ("[RULE:   /  /U, DEFAULT]", "     ,  , RULE:   /  /U    ,,  ,DEFAULT, ,"),
            // Escape sequences.
            (r"[RULE:\/\\\(\)\n\t/\/\/]", r"RULE:\/\\\(\)\n\t/\/\//"),
            (r"[RULE:\**\/+/*/L, RULE:\/*\**/**]", r"RULE:\**\/+/*/L,RULE:\/*\**/**/"),
            // Rules rule.
            (
                r"[RULE:,RULE:,/,RULE:,\//U, RULE:,/RULE:,, RULE:,RULE:,/L,RULE:,/L, RULE:, DEFAULT, /DEFAULT, DEFAULT]",
                r"RULE:,RULE:,/,RULE:,\//U,RULE:,/RULE:,/,RULE:,RULE:,/L,RULE:,/L,RULE:, DEFAULT, /DEFAULT/,DEFAULT",
            ),
        ];
        for (expected, rules) in cases {
            let mapper = SslPrincipalMapper::from_rules(rules).expect("valid rules");
            assert_eq!(
                mapper.to_string(),
                format!("SslPrincipalMapper(rules = {expected})"),
                "{rules:?}"
            );
        }
    }

    // SslPrincipalMapperTest.testCommaWithWhitespace.
    #[test]
    fn comma_with_whitespace() {
        let mapper = SslPrincipalMapper::from_rules(r"RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT")
            .expect("valid");
        assert_eq!(
            mapper.principal_name(r"CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz"),
            Ok(r"Tkac\, Adam".to_owned())
        );
    }

    /// No matching rule is an error, as Kafka's `NoMatchingRule`; no rules at all maps nothing.
    #[test]
    fn no_matching_rule() {
        let mapper = SslPrincipalMapper::from_rules("RULE:^CN=(.*)$/$1/L").expect("valid");
        assert_eq!(
            mapper.principal_name("O=Org").map_err(|e| e.to_string()),
            Err("no rules apply to O=Org, rules [RULE:^CN=(.*)$/$1/L]".to_owned())
        );
        let empty = SslPrincipalMapper::from_rules("").expect("valid");
        assert!(matches!(empty.principal_name("CN=a"), Err(PrincipalError::NoMatchingRule { .. })));
        let default =
            SslPrincipalMapper::from_rules(SslPrincipalMapper::DEFAULT_RULES).expect("valid");
        assert_eq!(default.principal_name("CN=a,O=b"), Ok("CN=a,O=b".to_owned()));
    }

    /// Java's `replaceAll` and NiFi's escaping of missing groups, checked against JDK 17.
    #[test]
    fn replacement_follows_java() {
        let map = |rules: &str, dn: &str| {
            SslPrincipalMapper::from_rules(rules)
                .expect("valid rules")
                .principal_name(dn)
                .map_err(|e| e.to_string())
        };
        // A missing group becomes literal text; the largest existing group number is used.
        assert_eq!(map("RULE:^CN=(.*?),O=(.*)$/$1@$3/", "CN=a,O=b"), Ok("a@$3".to_owned()));
        assert_eq!(map("RULE:^CN=(.*?),O=(.*)$/$12/", "CN=a,O=b"), Ok("a2".to_owned()));
        assert_eq!(map("RULE:^CN=(.*?),O=(.*)$/$0-$2/", "CN=a,O=b"), Ok("CN=a,O=b-b".to_owned()));
        // Kafka (NiFi) applies positions found in the original text to the text being escaped.
        assert_eq!(
            map("RULE:^CN=(.*)$/$5@$6/", "CN=a"),
            Err(r"invalid replacement `$5@$6` in ssl.principal.mapping.rules: No group 6"
                .to_owned())
        );
        // Named groups, escapes, and an unanchored pattern replaced at every match.
        assert_eq!(map("RULE:CN=(?<cn>[a-z]+).*/${cn}\\$/", "CN=abc,O=x"), Ok("abc$".to_owned()));
        assert_eq!(map("RULE:[a-z]/X/", "a"), Ok("X".to_owned()));
        assert_eq!(
            map("RULE:x*/-/", "xab"),
            Err("no rules apply to xab, rules [RULE:x*/-]".to_owned())
        );
        assert_eq!(map("RULE:(a|b)*/<$1>/", "abab"), Ok("<b><>".to_owned()));
        assert_eq!(
            map("RULE:.*/$1/", "abc"),
            Err("invalid replacement `$1` in ssl.principal.mapping.rules: No group 1".to_owned())
        );
        assert_eq!(map("RULE:(.*)/x$/", "abc"), Err(
            "invalid replacement `x$` in ssl.principal.mapping.rules: Illegal group reference: group index is missing".to_owned()
        ));
        // Java's replaceAll also replaces the empty match at the end after `(.*)` took everything.
        assert_eq!(map("RULE:(.*)/\u{c4}B$1/L", "CD"), Ok("\u{e4}bcd\u{e4}b".to_owned()));
    }

    /// A certificate whose subject is the given RDNs, each a list of (OID, DER value), made by
    /// hand so that multi-valued RDNs and any string type can be tested.
    fn certificate_with_subject(rdns: &[&[(&str, Vec<u8>)]]) -> Vec<u8> {
        fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
            let mut out = vec![tag];
            let len = content.len();
            if len < 0x80 {
                out.push(len as u8);
            } else if len < 0x100 {
                out.extend([0x81, len as u8]);
            } else {
                out.extend([0x82, (len >> 8) as u8, len as u8]);
            }
            out.extend_from_slice(content);
            out
        }
        fn oid(dotted: &str) -> Vec<u8> {
            let arcs: Vec<u64> =
                dotted.split('.').map(|a| a.parse().expect("numeric arc")).collect();
            let mut body = Vec::new();
            let mut encode = |mut value: u64| {
                let mut groups = vec![(value & 0x7f) as u8];
                value >>= 7;
                while value > 0 {
                    groups.push((value & 0x7f) as u8 | 0x80);
                    value >>= 7;
                }
                body.extend(groups.iter().rev());
            };
            encode(arcs[0] * 40 + arcs[1]);
            for arc in &arcs[2..] {
                encode(*arc);
            }
            tlv(0x06, &body)
        }
        let mut name = Vec::new();
        for rdn in rdns {
            let mut set = Vec::new();
            for (attribute, value) in *rdn {
                set.extend(tlv(0x30, &[oid(attribute), value.clone()].concat()));
            }
            name.extend(tlv(0x31, &set));
        }
        let name = tlv(0x30, &name);
        let algorithm = tlv(0x30, &[oid("1.2.840.10045.4.3.2")].concat());
        let validity =
            tlv(0x30, &[tlv(0x17, b"250101000000Z"), tlv(0x17, b"350101000000Z")].concat());
        let mut point = vec![0x00, 0x04];
        point.extend([7u8; 64]);
        let spki = tlv(
            0x30,
            &[
                tlv(0x30, &[oid("1.2.840.10045.2.1"), oid("1.2.840.10045.3.1.7")].concat()),
                tlv(0x03, &point),
            ]
            .concat(),
        );
        let issuer =
            tlv(0x30, &tlv(0x31, &tlv(0x30, &[oid("2.5.4.3"), tlv(0x0c, b"ca")].concat())));
        let tbs = tlv(
            0x30,
            &[
                tlv(0xa0, &tlv(0x02, &[2])),
                tlv(0x02, &[1]),
                algorithm.clone(),
                issuer,
                validity,
                name,
                spki,
            ]
            .concat(),
        );
        tlv(0x30, &[tbs, algorithm, tlv(0x03, &[0, 0x30, 0x00])].concat())
    }

    fn utf8(s: &str) -> Vec<u8> {
        [vec![0x0c, s.len() as u8], s.as_bytes().to_vec()].concat()
    }

    /// Subject names of certificates made by rcgen, printed as JDK 17's
    /// `X509Certificate.getSubjectX500Principal().getName()` prints them.
    #[test]
    fn subject_names_of_rcgen_certificates() {
        use rcgen::{CertificateParams, DistinguishedName, DnType, DnValue, KeyPair};
        let make = |entries: Vec<(DnType, DnValue)>| {
            let mut dn = DistinguishedName::new();
            for (dn_type, value) in entries {
                dn.push(dn_type, value);
            }
            let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
            params.distinguished_name = dn;
            let key = KeyPair::generate().expect("key");
            let cert = params.self_signed(&key).expect("certificate");
            subject_distinguished_name(cert.der()).expect("readable")
        };
        assert_eq!(
            make(vec![
                (
                    DnType::CountryName,
                    DnValue::PrintableString("US".try_into().expect("printable"))
                ),
                (DnType::StateOrProvinceName, "CA".into()),
                (DnType::LocalityName, "Palo Alto".into()),
                (DnType::OrganizationName, "Confluent".into()),
                (DnType::OrganizationalUnitName, "Kafka".into()),
                (DnType::CommonName, "alice".into()),
            ]),
            "CN=alice,OU=Kafka,O=Confluent,L=Palo Alto,ST=CA,C=US"
        );
        assert_eq!(
            make(vec![
                (DnType::OrganizationName, "Sue, Grabbit and Runn".into()),
                (DnType::CommonName, " #lead+a=b<c>d;e\"f\\g trail ".into()),
            ]),
            r#"CN=\ \#lead\+a\=b\<c\>d\;e\"f\\g trail\ ,O=Sue\, Grabbit and Runn"#
        );
        assert_eq!(
            make(vec![
                (
                    DnType::CustomDnType(vec![0, 9, 2342, 19_200_300, 100, 1, 25]),
                    DnValue::Ia5String("example".try_into().expect("ia5"))
                ),
                (DnType::CustomDnType(vec![0, 9, 2342, 19_200_300, 100, 1, 1]), "jdoe".into()),
                (
                    DnType::CustomDnType(vec![1, 2, 840, 113_549, 1, 9, 1]),
                    DnValue::Ia5String("a@b.c".try_into().expect("ia5"))
                ),
                (
                    DnType::CustomDnType(vec![2, 5, 4, 5]),
                    DnValue::PrintableString("42".try_into().expect("printable"))
                ),
                (DnType::CommonName, "\u{dc}n\u{ef}c\u{f8}d\u{e9} \u{2713}".into()),
            ]),
            "CN=\u{dc}n\u{ef}c\u{f8}d\u{e9} \u{2713},2.5.4.5=#13023432,1.2.840.113549.1.9.1=#16056140622e63,UID=jdoe,DC=example"
        );
    }

    /// Multi-valued RDNs, other string types and odd values, as JDK 17 prints them.
    #[test]
    fn subject_names_of_hand_made_certificates() {
        let cert = certificate_with_subject(&[
            &[("0.9.2342.19200300.100.1.25", [vec![0x16, 3], b"com".to_vec()].concat())],
            &[("2.5.4.10", utf8("Org")), ("2.5.4.11", utf8("Unit"))],
            &[
                ("2.5.4.3", utf8("a\0b")),
                ("2.5.4.3", [vec![0x1e, 4], vec![0, b'h', 0, b'i']].concat()),
            ],
            &[("2.5.4.9", [vec![0x14, 2], b"ok".to_vec()].concat())],
            &[("2.5.4.7", [vec![0x1c, 4], vec![0, 0, 0, b'x']].concat())],
            &[("2.5.4.6", [vec![0x13, 2], b"DE".to_vec()].concat())],
            &[("2.5.4.3", utf8("   "))],
            &[("2.5.4.3", utf8("\r\nx\r"))],
        ]);
        assert_eq!(
            subject_distinguished_name(&cert).expect("readable"),
            "CN=\\\r\nx\\\r,CN=\\ \\ \\ ,C=DE,L=#1c0400000078,STREET=ok,CN=a\\00b+CN=\\00h\\00i,O=Org+OU=Unit,DC=com"
        );
        let empty = certificate_with_subject(&[]);
        assert_eq!(subject_distinguished_name(&empty), Ok(String::new()));
        assert!(matches!(
            subject_distinguished_name(b"not a certificate"),
            Err(PrincipalError::InvalidCertificate(_))
        ));
    }

    /// `DefaultKafkaPrincipalBuilder` for SSL: no certificate is ANONYMOUS, a certificate is
    /// mapped by the rules.
    #[test]
    fn ssl_principal_from_certificate() {
        let mapper =
            SslPrincipalMapper::from_rules("RULE:^CN=(.*?),O=(.*)$/$1/L,DEFAULT").expect("valid");
        assert_eq!(ssl_principal(&mapper, None), Ok(KafkaPrincipal::ANONYMOUS));
        let cert = certificate_with_subject(&[
            &[("2.5.4.10", utf8("Org"))],
            &[("2.5.4.3", utf8("Alice"))],
        ]);
        assert_eq!(
            ssl_principal(&mapper, Some(&cert)).map(|p| p.to_string()),
            Ok("User:alice".to_owned())
        );
        let cert = certificate_with_subject(&[&[("2.5.4.3", utf8("Bob"))]]);
        assert_eq!(
            ssl_principal(&mapper, Some(&cert)).map(|p| p.to_string()),
            Ok("User:CN=Bob".to_owned())
        );
    }
}
