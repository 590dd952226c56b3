//! SASL/OAUTHBEARER on the broker side (RFC 7628), after Kafka's
//! `org.apache.kafka.common.security.oauthbearer` package:
//!
//! - [`parse_client_initial_response`] / [`ClientInitialResponse`] play
//!   `OAuthBearerClientInitialResponse` (GS2 header `n,,` or `n,a=<authzid>,`, then
//!   `\x01auth=Bearer <token>\x01`, optional `key=value\x01` extensions, final `\x01`, with Kafka's
//!   exact regular expressions).
//! - [`TokenValidator::Unsecured`] plays `OAuthBearerUnsecuredValidatorCallbackHandler` with
//!   `OAuthBearerUnsecuredJws`, `OAuthBearerValidationUtils` and `OAuthBearerScopeUtils` (tokens
//!   with `alg: none`, for development and tests).
//! - [`TokenValidator::Jwks`] plays `OAuthBearerValidatorCallbackHandler` with
//!   `ValidatorAccessTokenValidator`, `SerializedJwt`, `ClaimValidationUtils` and
//!   `JwksFileVerificationKeyResolver` (signed JWTs checked against a local JWKS file named by
//!   `sasl.oauthbearer.jwks.endpoint.url`; the date, audience and issuer rules are those of the
//!   jose4j `JwtConsumer` Kafka builds).
//! - [`OAuthBearerServer`] plays `OAuthBearerSaslServer`: one initial response, then either
//!   completion or Kafka's JSON error challenge (`{"status":"invalid_token"}`), after which the
//!   client's `\x01` reply fails the exchange.
//!
//! Time is passed in (`now_ms`, milliseconds since the epoch), never read from a clock. Token
//! values never appear in `Debug` or `Display` output, nor in error messages.

#![cfg_attr(
    not(test),
    allow(
        dead_code,
        reason = "Kafka's OAUTHBEARER classes whole: the JAAS options and the client side serve the tests"
    )
)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;
use std::sync::LazyLock;

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use jsonwebtoken::{Algorithm, DecodingKey};
use regex::Regex;
use serde_json::{Map, Value};

/// The RFC 7628 key/value separator, `%x01`.
const SEPARATOR: char = '\u{1}';
/// The reserved key that carries the bearer token.
const AUTH_KEY: &str = "auth";

/// Kafka's `unsecuredValidatorPrincipalClaimName` JAAS option.
pub(crate) const PRINCIPAL_CLAIM_NAME_OPTION: &str = "unsecuredValidatorPrincipalClaimName";
/// Kafka's `unsecuredValidatorScopeClaimName` JAAS option.
pub(crate) const SCOPE_CLAIM_NAME_OPTION: &str = "unsecuredValidatorScopeClaimName";
/// Kafka's `unsecuredValidatorRequiredScope` JAAS option.
pub(crate) const REQUIRED_SCOPE_OPTION: &str = "unsecuredValidatorRequiredScope";
/// Kafka's `unsecuredValidatorAllowableClockSkewMs` JAAS option.
pub(crate) const ALLOWABLE_CLOCK_SKEW_MS_OPTION: &str = "unsecuredValidatorAllowableClockSkewMs";

/// Default of `sasl.oauthbearer.sub.claim.name`.
pub(crate) const DEFAULT_SUB_CLAIM_NAME: &str = "sub";
/// Default of `sasl.oauthbearer.scope.claim.name`.
pub(crate) const DEFAULT_SCOPE_CLAIM_NAME: &str = "scope";
/// Default of `sasl.oauthbearer.clock.skew.seconds`.
pub(crate) const DEFAULT_CLOCK_SKEW_SECONDS: u64 = 30;

/// Kafka's `(?:[\x01-\x7F&&[^=,]]|=2C|=3D)+` (SASLNAME), `[A-Za-z]+` (KEY) and
/// `[\x21-\x7E \t\r\n]+` (VALUE) assembled as in `OAuthBearerClientInitialResponse`.
static CLIENT_INITIAL_RESPONSE_PATTERN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\An,(?:a=(?P<authzid>(?:[\x01-\x7F&&[^=,]]|=2C|=3D)+))?,\x01(?P<kvpairs>(?:[A-Za-z]+=[\x21-\x7E \t\r\n]+\x01)*)\x01\z",
    )
    .expect("constant client initial response regex compiles")
});
/// Kafka's `(?<scheme>[\w]+)[ ]+(?<token>[-_~+/\.a-zA-Z0-9]+([=]*))` (Java's `\w` is ASCII).
static AUTH_PATTERN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\A(?P<scheme>[A-Za-z0-9_]+) +(?P<token>[-_~+/.a-zA-Z0-9]+=*)\z")
        .expect("constant auth regex compiles")
});
/// Kafka's `EXTENSION_KEY_PATTERN`.
static EXTENSION_KEY_PATTERN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\A[A-Za-z]+\z").expect("constant extension key regex compiles"));
/// Kafka's `EXTENSION_VALUE_PATTERN`.
static EXTENSION_VALUE_PATTERN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\A[\x21-\x7E \t\r\n]+\z").expect("constant extension value regex compiles")
});
/// `OAuthBearerScopeUtils.INDIVIDUAL_SCOPE_ITEM_PATTERN` (RFC 6749 section 3.3).
static SCOPE_ITEM_PATTERN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\A[\x23-\x5B\x5D-\x7E\x21]+\z").expect("constant scope item regex compiles")
});

