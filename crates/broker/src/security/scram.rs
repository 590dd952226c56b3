//! SASL/SCRAM (RFC 5802, RFC 7677) for the broker: plays the roles of Kafka's `ScramSaslServer`,
//! `ScramFormatter`, `ScramMessages`, `ScramCredential` and `ScramMechanism`
//! (clients/.../common/security/scram/), plus a `ScramSaslClient` for tests and tools.
//!
//! The message grammar is Kafka's (`ScramMessages`): the same regular expressions, so usernames,
//! nonces and extensions are printable ASCII exactly as Kafka accepts them. Where seglog departs
//! from Kafka it is stricter, never looser:
//! - an unknown user is not revealed at client-first: the exchange goes on with a fake credential
//!   (salt derived from the username with an HMAC keyed by a per-process random secret, 4096
//!   iterations) and fails at client-final with the same [`ScramError::InvalidCredentials`] as a
//!   wrong password (Kafka fails at client-first);
//! - the `c=` channel binding must be the base64 of the gs2 header the client sent (RFC 5802
//!   section 5.1; Kafka does not check it, and its own client always sends `c=biws`);
//! - the client-final nonce must equal the combined nonce (Kafka: "ends with");
//! - the auth message is built from the messages as sent (RFC 5802), where Kafka rebuilds it from
//!   the parsed fields (the same bytes for every message Kafka's client sends);
//! - the `a=` authorization id is decoded as a saslname before it is compared to the username;
//! - `tokenauth=true` (delegation tokens) is refused with [`ScramError::DelegationTokenUnsupported`]:
//!   seglog has no delegation tokens;
//! - `y,` and `p=` gs2 flags are refused with [`ScramError::ChannelBindingUnsupported`] (Kafka
//!   refuses them as a format error).

#![cfg_attr(
    not(test),
    allow(
        dead_code,
        reason = "the client side of SCRAM (ScramClient, the server messages' parsers) serves the tests and the fuzz target's seeds"
    )
)]

use std::fmt;
use std::sync::{LazyLock, OnceLock};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, KeyInit, Mac};
use regex::Regex;
use sha2::{Digest, Sha256, Sha512};
use subtle::{Choice, ConstantTimeEq};

/// Iterations of the fake credential used for an unknown user (Kafka's minimum, the count
/// Kafka's tools use by default).
const FAKE_ITERATIONS: u32 = 4096;

/// The only gs2 header Kafka's client sends: no channel binding, no authorization id.
const GS2_HEADER_NO_AUTHZID: &str = "n,,";

/// Errors of a SCRAM exchange, of credential creation and of the test client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ScramError {
    /// A message that does not follow Kafka's SCRAM grammar (`ScramMessages`).
    #[error("malformed scram {message} message: {reason}")]
    Malformed { message: &'static str, reason: &'static str },
    /// The client asked for channel binding (`y,` or `p=` gs2 flag), which Kafka does not support.
    #[error(
        "scram channel binding is not supported (gs2 flag '{flag}' in the client first message)"
    )]
    ChannelBindingUnsupported { flag: char },
    /// A saslname with a `=` that is not part of `=2C` or `=3D`.
    #[error("invalid scram saslname '{sasl_name}': '=' must be followed by 2C or 3D")]
    InvalidSaslName { sasl_name: String },
    /// The `a=` authorization id is not the authenticating username.
    #[error(
        "authentication failed: client requested an authorization id that is different from username"
    )]
    AuthorizationIdMismatch,
    /// The client asked for delegation-token authentication (`tokenauth=true`).
    #[error("scram delegation token authentication (tokenauth extension) is not supported")]
    DelegationTokenUnsupported,
    /// An iteration count below the mechanism's minimum (Kafka: "Too few iterations").
    #[error("iterations {iterations} is less than the minimum {minimum} for {mechanism}")]
    TooFewIterations { iterations: i64, minimum: u32, mechanism: &'static str },
    /// An iteration count above the mechanism's maximum (Kafka: "Too many iterations").
    #[error("iterations {iterations} is more than the maximum {maximum} for {mechanism}")]
    TooManyIterations { iterations: i64, maximum: u32, mechanism: &'static str },
    /// The client-final nonce is not the nonce of the server-first message.
    #[error("invalid client nonce in the client final message")]
    InvalidNonce,
    /// The client-final `c=` value is not the base64 of the client's gs2 header.
    #[error("scram channel binding in the client final message does not match the gs2 header")]
    ChannelBindingMismatch,
    /// Wrong password or unknown user: deliberately one error for both.
    #[error("authentication failed: invalid credentials")]
    InvalidCredentials,
    /// A message that arrives in a state that does not expect one.
    #[error("unexpected scram message in state {state}")]
    UnexpectedMessage { state: &'static str },
    /// The server-first nonce does not start with the client nonce (client side).
    #[error("scram server nonce does not start with the client nonce")]
    ServerNonceMismatch,
    /// The server-final message carries `e=` (client side).
    #[error("scram server reported error '{error}'")]
    ServerError { error: String },
    /// The server-final signature is not the expected one (client side).
    #[error("invalid scram server signature in the server final message")]
    InvalidServerSignature,
    /// The operating system's random generator failed.
    #[error("could not read random bytes for scram: {0}")]
    Random(getrandom::Error),
}

impl ScramError {
    /// The text Kafka sends in the SaslAuthenticate response for this error, when Kafka sends the
    /// error's own text (a `SaslAuthenticationException`). `None` means Kafka sends the generic
    /// "Authentication failed during authentication due to invalid credentials with SASL
    /// mechanism SCRAM-SHA-256" instead, so that nothing leaks to an unauthenticated client.
    pub(crate) fn client_message(&self) -> Option<&'static str> {
        match self {
            Self::AuthorizationIdMismatch => Some(
                "Authentication failed: Client requested an authorization id that is different from username",
            ),
            _ => None,
        }
    }
}

/// Kafka's `ScramMechanism`: SCRAM-SHA-256 or SCRAM-SHA-512, with their wire type codes and
/// iteration bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum ScramMechanism {
    Sha256,
    Sha512,
}

