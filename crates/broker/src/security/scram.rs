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
mod tests {
    //! Ported from Kafka: ScramFormatterTest (rfc7677Example, saslName), ScramMessagesTest
    //! (validClientFirstMessage, invalidClientFirstMessage, validServerFirstMessage,
    //! invalidServerFirstMessage, validClientFinalMessage, invalidClientFinalMessage,
    //! validServerFinalMessage, invalidServerFinalMessage), ScramSaslServerTest
    //! (noAuthorizationIdSpecified, authorizationIdEqualsAuthenticationId,
    //! authorizationIdNotEqualsAuthenticationId, validateNonceExchange,
    //! validateFailedNonceExchange) and admin ScramMechanismTest (fromType, fromMechanismName).

    use super::*;

    const USER_A: &str = "userA";
    const USER_B: &str = "userB";

    fn credential(mechanism: ScramMechanism, password: &str) -> ScramCredential {
        ScramCredential::from_password(mechanism, password, b"fixed-test-salt", 4096)
    }

    /// The credential store of ScramSaslServerTest: userA/passwordA, userB/passwordB.
    fn store(mechanism: ScramMechanism) -> impl Fn(&str) -> Option<ScramCredential> {
        move |user: &str| match user {
            USER_A => Some(credential(mechanism, "passwordA")),
            USER_B => Some(credential(mechanism, "passwordB")),
            _ => None,
        }
    }

    /// Runs a whole exchange; returns the server's verdict.
    fn exchange(
        mechanism: ScramMechanism,
        client: &mut ScramClient,
        lookup: impl FnOnce(&str) -> Option<ScramCredential>,
    ) -> Result<ScramOutcome, ScramError> {
        let mut server = ScramServer::new(mechanism).expect("random nonce");
        let server_first = server.client_first(&client.client_first(), lookup)?;
        let client_final = client.client_final(&server_first)?;
        server.client_final(&client_final)
    }

    fn text(bytes: &[u8]) -> &str {
        std::str::from_utf8(bytes).expect("scram messages are ascii")
    }

    fn malformed(message: &'static str) -> ScramError {
        ScramError::Malformed { message, reason: GRAMMAR }
    }

    // ---- ScramFormatterTest ----