/// Base64 decoders that take padding or not and ignore non-zero trailing bits, as Java's do.
const LENIENT: GeneralPurposeConfig = GeneralPurposeConfig::new()
    .with_decode_padding_mode(DecodePaddingMode::Indifferent)
    .with_decode_allow_trailing_bits(true);
const URL_SAFE_LENIENT: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, LENIENT);
const STANDARD_LENIENT: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, LENIENT);

/// Errors of the OAUTHBEARER exchange and of its token validators.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OAuthError {
    /// The client's first message does not match RFC 7628's grammar (Kafka's regex).
    #[error("invalid oauthbearer client first message")]
    InvalidClientFirstMessage,
    /// The client's first message has no `auth` key.
    #[error("invalid oauthbearer client first message: 'auth' not specified")]
    AuthNotSpecified,
    /// The `auth` value is not `<scheme> <token>`.
    #[error("invalid oauthbearer client first message: invalid 'auth' format")]
    InvalidAuthFormat,
    /// The `auth` scheme is not `Bearer` (case-insensitive).
    #[error("invalid scheme in oauthbearer client first message: {scheme}")]
    InvalidScheme { scheme: String },
    /// An extension name is `auth` or not `[A-Za-z]+`.
    #[error("extension name {name} is invalid")]
    InvalidExtensionName { name: String },
    /// An extension value is not `[\x21-\x7E \t\r\n]+` (the value is not repeated here).
    #[error("extension value for extension {name} is invalid")]
    InvalidExtensionValue { name: String },
    /// The validator refused the token; the server answers with `{"status":"invalid_token"}`.
    #[error("invalid token: {reason}")]
    InvalidToken { reason: String },
    /// The token lacks a required scope; the server answers with `insufficient_scope`.
    #[error("insufficient scope {required_scope}: {reason}")]
    InsufficientScope { required_scope: String, reason: String },
    /// The GS2 authzid differs from the token's principal (Kafka's rule).
    #[error(
        "authentication failed: client requested an authorization id ({authorization_id}) that is different from the token's principal name ({principal_name})"
    )]
    AuthorizationIdMismatch { authorization_id: String, principal_name: String },
    /// The client acknowledged the server's error challenge with `%x01`: authentication fails.
    #[error("oauthbearer authentication failed after the server's error challenge: {challenge}")]
    FailedAfterChallenge { challenge: String },
    /// The client sent something other than `%x01` after the server's error challenge.
    #[error("oauthbearer client sent a message other than %x01 after the server's error challenge")]
    UnexpectedMessageAfterChallenge,
    /// `evaluate` was called after the exchange completed.
    #[error("oauthbearer authentication exchange has already completed")]
    AlreadyComplete,
    /// `evaluate` was called after the exchange failed.
    #[error("oauthbearer authentication exchange has already failed")]
    AlreadyFailed,
    /// A validator option is out of range or malformed.
    #[error("invalid oauthbearer option {option}: {reason}")]
    InvalidOption { option: &'static str, reason: String },
    /// The JWKS file is not a JSON Web Key Set we can use.
    #[error("malformed jwks file at {location}: {reason}")]
    MalformedJwks { location: String, reason: String },
    /// `sasl.oauthbearer.jwks.endpoint.url` is not a local `file:` URL.
    #[error("sasl.oauthbearer.jwks.endpoint.url {url:?}: {reason}")]
    InvalidJwksUrl { url: String, reason: String },
}

impl OAuthError {
    /// The error message Kafka puts in the `SaslAuthenticate` response for this failure, when
    /// Kafka sends one of its own (a `SaslAuthenticationException`); `None` means Kafka sends
    /// Kafka's generic "Authentication failed during authentication due to invalid credentials" text instead, so that no detail leaks to the client.
    pub(crate) fn client_message(&self) -> Option<String> {
        match self {
            Self::AuthorizationIdMismatch { authorization_id, principal_name } => Some(format!(
                "Authentication failed: Client requested an authorization id ({authorization_id}) that is different from the token's principal name ({principal_name})"
            )),
            Self::FailedAfterChallenge { challenge } => Some(challenge.clone()),
            _ => None,
        }
    }