impl ScramMechanism {
    /// Both mechanisms, in Kafka's type order.
    pub(crate) const ALL: [Self; 2] = [Self::Sha256, Self::Sha512];

    /// The SASL mechanism name (`SCRAM-SHA-256`, `SCRAM-SHA-512`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Sha256 => "SCRAM-SHA-256",
            Self::Sha512 => "SCRAM-SHA-512",
        }
    }

    /// The mechanism of a SASL mechanism name; case-sensitive like Kafka's `forMechanismName`.
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The type code of DescribeUserScramCredentials / AlterUserScramCredentials and of
    /// `UserScramCredentialRecord` (Kafka's `ScramMechanism.type()`): 1 = SHA-256, 2 = SHA-512.
    pub(crate) fn kafka_type(self) -> i8 {
        match self {
            Self::Sha256 => 1,
            Self::Sha512 => 2,
        }
    }

    /// The mechanism of a type code; `None` for Kafka's `UNKNOWN` (0) and any other code.
    pub(crate) fn from_kafka_type(code: i8) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.kafka_type() == code)
    }

    /// The minimum iteration count (4096, RFC 7677).
    pub(crate) fn min_iterations(self) -> u32 {
        match self {
            Self::Sha256 | Self::Sha512 => 4096,
        }
    }

    /// The maximum iteration count accepted by AlterUserScramCredentials (Kafka's
    /// `ScramControlManager.MAX_ITERATIONS`).
    pub(crate) fn max_iterations(self) -> u32 {
        match self {
            Self::Sha256 | Self::Sha512 => 16384,
        }
    }

    /// Kafka's `ScramControlManager.validateUpsertion` bounds: the iteration count of an
    /// AlterUserScramCredentials upsertion (an int32 on the wire), as a `u32` when in range.
    pub(crate) fn check_iterations(self, iterations: i32) -> Result<u32, ScramError> {
        if i64::from(iterations) < i64::from(self.min_iterations()) {
            return Err(ScramError::TooFewIterations {
                iterations: i64::from(iterations),
                minimum: self.min_iterations(),
                mechanism: self.name(),
            });
        }
        if i64::from(iterations) > i64::from(self.max_iterations()) {
            return Err(ScramError::TooManyIterations {
                iterations: i64::from(iterations),
                maximum: self.max_iterations(),
                mechanism: self.name(),
            });
        }
        Ok(iterations.unsigned_abs())
    }

    /// Kafka's `ScramFormatter.hmac`.
    fn hmac(self, key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
        match self {
            Self::Sha256 => hmac_of::<Hmac<Sha256>>(key, parts),
            Self::Sha512 => hmac_of::<Hmac<Sha512>>(key, parts),
        }
    }

    /// Kafka's `ScramFormatter.hash`.
    fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            Self::Sha256 => Sha256::digest(data).to_vec(),
            Self::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// Kafka's `ScramFormatter.hi` (PBKDF2 with one output block); 0 iterations count as 1,
    /// as in Kafka's loop.
    fn hi(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        let rounds = iterations.max(1);
        match self {
            Self::Sha256 => {
                let mut out = vec![0; 32];
                pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, rounds, &mut out);
                out
            }
            Self::Sha512 => {
                let mut out = vec![0; 64];
                pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, rounds, &mut out);
                out
            }
        }
    }

    /// Kafka's `ScramFormatter.clientKey`.
    fn client_key(self, salted_password: &[u8]) -> Vec<u8> {
        self.hmac(salted_password, &[b"Client Key"])
    }

    /// Kafka's `ScramFormatter.serverKey`.
    fn server_key(self, salted_password: &[u8]) -> Vec<u8> {
        self.hmac(salted_password, &[b"Server Key"])
    }
}