    #[test]
    fn rfc7677_example_end_to_end() {
        let mechanism = ScramMechanism::Sha256;
        let salt = BASE64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").expect("rfc salt");
        let stored = ScramCredential::from_password(mechanism, "pencil", &salt, 4096);
        let mut client =
            ScramClient::with_nonce(mechanism, "user", "pencil", "rOprNGfwEbeRWgbNEkqO");
        let mut server = ScramServer::with_nonce(mechanism, "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0");

        let client_first = client.client_first();
        assert_eq!(text(&client_first), "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
        let mut looked_up = String::new();
        let server_first = server
            .client_first(&client_first, |user| {
                looked_up = user.to_owned();
                Some(stored.clone())
            })
            .expect("server first");
        assert_eq!(looked_up, "user");
        assert_eq!(
            text(&server_first),
            "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
        );
        let client_final = client.client_final(&server_first).expect("client final");
        assert_eq!(
            text(&client_final),
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
        );
        let outcome = server.client_final(&client_final).expect("valid proof");
        assert_eq!(text(&outcome.server_final), "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
        assert_eq!(outcome.username, "user");
        assert!(server.is_complete());
        client.verify_server_final(&outcome.server_final).expect("server signature");
        assert!(client.is_complete());
    }

    #[test]
    fn rfc7677_example_parsed_fields() {
        let first = parse_client_first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO").expect("c1");
        assert_eq!(
            (first.sasl_name, first.nonce, first.gs2_header, first.bare),
            ("user", "rOprNGfwEbeRWgbNEkqO", "n,,", "n=user,r=rOprNGfwEbeRWgbNEkqO")
        );
        let s1 = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let server_first = parse_server_first(s1).expect("s1");
        assert_eq!(server_first.nonce, "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0");
        assert_eq!(server_first.salt, BASE64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").expect("salt"));
        assert_eq!(server_first.iterations, 4096);
        let c2 = b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
        let last = parse_client_final(c2).expect("c2");
        assert_eq!(last.channel_binding, b"n,,");
        assert_eq!(
            last.without_proof,
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
        );
        assert_eq!(last.proof.len(), 32);
        assert_eq!(ScramMechanism::Sha256.min_iterations(), 4096);
    }

    #[test]
    fn sasl_name_round_trips() {
        // ScramFormatterTest.saslName
        for username in
            ["user1", "123", "1,2", "user=A", "user==B", "user,1", "user 1", ",", "=", ",=", "=="]
        {
            let encoded = sasl_name(username);
            assert!(!encoded.contains(','), "{encoded}");
            assert!(!encoded.replace("=2C", "").replace("=3D", "").contains('='), "{encoded}");
            assert_eq!(username_of(&encoded).expect("decodes"), username);
        }
        assert_eq!(sasl_name("a=b,c"), "a=3Db=2Cc");
        assert_eq!(username_of("test=2Cuser").expect("comma"), "test,user");
        assert_eq!(username_of("test=3Duser").expect("equals"), "test=user");
        for bad in ["a=b", "a=", "=2", "=3d"] {
            assert_eq!(
                username_of(bad),
                Err(ScramError::InvalidSaslName { sasl_name: bad.to_owned() })
            );
        }
    }

    #[test]
    fn username_with_comma_and_equals_authenticates() {
        let mechanism = ScramMechanism::Sha256;
        let mut client = ScramClient::new(mechanism, "a,b=c", "pw").expect("client");
        assert!(text(&client.client_first()).starts_with("n,,n=a=2Cb=3Dc,r="));
        let outcome = exchange(mechanism, &mut client, |user| {
            (user == "a,b=c").then(|| credential(mechanism, "pw"))
        })
        .expect("authenticated");
        assert_eq!(outcome.username, "a,b=c");
    }

    // ---- ScramMessagesTest ----

    const VALID_EXTENSIONS: [&str; 3] = [
        "ext=val1",
        "anotherext=name1=value1 name2=another test value \"'!$[]()",
        "first=val1,second=name1 = value ,third=123",
    ];
    const INVALID_EXTENSIONS: [&str; 5] =
        ["ext1=value", "ext", "ext=value1,value2", "ext=,", "ext =value"];
    const VALID_RESERVED: [&str; 2] =
        ["m=reserved-value", "m=name1=value1 name2=another test value \"'!$[]()"];
    const INVALID_RESERVED: [&str; 3] = ["m", "m=name,value", "m=,"];
    const NONCE: &str = "ka2pqmkfg6xu3o3x1eb6i1ciwt";
    const B64: &str = "c29tZSByYW5kb20gYnl0ZXMgZm9yIHRlc3Rz";

    #[test]
    fn valid_client_first_message() {
        let check = |message: &str, sasl: &str, authzid: Option<&str>| {
            let parsed = parse_client_first(message.as_bytes()).expect(message);
            assert_eq!(
                (parsed.sasl_name, parsed.nonce, parsed.authorization_id),
                (sasl, NONCE, authzid)
            );
            assert!(!parsed.token_auth);
        };
        check(&format!("n,,n=testuser,r={NONCE}"), "testuser", None);
        check(&format!("n,,n=test=2Cuser,r={NONCE}"), "test=2Cuser", None);
        check(&format!("n,,n=test=3Duser,r={NONCE}"), "test=3Duser", None);
        check(&format!("n,a=testauthzid,n=testuser,r={NONCE}"), "testuser", Some("testauthzid"));
        for reserved in VALID_RESERVED {
            let message = format!("n,,{reserved},n=testuser,r={NONCE}");
            check(&message, "testuser", None);
            let parsed = parse_client_first(message.as_bytes()).expect("reserved");
            assert_eq!(parsed.bare, format!("{reserved},n=testuser,r={NONCE}"));
        }
        for extension in VALID_EXTENSIONS {
            check(&format!("n,,n=testuser,r={NONCE},{extension}"), "testuser", None);
        }
        let message = format!("n,,n=testuser,r={NONCE},tokenauth=true");
        let token = parse_client_first(message.as_bytes()).expect("tokenauth");
        assert!(token.token_auth);
    }

    #[test]
    fn invalid_client_first_message() {
        let mut invalid = vec![
            format!("n,x=something,n=testuser,r={NONCE}"),
            String::new(),
            "n,,".to_owned(),
            format!("n,,r={NONCE}"),
            "n,,n=testuser".to_owned(),
            "n,,n=testuser,r=".to_owned(),
            format!("n,a=,n=testuser,r={NONCE}"),
            format!("n,,n=,r={NONCE}"),
            format!("n,,n=test=user,r={NONCE}"),
            format!("n,,n=t\u{e9}st,r={NONCE}"),
            format!("n,,n=testuser,r={NONCE} x"),
            format!("x,,n=testuser,r={NONCE}"),
        ];
        invalid.extend(INVALID_RESERVED.iter().map(|r| format!("n,,{r},n=testuser,r={NONCE}")));
        invalid.extend(INVALID_EXTENSIONS.iter().map(|e| format!("n,,n=testuser,r={NONCE},{e}")));
        for message in invalid {
            assert_eq!(
                parse_client_first(message.as_bytes()).map(|_| ()),
                Err(malformed(CLIENT_FIRST_NAME)),
                "{message}"
            );
        }
        assert_eq!(
            parse_client_first(b"n,,n=\xff,r=abc").map(|_| ()),
            Err(ScramError::Malformed { message: CLIENT_FIRST_NAME, reason: "not valid utf-8" })
        );
    }

    #[test]
    fn valid_server_first_message() {
        let nonce = format!("{NONCE}serverpart");
        let check = |message: &str, iterations: u32| {
            let parsed = parse_server_first(message.as_bytes()).expect(message);
            assert_eq!(parsed.nonce, nonce);
            assert_eq!(parsed.salt, BASE64.decode(B64).expect("b64"));
            assert_eq!(parsed.iterations, iterations);
        };
        check(&format!("r={nonce},s={B64},i=4096"), 4096);
        check(&format!("r={nonce},s={B64},i=8192"), 8192);
        for reserved in VALID_RESERVED {
            check(&format!("{reserved},r={nonce},s={B64},i=4096"), 4096);
        }
        for extension in VALID_EXTENSIONS {
            check(&format!("r={nonce},s={B64},i=4096,{extension}"), 4096);
        }
    }

    #[test]
    fn invalid_server_first_message() {
        let mut invalid = vec![
            format!("r={NONCE},s==123,i=4096"),
            format!("r={NONCE},invalid,s={B64},i=4096"),
            format!("r={NONCE},s={B64}"),
            format!("r={NONCE},s={B64},i=-1"),
        ];
        invalid.extend(INVALID_RESERVED.iter().map(|r| format!("{r},r={NONCE},s={B64},i=4096")));
        invalid.extend(INVALID_EXTENSIONS.iter().map(|e| format!("r={NONCE},s={B64},i=4096,{e}")));
        for message in invalid {
            assert_eq!(
                parse_server_first(message.as_bytes()).map(|_| ()),
                Err(malformed(SERVER_FIRST_NAME)),
                "{message}"
            );
        }
        let bad_iterations = ScramError::Malformed {
            message: SERVER_FIRST_NAME,
            reason: "iterations is not a positive 32-bit integer",
        };
        for iterations in ["0", "2147483648", "99999999999"] {
            let message = format!("r={NONCE},s={B64},i={iterations}");
            assert_eq!(
                parse_server_first(message.as_bytes()).map(|_| ()),
                Err(bad_iterations.clone())
            );
        }
    }

    #[test]
    fn valid_client_final_message() {
        let check = |message: &str| {
            let parsed = parse_client_final(message.as_bytes()).expect(message);
            assert_eq!(parsed.channel_binding, BASE64.decode(B64).expect("b64"));
            assert_eq!(parsed.nonce, NONCE);
            assert_eq!(parsed.proof, BASE64.decode("biws").expect("b64"));
            let proof_at = message.rfind(",p=").expect("proof");
            assert_eq!(parsed.without_proof, &message[..proof_at]);
        };
        check(&format!("c={B64},r={NONCE},p=biws"));
        for extension in VALID_EXTENSIONS {
            check(&format!("c={B64},r={NONCE},{extension},p=biws"));
        }
        // An extension named p before the proof.
        check(&format!("c={B64},r={NONCE},p=ab,p=biws"));
    }

    #[test]
    fn invalid_client_final_message() {
        let mut invalid = vec![
            format!("c=ab,r={NONCE},p={B64}"),
            format!("c={B64},r={NONCE},p=123"),
            format!("c={B64},r={NONCE}"),
            format!("r={NONCE},p={B64}"),
        ];
        invalid.extend(INVALID_EXTENSIONS.iter().map(|e| format!("c={B64},r={NONCE},{e},p={B64}")));
        for message in invalid {
            assert_eq!(
                parse_client_final(message.as_bytes()).map(|_| ()),
                Err(malformed(CLIENT_FINAL_NAME)),
                "{message}"
            );
        }
        // Matches the grammar, but non-canonical base64 (trailing bits set).
        assert_eq!(
            parse_client_final(format!("c=biws,r={NONCE},p=ab==").as_bytes()).map(|_| ()),
            Err(ScramError::Malformed {
                message: CLIENT_FINAL_NAME,
                reason: "proof is not valid base64"
            })
        );
    }

    #[test]
    fn valid_server_final_message() {
        let signature = BASE64.decode(B64).expect("b64");
        assert_eq!(
            parse_server_final(format!("v={B64}").as_bytes()),
            Ok(ServerFinalMessage::Signature(signature.clone()))
        );
        assert_eq!(
            parse_server_final(b"e=other-error"),
            Ok(ServerFinalMessage::Error("other-error"))
        );
        assert_eq!(
            parse_server_final(b"e=unknown-user"),
            Ok(ServerFinalMessage::Error("unknown-user"))
        );
        for extension in VALID_EXTENSIONS {
            assert_eq!(
                parse_server_final(format!("v={B64},{extension}").as_bytes()),
                Ok(ServerFinalMessage::Signature(signature.clone()))
            );
        }
    }

    #[test]
    fn invalid_server_final_message() {
        let mut invalid = vec!["e=error1,error2".to_owned(), "v=1=23".to_owned(), String::new()];
        for extension in INVALID_EXTENSIONS {
            invalid.push(format!("v={B64},{extension}"));
            invalid.push(format!("e=unknown-user,{extension}"));
        }
        for message in invalid {
            assert_eq!(
                parse_server_final(message.as_bytes()),
                Err(malformed(SERVER_FINAL_NAME)),
                "{message}"
            );
        }
    }

    // ---- ScramSaslServerTest ----

    fn client_first_message(user: &str, authzid: Option<&str>) -> Vec<u8> {
        let authorization = authzid.map(|a| format!("a={a}")).unwrap_or_default();
        format!("n,{authorization},n={user},r={NONCE}").into_bytes()
    }

    #[test]
    fn no_authorization_id_specified() {
        let mut server = ScramServer::new(ScramMechanism::Sha256).expect("server");
        let challenge = server
            .client_first(&client_first_message(USER_A, None), store(ScramMechanism::Sha256))
            .expect("challenge");
        assert!(!challenge.is_empty());
    }

    #[test]
    fn authorization_id_equals_authentication_id() {
        let mechanism = ScramMechanism::Sha256;
        let mut server = ScramServer::new(mechanism).expect("server");
        let challenge = server
            .client_first(&client_first_message(USER_A, Some(USER_A)), store(mechanism))
            .expect("challenge");
        assert!(!challenge.is_empty());
        // And the whole exchange, with c= carrying the gs2 header "n,a=userA,".
        let mut client = ScramClient::new(mechanism, USER_A, "passwordA")
            .expect("client")
            .with_authorization_id(USER_A);
        assert!(text(&client.client_first()).starts_with("n,a=userA,n=userA,r="));
        let outcome = exchange(mechanism, &mut client, store(mechanism)).expect("authenticated");
        assert_eq!(outcome.username, USER_A);
        client.verify_server_final(&outcome.server_final).expect("signature");
    }

    #[test]
    fn authorization_id_not_equals_authentication_id() {
        let mut server = ScramServer::new(ScramMechanism::Sha256).expect("server");
        let error = server
            .client_first(
                &client_first_message(USER_A, Some(USER_B)),
                store(ScramMechanism::Sha256),
            )
            .expect_err("mismatch");
        assert_eq!(error, ScramError::AuthorizationIdMismatch);
        assert_eq!(
            error.client_message(),
            Some(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        );
        assert_eq!(ScramError::InvalidCredentials.client_message(), None);
    }

    #[test]
    fn validate_nonce_exchange() {
        let mechanism = ScramMechanism::Sha256;
        let mut client = ScramClient::with_nonce(mechanism, USER_A, "passwordA", NONCE);
        let mut server = ScramServer::with_nonce(mechanism, "srv");
        let server_first =
            server.client_first(&client.client_first(), store(mechanism)).expect("first");
        let parsed = parse_server_first(&server_first).expect("server first parses");
        assert_eq!(parsed.nonce, format!("{NONCE}srv"));
        let client_final = client.client_final(&server_first).expect("final");
        assert!(text(&client_final).contains(&format!(",r={NONCE}srv,")));
        let outcome = server.client_final(&client_final).expect("valid");
        assert_eq!(
            parse_server_final(&outcome.server_final)
                .map(|m| matches!(m, ServerFinalMessage::Signature(_))),
            Ok(true)
        );
    }

    #[test]
    fn validate_failed_nonce_exchange() {
        let mechanism = ScramMechanism::Sha256;
        // A nonce that only ends with the combined one passes, as in Kafka (librdkafka before
        // 1.9 repeats its own nonce in front of it); one that does not end with it fails.
        for wrong_nonce in ["someothernonce", "srvprefix", NONCE] {
            let mut server = ScramServer::with_nonce(mechanism, "srv");
            server
                .client_first(&client_first_message(USER_A, None), store(mechanism))
                .expect("first");
            let message = format!("c=biws,r={wrong_nonce},p={B64}");
            assert_eq!(server.client_final(message.as_bytes()), Err(ScramError::InvalidNonce));
        }
    }

    // ---- seglog rules ----

    #[test]
    fn sha512_round_trip() {
        let mechanism = ScramMechanism::Sha512;
        let mut client = ScramClient::new(mechanism, USER_B, "passwordB").expect("client");
        let outcome = exchange(mechanism, &mut client, store(mechanism)).expect("authenticated");
        assert_eq!(outcome.username, USER_B);
        // A SHA-512 signature is 64 bytes.
        let ServerFinalMessage::Signature(signature) =
            parse_server_final(&outcome.server_final).expect("v=")
        else {
            panic!("expected a signature");
        };
        assert_eq!(signature.len(), 64);
        client.verify_server_final(&outcome.server_final).expect("signature");
    }

    #[test]
    fn sha256_credential_does_not_authenticate_sha512() {
        let mut client =
            ScramClient::new(ScramMechanism::Sha512, USER_A, "passwordA").expect("client");
        let result = exchange(ScramMechanism::Sha512, &mut client, store(ScramMechanism::Sha256));
        assert_eq!(result, Err(ScramError::InvalidCredentials));
    }

    #[test]
    fn wrong_password_fails_and_server_stays_failed() {
        let mechanism = ScramMechanism::Sha256;
        let mut client = ScramClient::new(mechanism, USER_A, "passwordB").expect("client");
        let mut server = ScramServer::new(mechanism).expect("server");
        let server_first =
            server.client_first(&client.client_first(), store(mechanism)).expect("first");
        let client_final = client.client_final(&server_first).expect("final");
        assert_eq!(server.client_final(&client_final), Err(ScramError::InvalidCredentials));
        assert!(!server.is_complete());
        assert_eq!(
            server.client_final(&client_final),
            Err(ScramError::UnexpectedMessage { state: "failed" })
        );
    }

    /// `r=<nonce>,s=<base64 of a base-36 salt>,i=4096`.
    fn assert_server_first_shape(server_first: &[u8], client_nonce: &str) {
        let shape = Regex::new(r"\Ar=([a-z0-9]+),s=([A-Za-z0-9+/]+=*),i=4096\z").expect("pattern");
        let caps = shape.captures(text(server_first)).expect("server first shape");
        assert!(caps[1].starts_with(client_nonce));
        assert!(caps[1].len() > client_nonce.len() && caps[1].len() <= client_nonce.len() + 26);
        let salt = BASE64.decode(&caps[2]).expect("salt");
        assert!(!salt.is_empty() && salt.len() <= 26, "{salt:?}");
        assert!(salt.iter().all(|b| b.is_ascii_digit() || b.is_ascii_lowercase()));
    }

    #[test]
    fn unknown_user_is_not_revealed_at_client_first() {
        let mechanism = ScramMechanism::Sha256;
        let real_salt = random_salt().expect("salt");
        let known = ScramCredential::from_password(mechanism, "passwordA", &real_salt, 4096);

        let mut known_client = ScramClient::with_nonce(mechanism, USER_A, "wrong", NONCE);
        let mut known_server = ScramServer::new(mechanism).expect("server");
        let known_first = known_server
            .client_first(&known_client.client_first(), |_| Some(known.clone()))
            .expect("known first");
        assert_server_first_shape(&known_first, NONCE);

        let mut unknown_client = ScramClient::with_nonce(mechanism, "nobody", "wrong", NONCE);
        let mut unknown_server = ScramServer::new(mechanism).expect("server");
        let unknown_first = unknown_server
            .client_first(&unknown_client.client_first(), |_| None)
            .expect("unknown user still gets a server first");
        assert_server_first_shape(&unknown_first, NONCE);

        // Both fail at client-final, with the same error.
        let known_error = known_server
            .client_final(&known_client.client_final(&known_first).expect("final"))
            .expect_err("wrong password");
        let unknown_error = unknown_server
            .client_final(&unknown_client.client_final(&unknown_first).expect("final"))
            .expect_err("unknown user");
        assert_eq!(known_error, unknown_error);
        assert_eq!(unknown_error, ScramError::InvalidCredentials);
        assert_eq!(unknown_error.to_string(), known_error.to_string());
    }

    #[test]
    fn unknown_user_fake_salt_is_stable_per_user() {
        let salt_of = |mechanism: ScramMechanism, user: &str| {
            let mut server = ScramServer::new(mechanism).expect("server");
            let first = server
                .client_first(format!("n,,n={user},r={NONCE}").as_bytes(), |_| None)
                .expect("first");
            parse_server_first(&first).expect("parses").salt
        };
        let sha256 = ScramMechanism::Sha256;
        assert_eq!(salt_of(sha256, "ghost"), salt_of(sha256, "ghost"));
        assert_ne!(salt_of(sha256, "ghost"), salt_of(sha256, "ghost2"));
        assert_ne!(salt_of(sha256, "ghost"), salt_of(ScramMechanism::Sha512, "ghost"));
        // Even the right-looking password of an unknown user fails.
        let fake = fake_credential(sha256, "ghost").expect("fake");
        assert_eq!(fake.iterations, 4096);
        assert_eq!((fake.stored_key.len(), fake.server_key.len()), (32, 32));
        assert_eq!(
            fake_credential(ScramMechanism::Sha512, "ghost").expect("fake").stored_key.len(),
            64
        );
    }

    #[test]
    fn unknown_user_with_fake_credential_as_lookup_result_is_still_refused() {
        // A client that somehow knows the fake keys still fails: the unknown flag is checked.
        let mechanism = ScramMechanism::Sha256;
        let mut client = ScramClient::new(mechanism, "ghost", "anything").expect("client");
        assert_eq!(exchange(mechanism, &mut client, |_| None), Err(ScramError::InvalidCredentials));
    }

    #[test]
    fn channel_binding_is_refused() {
        let mut server = ScramServer::new(ScramMechanism::Sha256).expect("server");
        assert_eq!(
            server.client_first(b"y,,n=userA,r=abc", store(ScramMechanism::Sha256)),
            Err(ScramError::ChannelBindingUnsupported { flag: 'y' })
        );
        let mut server = ScramServer::new(ScramMechanism::Sha256).expect("server");
        assert_eq!(
            server.client_first(b"p=tls-unique,,n=userA,r=abc", store(ScramMechanism::Sha256)),
            Err(ScramError::ChannelBindingUnsupported { flag: 'p' })
        );
    }

    #[test]
    fn channel_binding_must_be_the_gs2_header() {
        let mechanism = ScramMechanism::Sha256;
        let mut server = ScramServer::with_nonce(mechanism, "srv");
        server
            .client_first(&client_first_message(USER_A, Some(USER_A)), store(mechanism))
            .expect("first");
        // c=biws is "n,,", but the client sent "n,a=userA,".
        let message = format!("c=biws,r={NONCE}srv,p={B64}");
        assert_eq!(
            server.client_final(message.as_bytes()),
            Err(ScramError::ChannelBindingMismatch)
        );
    }

    #[test]
    fn delegation_tokens_are_refused() {
        for value in ["true", "TRUE", "True"] {
            let mut server = ScramServer::new(ScramMechanism::Sha256).expect("server");
            let message = format!("n,,n=tokenid,r={NONCE},tokenauth={value}");
            assert_eq!(
                server.client_first(message.as_bytes(), |_| None),
                Err(ScramError::DelegationTokenUnsupported)
            );
        }
        let mut server = ScramServer::new(ScramMechanism::Sha256).expect("server");
        let message = format!("n,,n=userA,r={NONCE},tokenauth=false");
        server
            .client_first(message.as_bytes(), store(ScramMechanism::Sha256))
            .expect("tokenauth=false is a normal login");
    }

    #[test]
    fn malformed_messages_are_typed_errors() {
        let mechanism = ScramMechanism::Sha256;
        for message in [&b""[..], b"n,,", b"garbage", b"\xff\xfe", b"n,,n=userA", b"n,,n=a=b,r=x"] {
            let mut server = ScramServer::new(mechanism).expect("server");
            let error = server.client_first(message, store(mechanism)).expect_err("malformed");
            let ScramError::Malformed { message, .. } = &error else { panic!("{error}") };
            assert_eq!(*message, CLIENT_FIRST_NAME);
        }
        for message in [&b""[..], b"c=biws", b"c=biws,r=x,p=", b"\xff", b"c=biws,r=x,p=a"] {
            let mut server = ScramServer::with_nonce(mechanism, "srv");
            server
                .client_first(&client_first_message(USER_A, None), store(mechanism))
                .expect("first");
            let error = server.client_final(message).expect_err("malformed");
            match &error {
                ScramError::Malformed { message, .. } => assert_eq!(*message, CLIENT_FINAL_NAME),
                ScramError::InvalidNonce => {}
                other => panic!("{other}"),
            }
        }
        // A well-formed proof of the wrong length is a credential failure, not a panic.
        let mut server = ScramServer::with_nonce(mechanism, "srv");
        server.client_first(&client_first_message(USER_A, None), store(mechanism)).expect("first");
        let message = format!("c=biws,r={NONCE}srv,p=biws");
        assert_eq!(server.client_final(message.as_bytes()), Err(ScramError::InvalidCredentials));
    }

    #[test]
    fn messages_out_of_order_are_refused() {
        let mechanism = ScramMechanism::Sha256;
        let mut server = ScramServer::new(mechanism).expect("server");
        assert_eq!(
            server.client_final(b"c=biws,r=x,p=biws"),
            Err(ScramError::UnexpectedMessage { state: "receive-client-first-message" })
        );
        let mut server = ScramServer::new(mechanism).expect("server");
        let first = client_first_message(USER_A, None);
        server.client_first(&first, store(mechanism)).expect("first");
        assert_eq!(
            server.client_first(&first, store(mechanism)),
            Err(ScramError::UnexpectedMessage { state: "receive-client-final-message" })
        );
        let mut client = ScramClient::new(mechanism, USER_A, "passwordA").expect("client");
        assert_eq!(
            client.verify_server_final(b"v=biws"),
            Err(ScramError::UnexpectedMessage { state: "send-client-first-message" })
        );
    }

    #[test]
    fn client_checks_server_messages() {
        let mechanism = ScramMechanism::Sha256;
        let mut client = ScramClient::with_nonce(mechanism, USER_A, "passwordA", NONCE);
        assert_eq!(
            client.client_final(format!("r=other,s={B64},i=4096").as_bytes()),
            Err(ScramError::ServerNonceMismatch)
        );
        let mut client = ScramClient::with_nonce(mechanism, USER_A, "passwordA", NONCE);
        assert_eq!(
            client.client_final(format!("r={NONCE}x,s={B64},i=4095").as_bytes()),
            Err(ScramError::TooFewIterations {
                iterations: 4095,
                minimum: 4096,
                mechanism: "SCRAM-SHA-256"
            })
        );
        let mut client = ScramClient::with_nonce(mechanism, USER_A, "passwordA", NONCE);
        client.client_final(format!("r={NONCE}x,s={B64},i=4096").as_bytes()).expect("final");
        assert_eq!(
            client.verify_server_final(format!("v={B64}").as_bytes()),
            Err(ScramError::InvalidServerSignature)
        );
        let mut client = ScramClient::with_nonce(mechanism, USER_A, "passwordA", NONCE);
        client.client_final(format!("r={NONCE}x,s={B64},i=4096").as_bytes()).expect("final");
        assert_eq!(
            client.verify_server_final(b"e=other-error"),
            Err(ScramError::ServerError { error: "other-error".to_owned() })
        );
    }

    #[test]
    fn iteration_bounds() {
        let mechanism = ScramMechanism::Sha512;
        assert_eq!((mechanism.min_iterations(), mechanism.max_iterations()), (4096, 16384));
        assert_eq!(mechanism.check_iterations(4096), Ok(4096));
        assert_eq!(mechanism.check_iterations(16384), Ok(16384));
        for too_few in [4095, 0, -1, i32::MIN] {
            assert_eq!(
                mechanism.check_iterations(too_few),
                Err(ScramError::TooFewIterations {
                    iterations: i64::from(too_few),
                    minimum: 4096,
                    mechanism: "SCRAM-SHA-512"
                })
            );
        }
        assert_eq!(
            mechanism.check_iterations(16385).map_err(|e| e.to_string()),
            Err("iterations 16385 is more than the maximum 16384 for SCRAM-SHA-512".to_owned())
        );
        // ScramSaslServer refuses a stored credential below the minimum.
        let weak =
            ScramCredential::from_password(ScramMechanism::Sha256, "passwordA", b"salt", 4095);
        let mut server = ScramServer::new(ScramMechanism::Sha256).expect("server");
        assert_eq!(
            server
                .client_first(&client_first_message(USER_A, None), |_| Some(weak))
                .map_err(|e| e.to_string()),
            Err("iterations 4095 is less than the minimum 4096 for SCRAM-SHA-256".to_owned())
        );
    }

    #[test]
    fn from_salted_password_equals_from_password() {
        for mechanism in ScramMechanism::ALL {
            let salt = random_salt().expect("salt");
            let salted = salted_password(mechanism, "s3cret", &salt, 8192);
            assert_eq!(
                ScramCredential::from_salted_password(mechanism, &salted, &salt, 8192),
                ScramCredential::from_password(mechanism, "s3cret", &salt, 8192)
            );
            assert_ne!(
                ScramCredential::from_password(mechanism, "s3cret", &salt, 8192),
                ScramCredential::from_password(mechanism, "s3cret!", &salt, 8192)
            );
        }
        // RFC 7677: SaltedPassword = Hi("pencil", salt, 4096) gives the vector's keys.
        let salt = BASE64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").expect("salt");
        let credential =
            ScramCredential::from_password(ScramMechanism::Sha256, "pencil", &salt, 4096);
        assert_eq!((credential.stored_key.len(), credential.server_key.len()), (32, 32));
    }

    #[test]
    fn debug_hides_secrets() {
        let mechanism = ScramMechanism::Sha256;
        let credential = ScramCredential::from_password(mechanism, "hunter2", b"pepper", 4096);
        let debug = format!("{credential:?}");
        assert_eq!(
            debug,
            "ScramCredential { salt: \"cGVwcGVy\", stored_key: \"<redacted>\", server_key: \"<redacted>\", iterations: 4096 }"
        );
        assert!(!debug.contains(&BASE64.encode(&credential.stored_key)));

        let client = ScramClient::with_nonce(mechanism, "alice", "hunter2", NONCE);
        let debug = format!("{client:?}");
        assert!(!debug.contains("hunter2"), "{debug}");
        assert!(debug.contains("password: \"<redacted>\""), "{debug}");

        let mut server = ScramServer::with_nonce(mechanism, "srv");
        server.client_first(&client.client_first(), |_| Some(credential.clone())).expect("first");
        let debug = format!("{server:?}");
        assert_eq!(
            debug,
            "ScramServer { mechanism: Sha256, state: \"receive-client-final-message\", username: \"alice\", .. }"
        );
    }

    #[test]
    fn mechanism_names_and_types() {
        // Kafka's admin ScramMechanismTest: fromType / fromMechanismName, UNKNOWN is 0.
        assert_eq!(ScramMechanism::from_name("SCRAM-SHA-256"), Some(ScramMechanism::Sha256));
        assert_eq!(ScramMechanism::from_name("SCRAM-SHA-512"), Some(ScramMechanism::Sha512));
        assert_eq!(ScramMechanism::from_name("scram-sha-256"), None);
        assert_eq!(ScramMechanism::from_name("PLAIN"), None);
        assert_eq!(ScramMechanism::from_kafka_type(0), None);
        assert_eq!(ScramMechanism::from_kafka_type(1), Some(ScramMechanism::Sha256));
        assert_eq!(ScramMechanism::from_kafka_type(2), Some(ScramMechanism::Sha512));
        assert_eq!(ScramMechanism::from_kafka_type(3), None);
        assert_eq!(ScramMechanism::from_kafka_type(-1), None);
        for mechanism in ScramMechanism::ALL {
            assert_eq!(ScramMechanism::from_name(mechanism.name()), Some(mechanism));
            assert_eq!(ScramMechanism::from_kafka_type(mechanism.kafka_type()), Some(mechanism));
            assert_eq!(mechanism.to_string(), mechanism.name());
        }
    }

    #[test]
    fn base36_matches_big_integer_to_string() {
        assert_eq!(base36_of_130_bits([0; 17]), "0");
        assert_eq!(base36_of_130_bits([0xff; 17]), "1omfro7zwmumr3umxudzyj6scf");
        let mut two_pow_129 = [0u8; 17];
        two_pow_129[0] = 0x02;
        assert_eq!(base36_of_130_bits(two_pow_129), "ub7vu3zybfbdjxbgx6zz9le68");
        let mut thirty_five = [0u8; 17];
        thirty_five[16] = 35;
        assert_eq!(base36_of_130_bits(thirty_five), "z");
        let salt = random_salt().expect("salt");
        assert!(!salt.is_empty() && salt.len() <= 26);
        assert_ne!(random_salt().expect("salt"), salt);
    }
}