    /// The RFC 7628 error `status` (and `scope`) the server puts in its challenge when a
    /// validator refuses a token, or `None` for errors that end the exchange at once.
    fn challenge_status(&self) -> Option<(&'static str, Option<&str>)> {
        match self {
            Self::InvalidToken { .. } => Some(("invalid_token", None)),
            Self::InsufficientScope { required_scope, .. } => {
                Some(("insufficient_scope", Some(required_scope.as_str())))
            }
            _ => None,
        }
    }
}

fn invalid_token(reason: impl Into<String>) -> OAuthError {
    OAuthError::InvalidToken { reason: reason.into() }
}

// ---------------------------------------------------------------------------------------------
// Client initial response
// ---------------------------------------------------------------------------------------------

/// Kafka's `OAuthBearerClientInitialResponse`: the parsed client first message.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ClientInitialResponse {
    /// The GS2 authzid (`a=`), kept raw (`=2C` and `=3D` are not unescaped, as in Kafka).
    pub(crate) authorization_id: Option<String>,
    /// The bearer token; a secret, never printed.
    pub(crate) token: String,
    /// The SASL extensions other than `auth`.
    pub(crate) extensions: BTreeMap<String, String>,
}

impl fmt::Debug for ClientInitialResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientInitialResponse")
            .field("authorization_id", &self.authorization_id)
            .field("token", &"<redacted>")
            .field("extensions", &self.extensions)
            .finish()
    }
}

#[cfg_attr(
    not(test),
    allow(dead_code, reason = "the client side's encoder; the broker only parses")
)]
impl ClientInitialResponse {
    /// Kafka's `OAuthBearerClientInitialResponse(tokenValue, authorizationId, extensions)`: the
    /// client side's message, with its extensions checked. An empty authzid means none.
    pub(crate) fn new(
        token: String,
        authorization_id: Option<String>,
        extensions: BTreeMap<String, String>,
    ) -> Result<Self, OAuthError> {
        validate_extensions(&extensions)?;
        Ok(Self {
            authorization_id: authorization_id.filter(|id| !id.is_empty()),
            token,
            extensions,
        })
    }

    /// Kafka's `toBytes()`: `n,[a=<authzid>],\x01auth=Bearer <token>[\x01k=v...]\x01\x01`
    /// (extensions in name order).
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut message = String::from("n,");
        if let Some(authzid) = &self.authorization_id {
            message.push_str("a=");
            message.push_str(authzid);
        }
        message.push(',');
        message.push(SEPARATOR);
        message.push_str("auth=Bearer ");
        message.push_str(&self.token);
        for (name, value) in &self.extensions {
            message.push(SEPARATOR);
            message.push_str(name);
            message.push('=');
            message.push_str(value);
        }
        message.push(SEPARATOR);
        message.push(SEPARATOR);
        message.into_bytes()
    }
}

/// Kafka's `OAuthBearerClientInitialResponse.validateExtensions`: no `auth` key, names
/// `[A-Za-z]+`, values `[\x21-\x7E \t\r\n]+`.
pub(crate) fn validate_extensions(extensions: &BTreeMap<String, String>) -> Result<(), OAuthError> {
    if extensions.contains_key(AUTH_KEY) {
        return Err(OAuthError::InvalidExtensionName { name: AUTH_KEY.to_owned() });
    }
    for (name, value) in extensions {
        if !EXTENSION_KEY_PATTERN.is_match(name) {
            return Err(OAuthError::InvalidExtensionName { name: name.clone() });
        }
        if !EXTENSION_VALUE_PATTERN.is_match(value) {
            return Err(OAuthError::InvalidExtensionValue { name: name.clone() });
        }
    }
    Ok(())
}