impl fmt::Display for ScramMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

fn hmac_of<M: Mac + KeyInit>(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    let mut mac = <M as KeyInit>::new_from_slice(key).expect("hmac accepts keys of any length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().to_vec()
}

fn xor(a: &[u8], b: &[u8]) -> Vec<u8> {
    a.iter().zip(b).map(|(x, y)| x ^ y).collect()
}

/// Kafka's `ScramFormatter.saltedPassword`: Hi(password, salt, iterations). The password is
/// used as its UTF-8 bytes (Kafka's `normalize` does no SASLprep). This is what an
/// AlterUserScramCredentials client sends.
pub(crate) fn salted_password(
    mechanism: ScramMechanism,
    password: &str,
    salt: &[u8],
    iterations: u32,
) -> Vec<u8> {
    mechanism.hi(password.as_bytes(), salt, iterations)
}

/// Kafka's `ScramCredential`: what the broker stores per user and mechanism (salt, StoredKey,
/// ServerKey, iteration count; RFC 5802 section 5). `Debug` hides the keys.
#[derive(Clone)]
pub(crate) struct ScramCredential {
    pub(crate) salt: Vec<u8>,
    pub(crate) stored_key: Vec<u8>,
    pub(crate) server_key: Vec<u8>,
    pub(crate) iterations: u32,
}

impl ScramCredential {
    /// Kafka's `ScramFormatter.generateCredential(password, iterations)` with a given salt.
    pub(crate) fn from_password(
        mechanism: ScramMechanism,
        password: &str,
        salt: &[u8],
        iterations: u32,
    ) -> Self {
        let salted = salted_password(mechanism, password, salt, iterations);
        Self::from_salted_password(mechanism, &salted, salt, iterations)
    }

    /// Kafka's `ScramFormatter.generateCredential(salt, saltedPassword, iterations)`, as
    /// `ScramControlManager` does for an AlterUserScramCredentials upsertion.
    pub(crate) fn from_salted_password(
        mechanism: ScramMechanism,
        salted_password: &[u8],
        salt: &[u8],
        iterations: u32,
    ) -> Self {
        let client_key = mechanism.client_key(salted_password);
        Self {
            salt: salt.to_vec(),
            stored_key: mechanism.hash(&client_key),
            server_key: mechanism.server_key(salted_password),
            iterations,
        }
    }
}

impl PartialEq for ScramCredential {
    /// Compares the keys in constant time.
    fn eq(&self, other: &Self) -> bool {
        let keys =
            self.stored_key.ct_eq(&other.stored_key) & self.server_key.ct_eq(&other.server_key);
        self.salt == other.salt && self.iterations == other.iterations && bool::from(keys)
    }
}

impl Eq for ScramCredential {}

impl fmt::Debug for ScramCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScramCredential")
            .field("salt", &BASE64.encode(&self.salt))
            .field("stored_key", &"<redacted>")
            .field("server_key", &"<redacted>")
            .field("iterations", &self.iterations)
            .finish()
    }
}

/// Kafka's `ScramFormatter.secureRandomString` on 130 bits: `BigInteger.toString(36)`, lowercase
/// base-36 digits without leading zeros (1 to 26 characters).
fn base36_of_130_bits(mut bits: [u8; 17]) -> String {
    bits[0] &= 0x03;
    let mut digits = Vec::with_capacity(26);
    while bits.iter().any(|&b| b != 0) {
        let mut remainder = 0u32;
        for byte in &mut bits {
            let current = (remainder << 8) | u32::from(*byte);
            *byte = (current / 36) as u8;
            remainder = current % 36;
        }
        digits.push(b"0123456789abcdefghijklmnopqrstuvwxyz"[remainder as usize]);
    }
    if digits.is_empty() {
        digits.push(b'0');
    }
    digits.reverse();
    digits.into_iter().map(char::from).collect()
}

fn random_base36() -> Result<String, ScramError> {
    let mut bits = [0u8; 17];
    getrandom::fill(&mut bits).map_err(ScramError::Random)?;
    Ok(base36_of_130_bits(bits))
}