/// Kafka's `OAuthBearerClientInitialResponse(byte[])`: parses and checks the client's first
/// message (RFC 7628 section 3.1). Duplicate keys keep the last value, as Kafka's `parseMap`.
pub(crate) fn parse_client_initial_response(
    message: &[u8],
) -> Result<ClientInitialResponse, OAuthError> {
    // The grammar is ASCII only, so bytes that are not UTF-8 can never match (Java replaces them
    // with U+FFFD, which does not match either).
    let text = std::str::from_utf8(message).map_err(|_| OAuthError::InvalidClientFirstMessage)?;
    let captures = CLIENT_INITIAL_RESPONSE_PATTERN
        .captures(text)
        .ok_or(OAuthError::InvalidClientFirstMessage)?;
    let authorization_id = captures.name("authzid").map(|m| m.as_str().to_owned());
    let kvpairs = captures.name("kvpairs").map_or("", |m| m.as_str());
    let mut properties = BTreeMap::new();
    for pair in kvpairs.split(SEPARATOR).filter(|pair| !pair.is_empty()) {
        // The regex guarantees `KEY=VALUE` with a key free of `=`.
        let (key, value) = pair.split_once('=').ok_or(OAuthError::InvalidClientFirstMessage)?;
        properties.insert(key.to_owned(), value.to_owned());
    }
    let auth = properties.remove(AUTH_KEY).ok_or(OAuthError::AuthNotSpecified)?;
    validate_extensions(&properties)?;
    let auth_captures = AUTH_PATTERN.captures(&auth).ok_or(OAuthError::InvalidAuthFormat)?;
    let scheme = auth_captures.name("scheme").map_or("", |m| m.as_str());
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(OAuthError::InvalidScheme { scheme: scheme.to_owned() });
    }
    let token = auth_captures.name("token").map_or("", |m| m.as_str()).to_owned();
    Ok(ClientInitialResponse { authorization_id, token, extensions: properties })
}

// ---------------------------------------------------------------------------------------------
// Validators
// ---------------------------------------------------------------------------------------------

/// Kafka's `OAuthBearerToken` as the broker keeps it after validation (without the token value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ValidatedToken {
    /// The principal: the principal (or `sub`) claim.
    pub(crate) principal_name: String,
    /// Absolute expiry, milliseconds since the epoch (Kafka's `lifetimeMs()`).
    pub(crate) lifetime_ms: u64,
    /// The token's scope, deduplicated and sorted.
    pub(crate) scope: Vec<String>,
}

/// Kafka's server-side OAUTHBEARER callback handler: the one configured in
/// `listener.name.<l>.oauthbearer.sasl.server.callback.handler.class`.
#[derive(Debug)]
pub(crate) enum TokenValidator {
    /// `OAuthBearerUnsecuredValidatorCallbackHandler` (Kafka's default): `alg: none` tokens.
    Unsecured(UnsecuredOptions),
    /// `OAuthBearerValidatorCallbackHandler` with a `file:` JWKS.
    Jwks(JwksValidator),
}

impl TokenValidator {
    /// Validates a bearer token at `now_ms`. A refused token is `InvalidToken` or
    /// `InsufficientScope`, which [`OAuthBearerServer`] turns into an error challenge.
    pub(crate) fn validate(&self, token: &str, now_ms: u64) -> Result<ValidatedToken, OAuthError> {
        match self {
            Self::Unsecured(options) => options.validate(token, now_ms),
            Self::Jwks(validator) => validator.validate(token, now_ms),
        }
    }
}

/// Milliseconds as Kafka's `double` arithmetic sees them.
#[expect(clippy::cast_precision_loss, reason = "Kafka compares these times as doubles")]
fn ms_as_f64(ms: u64) -> f64 {
    ms as f64
}

/// Java's `String.trim()`: strips every char up to U+0020.
fn java_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c <= ' ')
}

/// Java's `String.split("\\.")`: trailing empty strings are dropped; an empty string gives one
/// empty section.
fn java_split_dots(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return vec![""];
    }
    let mut parts: Vec<&str> = s.split('.').collect();
    while parts.last() == Some(&"") {
        parts.pop();
    }
    parts
}

/// Base64url (or, leniently, standard base64) with or without padding.
fn decode_base64_lenient(section: &str) -> Option<Vec<u8>> {
    URL_SAFE_LENIENT.decode(section).or_else(|_| STANDARD_LENIENT.decode(section)).ok()
}

/// Kafka's `OAuthBearerUnsecuredValidatorCallbackHandler` options (its JAAS options).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnsecuredOptions {
    /// `unsecuredValidatorPrincipalClaimName`, default `sub`.
    pub(crate) principal_claim_name: String,
    /// `unsecuredValidatorScopeClaimName`, default `scope`.
    pub(crate) scope_claim_name: String,
    /// `unsecuredValidatorRequiredScope`, space-delimited in the option.
    pub(crate) required_scope: Vec<String>,
    /// `unsecuredValidatorAllowableClockSkewMs`, default 0.
    pub(crate) allowable_clock_skew_ms: u64,
}

impl Default for UnsecuredOptions {
    fn default() -> Self {
        Self {
            principal_claim_name: DEFAULT_SUB_CLAIM_NAME.to_owned(),
            scope_claim_name: DEFAULT_SCOPE_CLAIM_NAME.to_owned(),
            required_scope: Vec::new(),
            allowable_clock_skew_ms: 0,
        }
    }
}

impl UnsecuredOptions {
    /// Reads Kafka's `unsecuredValidator*` JAAS options (other keys are ignored); blank values
    /// take the defaults, as in Kafka.
    pub(crate) fn from_jaas_options(
        options: &BTreeMap<String, String>,
    ) -> Result<Self, OAuthError> {
        let non_blank = |key: &str| {
            options.get(key).map(|value| java_trim(value)).filter(|value| !value.is_empty())
        };
        let mut result = Self::default();
        if let Some(name) = non_blank(PRINCIPAL_CLAIM_NAME_OPTION) {
            name.clone_into(&mut result.principal_claim_name);
        }
        if let Some(name) = non_blank(SCOPE_CLAIM_NAME_OPTION) {
            name.clone_into(&mut result.scope_claim_name);
        }
        if let Some(scope) = non_blank(REQUIRED_SCOPE_OPTION) {
            result.required_scope = parse_scope(scope)?;
        }
        if let Some(skew) = non_blank(ALLOWABLE_CLOCK_SKEW_MS_OPTION) {
            let parsed: i32 = skew.parse().map_err(|_| OAuthError::InvalidOption {
                option: ALLOWABLE_CLOCK_SKEW_MS_OPTION,
                reason: format!("for input string: {skew:?}"),
            })?;
            result.allowable_clock_skew_ms =
                u64::try_from(parsed).map_err(|_| OAuthError::InvalidOption {
                    option: ALLOWABLE_CLOCK_SKEW_MS_OPTION,
                    reason: format!("allowable clock skew millis must not be negative: {skew}"),
                })?;
        }
        Ok(result)
    }

    /// Kafka's `OAuthBearerUnsecuredValidatorCallbackHandler.handleCallback`.
    fn validate(&self, token: &str, now_ms: u64) -> Result<ValidatedToken, OAuthError> {
        let jws = UnsecuredJws::parse(token, &self.principal_claim_name, &self.scope_claim_name)
            .map_err(invalid_token)?;
        validate_claim_for_existence_and_type(
            &jws,
            true,
            &self.principal_claim_name,
            ClaimType::String,
        )
        .map_err(invalid_token)?;
        validate_issued_at(&jws, false, now_ms, self.allowable_clock_skew_ms)
            .map_err(invalid_token)?;
        validate_expiration_time(&jws, now_ms, self.allowable_clock_skew_ms)
            .map_err(invalid_token)?;
        validate_time_consistency(&jws).map_err(invalid_token)?;
        validate_scope(&jws.scope, &self.required_scope)?;
        Ok(ValidatedToken {
            principal_name: jws.principal_name,
            lifetime_ms: u64::try_from(jws.lifetime_ms).unwrap_or(0),
            scope: jws.scope.into_iter().collect(),
        })
    }
}

/// Kafka's `OAuthBearerScopeUtils.parseScope`: space-delimited RFC 6749 scope items.
fn parse_scope(space_delimited: &str) -> Result<Vec<String>, OAuthError> {
    let mut scope = Vec::new();
    for item in space_delimited.split(' ').filter(|item| !item.is_empty()) {
        if !SCOPE_ITEM_PATTERN.is_match(item) {
            return Err(OAuthError::InvalidOption {
                option: REQUIRED_SCOPE_OPTION,
                reason: format!("invalid scope value: {item}"),
            });
        }
        scope.push(item.to_owned());
    }
    Ok(scope)
}

/// A claim as Kafka's `OAuthBearerUnsecuredJws.convert` sees it: a number, a string (Jackson's
/// `asText()` of anything else) or a list of strings.
#[derive(Debug, Clone, PartialEq)]
enum Claim {
    Number(f64),
    Text(String),
    List(Vec<String>),
}

/// The types `OAuthBearerValidationUtils.validateClaimForExistenceAndType` can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClaimType {
    Number,
    String,
    List,
}

impl Claim {
    fn from_json(value: &Value) -> Self {
        match value {
            Value::Array(items) => Self::List(items.iter().map(json_as_text).collect()),
            Value::Number(n) => n.as_f64().map_or_else(|| Self::Text(n.to_string()), Self::Number),
            other => Self::Text(json_as_text(other)),
        }
    }

    fn claim_type(&self) -> ClaimType {
        match self {
            Self::Number(_) => ClaimType::Number,
            Self::Text(_) => ClaimType::String,
            Self::List(_) => ClaimType::List,
        }
    }
}

impl fmt::Display for ClaimType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Number => "Number",
            Self::String => "String",
            Self::List => "List",
        })
    }
}

/// Jackson's `JsonNode.asText()`.
fn json_as_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".to_owned(),
        Value::Array(_) | Value::Object(_) => String::new(),
    }
}