/// A new random salt shaped like Kafka's (`ScramFormatter.secureRandomBytes`, used by
/// `UserScramCredentialUpsertion` and `kafka-storage`): the UTF-8 bytes of a base-36 string of
/// 130 random bits.
pub(crate) fn random_salt() -> Result<Vec<u8>, ScramError> {
    Ok(random_base36()?.into_bytes())
}

/// Kafka's `ScramFormatter.saslName`: `=` as `=3D`, `,` as `=2C`.
pub(crate) fn sasl_name(username: &str) -> String {
    username.replace('=', "=3D").replace(',', "=2C")
}

/// Kafka's `ScramFormatter.username`: the inverse of [`sasl_name`]; any other `=` is an error.
pub(crate) fn username_of(sasl_name: &str) -> Result<String, ScramError> {
    let commas = sasl_name.replace("=2C", ",");
    if commas.replace("=3D", "").contains('=') {
        return Err(ScramError::InvalidSaslName { sasl_name: sasl_name.to_owned() });
    }
    Ok(commas.replace("=3D", "="))
}

/// The per-process secret that keys the fake credentials of unknown users.
fn fake_secret() -> Result<&'static [u8; 32], ScramError> {
    static SECRET: OnceLock<[u8; 32]> = OnceLock::new();
    if let Some(secret) = SECRET.get() {
        return Ok(secret);
    }
    let mut fresh = [0u8; 32];
    getrandom::fill(&mut fresh).map_err(ScramError::Random)?;
    Ok(SECRET.get_or_init(|| fresh))
}

/// The credential shown to a client that names an unknown user: stable for a username within
/// the process, shaped like a real one, and matching no password.
fn fake_credential(
    mechanism: ScramMechanism,
    username: &str,
) -> Result<ScramCredential, ScramError> {
    let secret = fake_secret()?;
    let derive = |label: &[u8]| {
        hmac_of::<Hmac<Sha256>>(
            secret,
            &[label, mechanism.name().as_bytes(), b"\0", username.as_bytes()],
        )
    };
    let salt_bits = derive(b"seglog-scram-fake-salt\0");
    let mut bits = [0u8; 17];
    bits.copy_from_slice(&salt_bits[..17]);
    let key_len = mechanism.hash(b"").len();
    let mut stored_key = derive(b"seglog-scram-fake-stored-key\0");
    stored_key.resize(key_len, 0);
    let mut server_key = derive(b"seglog-scram-fake-server-key\0");
    server_key.resize(key_len, 0);
    Ok(ScramCredential {
        salt: base36_of_130_bits(bits).into_bytes(),
        stored_key,
        server_key,
        iterations: FAKE_ITERATIONS,
    })
}

// ---- Kafka's ScramMessages: the grammar -------------------------------------------------------

const ALPHA: &str = "[A-Za-z]+";
const VALUE_SAFE: &str = r"[\x01-\x7F&&[^=,]]+";
const VALUE: &str = r"[\x01-\x7F&&[^,]]+";
const PRINTABLE: &str = r"[\x21-\x7E&&[^,]]+";
const SASLNAME: &str = r"(?:[\x01-\x7F&&[^=,]]|=2C|=3D)+";
const BASE64_CHARS: &str = "(?:(?:[a-zA-Z0-9/+]{4})*(?:[a-zA-Z0-9/+]{3}=|[a-zA-Z0-9/+]{2}==)?)";

fn reserved() -> String {
    format!("(?:m={VALUE},)?")
}

fn extensions() -> String {
    format!("(?:,{ALPHA}={VALUE})*")
}

fn compile(pattern: &str) -> Regex {
    Regex::new(&format!(r"\A(?:{pattern})\z")).expect("scram grammar patterns are valid")
}

static CLIENT_FIRST: LazyLock<Regex> = LazyLock::new(|| {
    compile(&format!(
        "(?<gs2>n,(?:a=(?<authzid>{SASLNAME}))?,)(?<bare>{}n=(?<saslname>{SASLNAME}),r=(?<nonce>{PRINTABLE})(?<extensions>{}))",
        reserved(),
        extensions()
    ))
});

static SERVER_FIRST: LazyLock<Regex> = LazyLock::new(|| {
    compile(&format!(
        "{}r=(?<nonce>{PRINTABLE}),s=(?<salt>{BASE64_CHARS}),i=(?<iterations>[0-9]+){}",
        reserved(),
        extensions()
    ))
});

static CLIENT_FINAL: LazyLock<Regex> = LazyLock::new(|| {
    compile(&format!(
        "(?<without_proof>c=(?<channel>{BASE64_CHARS}),r=(?<nonce>{PRINTABLE}){}),p=(?<proof>{BASE64_CHARS})",
        extensions()
    ))
});