/// Kafka's `OAuthBearerUnsecuredJws`: an unsecured (`alg: none`) JWS, parsed and checked.
#[derive(Debug, Clone, PartialEq)]
struct UnsecuredJws {
    header: BTreeMap<String, Claim>,
    claims: BTreeMap<String, Claim>,
    principal_name: String,
    /// `Math.round(exp * 1000)`.
    lifetime_ms: i64,
    /// `Math.round(iat * 1000)`, if `iat` is present.
    start_time_ms: Option<i64>,
    scope: BTreeSet<String>,
}

impl UnsecuredJws {
    /// Kafka's constructor; the error is the validation failure's description.
    fn parse(
        compact: &str,
        principal_claim_name: &str,
        scope_claim_name: &str,
    ) -> Result<Self, String> {
        if compact.contains("..") {
            return Err("malformed compact serialization contains '..'".to_owned());
        }
        let mut splits = java_split_dots(compact);
        if compact.ends_with('.') {
            splits.push("");
        }
        let [header, claims, signature] = splits.as_slice() else {
            return Err(
                "unsecured jws compact serializations must have 3 dot-separated base64url-encoded values"
                    .to_owned(),
            );
        };
        let header = to_claim_map(header)?;
        let claims = to_claim_map(claims)?;
        match header.get("alg") {
            None => return Err("jws header must have an algorithm value".to_owned()),
            Some(Claim::Text(alg)) if alg == "none" => {}
            Some(_) => return Err("unsecured jws must have 'none' for an algorithm".to_owned()),
        }
        if !signature.is_empty() {
            return Err("unsecured jws must not contain a digital signature".to_owned());
        }
        let scope = calculate_scope(&claims, scope_claim_name)?;
        let exp =
            claim_number(&claims, "exp")?.ok_or_else(|| "no expiration time in jwt".to_owned())?;
        let principal_name = match claim_text(&claims, principal_claim_name)? {
            Some(name) if !java_trim(name).is_empty() => name.to_owned(),
            _ => return Err(format!("no principal name in jwt claim: {principal_claim_name}")),
        };
        let start_time_ms = claim_number(&claims, "iat")?.map(seconds_to_ms);
        Ok(Self {
            header,
            claims,
            principal_name,
            lifetime_ms: seconds_to_ms(exp),
            start_time_ms,
            scope,
        })
    }

    fn expiration_time(&self) -> Result<Option<f64>, String> {
        claim_number(&self.claims, "exp")
    }

    fn issued_at(&self) -> Result<Option<f64>, String> {
        claim_number(&self.claims, "iat")
    }
}

/// Kafka's `convertClaimTimeInSecondsToMs`: `Math.round(seconds * 1000)`.
#[expect(clippy::cast_possible_truncation, reason = "saturating, as Java's Math.round")]
fn seconds_to_ms(seconds: f64) -> i64 {
    (seconds * 1000.0 + 0.5).floor() as i64
}

/// Kafka's `OAuthBearerUnsecuredJws.toMap`: base64 then JSON; anything but an object is empty.
fn to_claim_map(section: &str) -> Result<BTreeMap<String, Claim>, String> {
    let bytes = decode_base64_lenient(section)
        .ok_or_else(|| "malformed base64 url encoded value".to_owned())?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|_| "malformed json".to_owned())?;
    Ok(match value {
        Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), Claim::from_json(v))).collect(),
        _ => BTreeMap::new(),
    })
}

fn type_mismatch(claim_name: &str, wanted: ClaimType, found: &Claim) -> String {
    format!("the '{claim_name}' claim was not of type {wanted}: {}", found.claim_type())
}

fn claim_number(claims: &BTreeMap<String, Claim>, name: &str) -> Result<Option<f64>, String> {
    match claims.get(name) {
        None => Ok(None),
        Some(Claim::Number(n)) => Ok(Some(*n)),
        Some(other) => Err(type_mismatch(name, ClaimType::Number, other)),
    }
}

fn claim_text<'a>(
    claims: &'a BTreeMap<String, Claim>,
    name: &str,
) -> Result<Option<&'a str>, String> {
    match claims.get(name) {
        None => Ok(None),
        Some(Claim::Text(s)) => Ok(Some(s)),
        Some(other) => Err(type_mismatch(name, ClaimType::String, other)),
    }
}