static SERVER_FINAL: LazyLock<Regex> = LazyLock::new(|| {
    compile(&format!("e=(?<error>{VALUE_SAFE})|v=(?<signature>{BASE64_CHARS}){}", extensions()))
});

const CLIENT_FIRST_NAME: &str = "client first";
const SERVER_FIRST_NAME: &str = "server first";
const CLIENT_FINAL_NAME: &str = "client final";
const SERVER_FINAL_NAME: &str = "server final";
const GRAMMAR: &str = "does not match the rfc 5802 grammar";

fn utf8<'a>(message: &'static str, bytes: &'a [u8]) -> Result<&'a str, ScramError> {
    std::str::from_utf8(bytes)
        .map_err(|_| ScramError::Malformed { message, reason: "not valid utf-8" })
}

fn base64_field(
    message: &'static str,
    reason: &'static str,
    text: &str,
) -> Result<Vec<u8>, ScramError> {
    BASE64.decode(text).map_err(|_| ScramError::Malformed { message, reason })
}

/// Kafka's `ClientFirstMessage`: `gs2-header [reserved-mext ","] username "," nonce ["," extensions]`.
#[derive(Debug)]
struct ClientFirstMessage<'a> {
    gs2_header: &'a str,
    /// The raw `a=` saslname, if any.
    authorization_id: Option<&'a str>,
    sasl_name: &'a str,
    nonce: &'a str,
    /// client-first-message-bare, as sent.
    bare: &'a str,
    /// `tokenauth` extension (Kafka's `ScramExtensions.tokenAuthenticated`, last one wins).
    token_auth: bool,
}

fn parse_client_first(bytes: &[u8]) -> Result<ClientFirstMessage<'_>, ScramError> {
    let text = utf8(CLIENT_FIRST_NAME, bytes)?;
    if let Some(flag @ ('y' | 'p')) = text.chars().next() {
        return Err(ScramError::ChannelBindingUnsupported { flag });
    }
    let malformed = ScramError::Malformed { message: CLIENT_FIRST_NAME, reason: GRAMMAR };
    let caps = CLIENT_FIRST.captures(text).ok_or(malformed.clone())?;
    let group = |name: &str| caps.name(name).map(|m| m.as_str());
    let extensions = group("extensions").unwrap_or_default();
    let token_auth = extensions
        .split(',')
        .filter_map(|ext| ext.split_once('='))
        .rfind(|(key, _)| *key == "tokenauth")
        .is_some_and(|(_, value)| value.eq_ignore_ascii_case("true"));
    Ok(ClientFirstMessage {
        gs2_header: group("gs2").ok_or(malformed.clone())?,
        authorization_id: group("authzid"),
        sasl_name: group("saslname").ok_or(malformed.clone())?,
        nonce: group("nonce").ok_or(malformed.clone())?,
        bare: group("bare").ok_or(malformed)?,
        token_auth,
    })
}

/// Kafka's `ServerFirstMessage`: `[reserved-mext ","] nonce "," salt "," iteration-count ["," extensions]`.
#[derive(Debug)]
struct ServerFirstMessage<'a> {
    nonce: &'a str,
    salt: Vec<u8>,
    iterations: u32,
}

fn parse_server_first(bytes: &[u8]) -> Result<ServerFirstMessage<'_>, ScramError> {
    let text = utf8(SERVER_FIRST_NAME, bytes)?;
    let malformed = ScramError::Malformed { message: SERVER_FIRST_NAME, reason: GRAMMAR };
    let caps = SERVER_FIRST.captures(text).ok_or(malformed.clone())?;
    let iterations = caps
        .name("iterations")
        .and_then(|m| m.as_str().parse::<i32>().ok())
        .filter(|&i| i > 0)
        .ok_or(ScramError::Malformed {
            message: SERVER_FIRST_NAME,
            reason: "iterations is not a positive 32-bit integer",
        })?;
    let salt = caps.name("salt").ok_or(malformed.clone())?.as_str();
    Ok(ServerFirstMessage {
        nonce: caps.name("nonce").ok_or(malformed)?.as_str(),
        salt: base64_field(SERVER_FIRST_NAME, "salt is not valid base64", salt)?,
        iterations: iterations.unsigned_abs(),
    })
}

/// Kafka's `ClientFinalMessage`: `channel-binding "," nonce ["," extensions] "," proof`.
#[derive(Debug)]
struct ClientFinalMessage<'a> {
    channel_binding: Vec<u8>,
    nonce: &'a str,
    /// client-final-message-without-proof, as sent.
    without_proof: &'a str,
    proof: Vec<u8>,
}

fn parse_client_final(bytes: &[u8]) -> Result<ClientFinalMessage<'_>, ScramError> {
    let text = utf8(CLIENT_FINAL_NAME, bytes)?;
    let malformed = ScramError::Malformed { message: CLIENT_FINAL_NAME, reason: GRAMMAR };
    let caps = CLIENT_FINAL.captures(text).ok_or(malformed.clone())?;
    let group = |name: &str| caps.name(name).map(|m| m.as_str()).ok_or(malformed.clone());
    Ok(ClientFinalMessage {
        channel_binding: base64_field(
            CLIENT_FINAL_NAME,
            "channel binding is not valid base64",
            group("channel")?,
        )?,
        nonce: group("nonce")?,
        without_proof: group("without_proof")?,
        proof: base64_field(CLIENT_FINAL_NAME, "proof is not valid base64", group("proof")?)?,
    })
}

/// Kafka's `ServerFinalMessage`: `("e=" server-error-value | "v=" verifier) ["," extensions]`.
#[derive(Debug, PartialEq, Eq)]
enum ServerFinalMessage<'a> {
    Error(&'a str),
    Signature(Vec<u8>),
}

fn parse_server_final(bytes: &[u8]) -> Result<ServerFinalMessage<'_>, ScramError> {
    let text = utf8(SERVER_FINAL_NAME, bytes)?;
    let caps = SERVER_FINAL
        .captures(text)
        .ok_or(ScramError::Malformed { message: SERVER_FINAL_NAME, reason: GRAMMAR })?;
    if let Some(error) = caps.name("error") {
        return Ok(ServerFinalMessage::Error(error.as_str()));
    }
    let signature = caps.name("signature").map(|m| m.as_str()).unwrap_or_default();
    Ok(ServerFinalMessage::Signature(base64_field(
        SERVER_FINAL_NAME,
        "signature is not valid base64",
        signature,
    )?))
}

fn auth_message(
    client_first_bare: &str,
    server_first: &str,
    client_final_without_proof: &str,
) -> String {
    format!("{client_first_bare},{server_first},{client_final_without_proof}")
}

// ---- Kafka's ScramSaslServer ------------------------------------------------------------------

/// What a successful exchange yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScramOutcome {
    /// The server-final message (`v=<server signature>`) to send to the client.
    pub(crate) server_final: Vec<u8>,
    /// The authenticated username, which is also the authorization id.
    pub(crate) username: String,
}

/// The state between client-first and client-final.
struct PendingExchange {
    gs2_header: String,
    client_first_bare: String,
    server_first: String,
    nonce: String,
    username: String,
    credential: ScramCredential,
    /// False when `credential` is the fake one of an unknown user.
    known_user: bool,
}

enum ServerState {
    ReceiveClientFirst,
    ReceiveClientFinal(Box<PendingExchange>),
    Complete,
    Failed,
}

impl ServerState {
    fn name(&self) -> &'static str {
        match self {
            Self::ReceiveClientFirst => "receive-client-first-message",
            Self::ReceiveClientFinal(_) => "receive-client-final-message",
            Self::Complete => "complete",
            Self::Failed => "failed",
        }
    }
}

/// Kafka's `ScramSaslServer`: the broker side of one SCRAM exchange (client-first ->
/// server-first, client-final -> server-final). Any error moves it to the failed state.
pub(crate) struct ScramServer {
    mechanism: ScramMechanism,
    server_nonce: String,
    state: ServerState,
}

impl fmt::Debug for ScramServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("ScramServer");
        s.field("mechanism", &self.mechanism).field("state", &self.state.name());
        if let ServerState::ReceiveClientFinal(pending) = &self.state {
            s.field("username", &pending.username);
        }
        s.finish_non_exhaustive()
    }
}

impl ScramServer {
    /// A server with a random nonce (Kafka's `secureRandomString`: base 36 of 130 random bits).
    pub(crate) fn new(mechanism: ScramMechanism) -> Result<Self, ScramError> {
        Ok(Self::with_nonce(mechanism, &random_base36()?))
    }

    /// A server with a given nonce part (appended to the client's nonce), for tests. It must be
    /// printable ASCII without `,`.
    pub(crate) fn with_nonce(mechanism: ScramMechanism, server_nonce: &str) -> Self {
        Self {
            mechanism,
            server_nonce: server_nonce.to_owned(),
            state: ServerState::ReceiveClientFirst,
        }
    }

    pub(crate) fn mechanism(&self) -> ScramMechanism {
        self.mechanism
    }

    /// Kafka's `isComplete`.
    pub(crate) fn is_complete(&self) -> bool {
        std::matches!(self.state, ServerState::Complete)
    }