/// Kafka's `OAuthBearerUnsecuredJws.calculateScope`: a string claim is one scope item (not split),
/// a list gives its non-blank items, both trimmed.
fn calculate_scope(
    claims: &BTreeMap<String, Claim>,
    scope_claim_name: &str,
) -> Result<BTreeSet<String>, String> {
    match claims.get(scope_claim_name) {
        None => Ok(BTreeSet::new()),
        Some(Claim::Text(value)) => {
            let trimmed = java_trim(value);
            Ok(if trimmed.is_empty() {
                BTreeSet::new()
            } else {
                BTreeSet::from([trimmed.to_owned()])
            })
        }
        Some(Claim::List(items)) => Ok(items
            .iter()
            .map(|item| java_trim(item))
            .filter(|item| !item.is_empty())
            .map(str::to_owned)
            .collect()),
        Some(other) => Err(type_mismatch(scope_claim_name, ClaimType::List, other)),
    }
}

/// Kafka's `OAuthBearerValidationUtils.validateClaimForExistenceAndType`.
fn validate_claim_for_existence_and_type(
    jws: &UnsecuredJws,
    required: bool,
    claim_name: &str,
    allowed: ClaimType,
) -> Result<(), String> {
    match jws.claims.get(claim_name) {
        None if required => Err(format!("required claim missing: {claim_name}")),
        None => Ok(()),
        Some(claim) if claim.claim_type() == allowed => Ok(()),
        Some(claim) => {
            Err(format!("the {claim_name} claim had the incorrect type: {}", claim.claim_type()))
        }
    }
}

/// Kafka's `OAuthBearerValidationUtils.validateIssuedAt`: `iat` must not be after `now + skew`.
fn validate_issued_at(
    jws: &UnsecuredJws,
    required: bool,
    now_ms: u64,
    skew_ms: u64,
) -> Result<(), String> {
    let Some(iat) = jws.issued_at()? else {
        return if required { Err("required claim missing: iat".to_owned()) } else { Ok(()) };
    };
    if 1000.0 * iat > ms_as_f64(now_ms) + ms_as_f64(skew_ms) {
        return Err(format!(
            "the issued at value ({iat:.6} seconds) was after the indicated time ({now_ms} ms) plus allowable clock skew ({skew_ms} ms)"
        ));
    }
    Ok(())
}

/// Kafka's `OAuthBearerValidationUtils.validateExpirationTime`: `now - skew` must be before `exp`.
fn validate_expiration_time(jws: &UnsecuredJws, now_ms: u64, skew_ms: u64) -> Result<(), String> {
    let Some(exp) = jws.expiration_time()? else {
        return Err("required claim missing: exp".to_owned());
    };
    if ms_as_f64(now_ms) - ms_as_f64(skew_ms) >= 1000.0 * exp {
        return Err(format!(
            "the indicated time ({now_ms} ms) minus allowable clock skew ({skew_ms} ms) was on or after the expiration time value ({exp:.6} seconds)"
        ));
    }
    Ok(())
}

/// Kafka's `OAuthBearerValidationUtils.validateTimeConsistency`: `exp > iat` when both exist.
fn validate_time_consistency(jws: &UnsecuredJws) -> Result<(), String> {
    if let (Some(iat), Some(exp)) = (jws.issued_at()?, jws.expiration_time()?)
        && exp <= iat
    {
        return Err(format!(
            "the expiration time time ({exp:.6} seconds) was not after the issued at time ({iat:.6} seconds)"
        ));
    }
    Ok(())
}

/// Java's `List.toString()`: `[a, b]`.
fn java_list<'a>(items: impl IntoIterator<Item = &'a String>) -> String {
    let joined: Vec<&str> = items.into_iter().map(String::as_str).collect();
    format!("[{}]", joined.join(", "))
}

/// Kafka's `OAuthBearerValidationUtils.validateScope`: every required item must be present; the
/// failure scope is the required scope as Java prints a list.
fn validate_scope(
    token_scope: &BTreeSet<String>,
    required_scope: &[String],
) -> Result<(), OAuthError> {
    for required in required_scope {
        if !token_scope.contains(required) {
            return Err(OAuthError::InsufficientScope {
                required_scope: java_list(required_scope),
                reason: format!(
                    "the provided scope ({}) was missing a required scope ({required}).  all required scope elements: {}",
                    java_list(token_scope),
                    java_list(required_scope)
                ),
            });
        }
    }
    Ok(())
}

mod jwks;

pub(crate) use jwks::{JwksValidator, parse_file_url};

// ---------------------------------------------------------------------------------------------
// The exchange
// ---------------------------------------------------------------------------------------------

/// What the server answers to one client message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OAuthStep {
    /// Authentication succeeded; the server's final (empty) message is implied.
    Complete {
        /// The authenticated principal (Kafka's `getAuthorizationID()`).
        principal_name: String,
        /// The token's absolute expiry in ms (Kafka's `CREDENTIAL_LIFETIME_MS` property).
        lifetime_ms: u64,
    },
    /// The token was refused: send these bytes (Kafka's JSON error) and expect `%x01` back.
    Challenge(Vec<u8>),
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
enum ServerState {
    #[default]
    AwaitingInitialResponse,
    ChallengeSent {
        error_json: String,
    },
    Complete {
        token: ValidatedToken,
        extensions: BTreeMap<String, String>,
    },
    Failed,
}