    /// Handles the client-first message and returns the server-first message. `lookup` gets the
    /// decoded username and returns its credential for this mechanism, if the user exists; an
    /// unknown user gets a fake credential and fails at client-final.
    pub(crate) fn client_first(
        &mut self,
        message: &[u8],
        lookup: impl FnOnce(&str) -> Option<ScramCredential>,
    ) -> Result<Vec<u8>, ScramError> {
        let state = std::mem::replace(&mut self.state, ServerState::Failed);
        if !matches!(state, ServerState::ReceiveClientFirst) {
            return Err(ScramError::UnexpectedMessage { state: state.name() });
        }
        let first = parse_client_first(message)?;
        if first.token_auth {
            return Err(ScramError::DelegationTokenUnsupported);
        }
        let username = username_of(first.sasl_name)?;
        if let Some(authzid) = first.authorization_id
            && username_of(authzid)? != username
        {
            return Err(ScramError::AuthorizationIdMismatch);
        }
        let (credential, known_user) = match lookup(&username) {
            Some(credential) => (credential, true),
            None => (fake_credential(self.mechanism, &username)?, false),
        };
        if known_user && credential.iterations < self.mechanism.min_iterations() {
            return Err(ScramError::TooFewIterations {
                iterations: i64::from(credential.iterations),
                minimum: self.mechanism.min_iterations(),
                mechanism: self.mechanism.name(),
            });
        }
        let nonce = format!("{}{}", first.nonce, self.server_nonce);
        let server_first =
            format!("r={nonce},s={},i={}", BASE64.encode(&credential.salt), credential.iterations);
        let reply = server_first.clone().into_bytes();
        self.state = ServerState::ReceiveClientFinal(Box::new(PendingExchange {
            gs2_header: first.gs2_header.to_owned(),
            client_first_bare: first.bare.to_owned(),
            server_first,
            nonce,
            username,
            credential,
            known_user,
        }));
        Ok(reply)
    }

    /// Handles the client-final message: checks nonce, channel binding and proof (in constant
    /// time), and returns the server-final message with the authenticated username.
    pub(crate) fn client_final(&mut self, message: &[u8]) -> Result<ScramOutcome, ScramError> {
        let state = std::mem::replace(&mut self.state, ServerState::Failed);
        let ServerState::ReceiveClientFinal(pending) = state else {
            return Err(ScramError::UnexpectedMessage { state: state.name() });
        };
        let last = parse_client_final(message)?;
        // Kafka's `ScramSaslServer` checks that the nonce ends with the combined one, not that
        // it equals it: librdkafka before 1.9 sends the client nonce again in front of it.
        if !last.nonce.ends_with(pending.nonce.as_str()) {
            return Err(ScramError::InvalidNonce);
        }
        if last.channel_binding != pending.gs2_header.as_bytes() {
            return Err(ScramError::ChannelBindingMismatch);
        }
        let auth =
            auth_message(&pending.client_first_bare, &pending.server_first, last.without_proof);
        let credential = &pending.credential;
        let client_signature = self.mechanism.hmac(&credential.stored_key, &[auth.as_bytes()]);
        if last.proof.len() != client_signature.len() {
            return Err(ScramError::InvalidCredentials);
        }
        let client_key = xor(&client_signature, &last.proof);
        let computed_stored_key = self.mechanism.hash(&client_key);
        let valid = computed_stored_key.ct_eq(&credential.stored_key)
            & Choice::from(u8::from(pending.known_user));
        if !bool::from(valid) {
            return Err(ScramError::InvalidCredentials);
        }
        let server_signature = self.mechanism.hmac(&credential.server_key, &[auth.as_bytes()]);
        self.state = ServerState::Complete;
        Ok(ScramOutcome {
            server_final: format!("v={}", BASE64.encode(server_signature)).into_bytes(),
            username: pending.username,
        })
    }
}

// ---- Kafka's ScramSaslClient (tests and tools) ------------------------------------------------

enum ClientState {
    Initial,
    ReceiveServerFinal { server_signature: Vec<u8> },
    Complete,
    Failed,
}

impl ClientState {
    fn name(&self) -> &'static str {
        match self {
            Self::Initial => "send-client-first-message",
            Self::ReceiveServerFinal { .. } => "receive-server-final-message",
            Self::Complete => "complete",
            Self::Failed => "failed",
        }
    }
}

/// Kafka's `ScramSaslClient`, for tests and tools: sends `n,,` (no authorization id, no channel
/// binding) and `c=biws`, as Kafka's client does, unless given an authorization id. `Debug`
/// hides the password.
pub(crate) struct ScramClient {
    mechanism: ScramMechanism,
    username: String,
    authorization_id: Option<String>,
    password: String,
    client_nonce: String,
    state: ClientState,
}