/// Kafka's `OAuthBearerSaslServer`: the server side of one OAUTHBEARER exchange.
#[derive(Debug, Default)]
pub(crate) struct OAuthBearerServer {
    state: ServerState,
}

impl OAuthBearerServer {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Kafka's `evaluateResponse`. The first message is the client initial response: a valid
    /// token completes the exchange, a refused one yields the JSON error challenge. After a
    /// challenge, the client's `%x01` ends the exchange with [`OAuthError::FailedAfterChallenge`]
    /// (whose [`OAuthError::client_message`] is the JSON, as in Kafka) and any other message with
    /// [`OAuthError::UnexpectedMessageAfterChallenge`]. Every error leaves the exchange failed.
    pub(crate) fn evaluate(
        &mut self,
        message: &[u8],
        validator: &TokenValidator,
        now_ms: u64,
    ) -> Result<OAuthStep, OAuthError> {
        let result = match std::mem::replace(&mut self.state, ServerState::Failed) {
            ServerState::AwaitingInitialResponse => self.process(message, validator, now_ms),
            ServerState::ChallengeSent { error_json } => {
                if message == [0x01] {
                    Err(OAuthError::FailedAfterChallenge { challenge: error_json })
                } else {
                    Err(OAuthError::UnexpectedMessageAfterChallenge)
                }
            }
            complete @ ServerState::Complete { .. } => {
                self.state = complete;
                return Err(OAuthError::AlreadyComplete);
            }
            ServerState::Failed => Err(OAuthError::AlreadyFailed),
        };
        if result.is_err() {
            self.state = ServerState::Failed;
        }
        result
    }

    fn process(
        &mut self,
        message: &[u8],
        validator: &TokenValidator,
        now_ms: u64,
    ) -> Result<OAuthStep, OAuthError> {
        let response = parse_client_initial_response(message)?;
        let token = match validator.validate(&response.token, now_ms) {
            Ok(token) => token,
            Err(error) => {
                let Some((status, scope)) = error.challenge_status() else {
                    return Err(error);
                };
                let error_json = json_error_response(status, scope, None);
                let challenge = error_json.clone().into_bytes();
                self.state = ServerState::ChallengeSent { error_json };
                return Ok(OAuthStep::Challenge(challenge));
            }
        };
        if let Some(authorization_id) = response.authorization_id
            && authorization_id != token.principal_name
        {
            return Err(OAuthError::AuthorizationIdMismatch {
                authorization_id,
                principal_name: token.principal_name,
            });
        }
        let step = OAuthStep::Complete {
            principal_name: token.principal_name.clone(),
            lifetime_ms: token.lifetime_ms,
        };
        // Kafka's built-in validator callback handlers accept every extension.
        self.state = ServerState::Complete { token, extensions: response.extensions };
        Ok(step)
    }

    /// Whether the exchange completed successfully (Kafka's `isComplete()`).
    pub(crate) fn is_complete(&self) -> bool {
        std::matches!(self.state, ServerState::Complete { .. })
    }

    /// The validated token, once complete (Kafka's `OAUTHBEARER.token` negotiated property).
    pub(crate) fn validated_token(&self) -> Option<&ValidatedToken> {
        match &self.state {
            ServerState::Complete { token, .. } => Some(token),
            _ => None,
        }
    }

    /// The client's SASL extensions, once complete (Kafka's other negotiated properties).
    pub(crate) fn extensions(&self) -> Option<&BTreeMap<String, String>> {
        match &self.state {
            ServerState::Complete { extensions, .. } => Some(extensions),
            _ => None,
        }
    }
}

/// Kafka's `OAuthBearerSaslServer.jsonErrorResponse`, byte for byte (members are not escaped:
/// the status is a constant and scope items cannot hold `"` or `\`).
fn json_error_response(
    status: &str,
    scope: Option<&str>,
    openid_configuration: Option<&str>,
) -> String {
    let mut json = format!("{{\"status\":\"{status}\"");
    if let Some(scope) = scope {
        json = format!("{json}, \"scope\":\"{scope}\"");
    }
    if let Some(openid_configuration) = openid_configuration {
        json = format!("{json}, \"openid-configuration\":\"{openid_configuration}\"");
    }
    json.push('}');
    json
}

#[cfg(test)]
#[path = "oauth_tests.rs"]
mod tests;