impl fmt::Debug for ScramClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScramClient")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .field("authorization_id", &self.authorization_id)
            .field("password", &"<redacted>")
            .field("state", &self.state.name())
            .finish_non_exhaustive()
    }
}

impl ScramClient {
    /// A client with a random nonce.
    pub(crate) fn new(
        mechanism: ScramMechanism,
        username: &str,
        password: &str,
    ) -> Result<Self, ScramError> {
        Ok(Self::with_nonce(mechanism, username, password, &random_base36()?))
    }

    /// A client with a given nonce, for tests (printable ASCII without `,`).
    pub(crate) fn with_nonce(
        mechanism: ScramMechanism,
        username: &str,
        password: &str,
        nonce: &str,
    ) -> Self {
        Self {
            mechanism,
            username: username.to_owned(),
            authorization_id: None,
            password: password.to_owned(),
            client_nonce: nonce.to_owned(),
            state: ClientState::Initial,
        }
    }

    /// Sends `n,a=<authzid>,` as the gs2 header (Kafka's own client never does; other clients
    /// may).
    pub(crate) fn with_authorization_id(mut self, authorization_id: &str) -> Self {
        self.authorization_id = Some(authorization_id.to_owned());
        self
    }

    fn gs2_header(&self) -> String {
        match &self.authorization_id {
            Some(authzid) => format!("n,a={},", sasl_name(authzid)),
            None => GS2_HEADER_NO_AUTHZID.to_owned(),
        }
    }

    fn client_first_bare(&self) -> String {
        format!("n={},r={}", sasl_name(&self.username), self.client_nonce)
    }

    /// The client-first message: `n,,n=<saslname>,r=<nonce>`.
    pub(crate) fn client_first(&self) -> Vec<u8> {
        format!("{}{}", self.gs2_header(), self.client_first_bare()).into_bytes()
    }

    /// Handles the server-first message and returns the client-final message.
    pub(crate) fn client_final(&mut self, server_first: &[u8]) -> Result<Vec<u8>, ScramError> {
        let state = std::mem::replace(&mut self.state, ClientState::Failed);
        if !matches!(state, ClientState::Initial) {
            return Err(ScramError::UnexpectedMessage { state: state.name() });
        }
        let first = parse_server_first(server_first)?;
        if !first.nonce.starts_with(&self.client_nonce) {
            return Err(ScramError::ServerNonceMismatch);
        }
        if first.iterations < self.mechanism.min_iterations() {
            return Err(ScramError::TooFewIterations {
                iterations: i64::from(first.iterations),
                minimum: self.mechanism.min_iterations(),
                mechanism: self.mechanism.name(),
            });
        }
        let server_first_text = utf8(SERVER_FIRST_NAME, server_first)?;
        let salted = salted_password(self.mechanism, &self.password, &first.salt, first.iterations);
        let client_key = self.mechanism.client_key(&salted);
        let stored_key = self.mechanism.hash(&client_key);
        let without_proof = format!("c={},r={}", BASE64.encode(self.gs2_header()), first.nonce);
        let auth = auth_message(&self.client_first_bare(), server_first_text, &without_proof);
        let client_signature = self.mechanism.hmac(&stored_key, &[auth.as_bytes()]);
        let proof = xor(&client_key, &client_signature);
        let server_key = self.mechanism.server_key(&salted);
        self.state = ClientState::ReceiveServerFinal {
            server_signature: self.mechanism.hmac(&server_key, &[auth.as_bytes()]),
        };
        Ok(format!("{without_proof},p={}", BASE64.encode(proof)).into_bytes())
    }

    /// Checks the server-final message's signature (in constant time).
    pub(crate) fn verify_server_final(&mut self, server_final: &[u8]) -> Result<(), ScramError> {
        let state = std::mem::replace(&mut self.state, ClientState::Failed);
        let ClientState::ReceiveServerFinal { server_signature } = state else {
            return Err(ScramError::UnexpectedMessage { state: state.name() });
        };
        match parse_server_final(server_final)? {
            ServerFinalMessage::Error(error) => {
                Err(ScramError::ServerError { error: error.to_owned() })
            }
            ServerFinalMessage::Signature(signature) => {
                if bool::from(signature.ct_eq(&server_signature)) {
                    self.state = ClientState::Complete;
                    Ok(())
                } else {
                    Err(ScramError::InvalidServerSignature)
                }
            }
        }
    }

    /// True once the server-final signature has been verified.
    pub(crate) fn is_complete(&self) -> bool {
        std::matches!(self.state, ClientState::Complete)
    }
}

#[cfg(test)]
#[path = "scram_tests.rs"]
mod tests;
