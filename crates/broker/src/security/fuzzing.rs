//! Hooks for the fuzz targets in `fuzz/` (not an API): a connection's SASL exchange driven frame
//! by frame exactly as `serve_connection` drives it (`Authentication::new`, then `on_frame` for
//! each frame), with the invariants a hostile client must not break checked after every step;
//! seed exchanges built with the broker's own encoders and SCRAM client; and cheap counts of
//! what an unauthorized client must not be able to change.

#![doc(hidden)]

use std::net::SocketAddr;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse, ApiKey,
    ApiVersionsRequest, MetadataRequest, RequestHeader, SaslAuthenticateRequest,
    SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Decodable, Encodable, Request, StrBytes};

use super::acl::AclBindingFilter;
use super::sasl::{Authentication, Step};
use super::scram::{ScramClient, ScramMechanism, salted_password, username_of};
use super::{ANONYMOUS, Session};
use crate::Broker;
use crate::dispatch::{self, Outcome, parse_header};

/// In a SCRAM token (a SaslAuthenticate's `auth_bytes` or a raw v0 token): replaced by the
/// combined nonce of the last server-first message, so that a hand-made client-final gets past
/// the nonce check although the server's nonce is random.
pub const NONCE_MARKER: &[u8] = b"%NONCE%";
/// In a SCRAM token: replaced by the valid client-final message for the last client-first and
/// server-first, with [`SCRAM_PASSWORD`] (built by the broker's `ScramClient`).
pub const FINAL_MARKER: &[u8] = b"%FINAL%";
/// The password of the SCRAM users the fuzz harness stores.
pub const SCRAM_PASSWORD: &str = "fuzz-secret";
/// The separator of frames in a `sasl_exchange` input.
pub const FRAME_SEPARATOR: &[u8] = b"\xf0\x9f\x94\x91";

const PEER: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 40000);

/// What the last SCRAM messages were, for the markers.
#[derive(Default)]
struct ScramSeen {
    mechanism: Option<ScramMechanism>,
    client_first: Option<Vec<u8>>,
    server_first: Option<Vec<u8>>,
}

/// What the fuzz hook needs to know of an `Authentication` (read from its `Debug` output:
/// the fields are the `sasl` module's own).
#[derive(Debug, PartialEq, Eq)]
struct View {
    /// Mid-exchange after a v0 handshake: frames are raw tokens.
    raw: bool,
    /// The SCRAM mechanism of the exchange in progress.
    scram: Option<ScramMechanism>,
    /// The session's principal.
    principal: Option<String>,
    /// The session's mechanism.
    session_mechanism: Option<String>,
}

fn view(auth: &Authentication) -> View {
    let text = format!("{auth:?}");
    let (state, session) = text.split_once(", session: ").unwrap_or((&text, ""));
    let scram = if !state.contains("exchange: Scram") {
        None
    } else if state.contains("\"SCRAM-SHA-512\"") {
        Some(ScramMechanism::Sha512)
    } else {
        Some(ScramMechanism::Sha256)
    };
    let principal = session.strip_prefix("Some(Session { principal: \"").map(|rest| {
        let mut out = String::new();
        let mut chars = rest.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => break,
                '\\' => {
                    out.push('\\');
                    out.extend(chars.next());
                }
                c => out.push(c),
            }
        }
        out
    });
    let session_mechanism = text.rfind(", session_mechanism: ").and_then(|at| {
        let rest = &text[at + ", session_mechanism: ".len()..];
        rest.strip_prefix("Some(\"").and_then(|m| m.split('"').next()).map(str::to_owned)
    });
    View { raw: state.contains("raw: true"), scram, principal, session_mechanism }
}

/// Drives the first SASL listener's authentication with `frames`, as a connection that sends
/// them would. Returns the number of responses, or the close reason once a step closes the
/// connection (the remaining frames are not read, as on a closed connection).
///
/// ApiVersions is dispatched for real; other requests the exchange lets through are counted but
/// not dispatched (`broker_request` and `unauthorized_request` fuzz the handlers).
///
/// Panics when an invariant breaks: before authentication nothing but ApiVersions (or an
/// unreadable header, which dispatch refuses) is let through, and only as `User:ANONYMOUS`; a
/// failed handshake or authentication answers with an error and closes, and never leaves a
/// session behind; a session comes only from a successful SaslAuthenticate (or v0 token), and a
/// PLAIN or SCRAM session is one of the users in `known_users`.
#[expect(
    clippy::too_many_lines,
    reason = "one frame's checks after another, in the order they run"
)]
pub async fn sasl_exchange(
    broker: &Arc<Broker>,
    frames: &[Bytes],
    known_users: &[&str],
) -> Result<usize, String> {
    let listener = broker
        .config
        .listeners
        .iter()
        .position(|l| l.protocol.is_sasl())
        .ok_or_else(|| "no SASL listener".to_owned())?;
    let mut auth = Authentication::new(broker, listener, PEER, None);
    let mut seen = ScramSeen::default();
    let mut responses = 0;
    for frame in frames {
        let now = view(&auth);
        let raw = now.raw;
        let frame = substitute(frame, raw, &seen);
        let before = now.principal;
        let parsed =
            if raw { None } else { parse_header(&frame, Arc::new(Session::local(ANONYMOUS))).ok() };
        let sent_token = if raw {
            Some(frame.to_vec())
        } else {
            parsed.as_ref().filter(|r| r.api_key == ApiKey::SaslAuthenticate).and_then(|r| {
                r.decode::<SaslAuthenticateRequest>().ok().map(|a| a.auth_bytes.to_vec())
            })
        };
        let scram = now.scram;
        match auth.on_frame(broker, frame.clone()).await {
            Step::Dispatch(frame, session) => {
                let api_key = parse_header(&frame, Arc::new(Session::local(ANONYMOUS)))
                    .ok()
                    .map(|r| r.api_key);
                if before.is_none() {
                    assert!(
                        api_key.is_none_or(|key| key == ApiKey::ApiVersions),
                        "{api_key:?} let through before authentication"
                    );
                    assert_eq!(session.principal, ANONYMOUS, "a principal before authentication");
                } else {
                    assert_eq!(Some(&session.principal), before.as_ref(), "the session changed");
                }
                if api_key == Some(ApiKey::ApiVersions) {
                    let _ = dispatch::handle(broker, frame, &session).await;
                }
                responses += 1;
            }
            Step::Respond(_prefix, body) => {
                responses += 1;
                let after = view(&auth);
                if raw {
                    if scram.is_some() && body.starts_with(b"r=") {
                        seen.mechanism = scram;
                        seen.client_first = sent_token;
                        seen.server_first = Some(body.to_vec());
                    }
                } else if let Some(request) = &parsed {
                    match request.api_key {
                        ApiKey::SaslHandshake => {
                            let response: SaslHandshakeResponse =
                                decode_response(&body, request.version);
                            assert_eq!(response.error_code, 0, "a failed handshake went on");
                            assert_eq!(after.principal, before, "a handshake changed the session");
                        }
                        ApiKey::SaslAuthenticate => {
                            let response: SaslAuthenticateResponse =
                                decode_response(&body, request.version);
                            assert_eq!(response.error_code, 0, "a failed authentication went on");
                            if scram.is_some() && response.auth_bytes.starts_with(b"r=") {
                                seen.mechanism = scram;
                                seen.client_first = sent_token;
                                seen.server_first = Some(response.auth_bytes.to_vec());
                            }
                        }
                        other => panic!("a SASL answer to {other:?}"),
                    }
                } else {
                    panic!("a SASL answer to an unreadable frame");
                }
                if let Some(principal) = &after.principal
                    && before.is_none()
                {
                    let mechanism = after.session_mechanism.unwrap_or_default();
                    if mechanism != "OAUTHBEARER" {
                        assert!(
                            known_users.iter().any(|u| principal == &format!("User:{u}")),
                            "{principal} authenticated with {mechanism}"
                        );
                    }
                }
            }
            Step::Fail { prefix, body, reason } => {
                assert_eq!(view(&auth).principal, before, "a failed step changed the session");
                if let (Some(_), Some(body), Some(request)) = (prefix, body, &parsed) {
                    let code = match request.api_key {
                        ApiKey::SaslHandshake => {
                            decode_response::<SaslHandshakeResponse>(&body, request.version)
                                .error_code
                        }
                        ApiKey::SaslAuthenticate => {
                            decode_response::<SaslAuthenticateResponse>(&body, request.version)
                                .error_code
                        }
                        other => panic!("a failure answered to {other:?}"),
                    };
                    assert_ne!(code, 0, "a failure answered without an error");
                }
                return Err(reason.to_string());
            }
        }
    }
    Ok(responses)
}

fn decode_response<T: Decodable>(body: &Bytes, version: i16) -> T {
    let mut body = body.clone();
    T::decode(&mut body, version).expect("the broker's own answer decodes")
}

/// The frame with its markers replaced (see [`NONCE_MARKER`], [`FINAL_MARKER`]).
fn substitute(frame: &Bytes, raw: bool, seen: &ScramSeen) -> Bytes {
    if !contains(frame, NONCE_MARKER) && !contains(frame, FINAL_MARKER) {
        return frame.clone();
    }
    if raw {
        return Bytes::from(replace_markers(frame, seen));
    }
    let Ok(request) = parse_header(frame, Arc::new(Session::local(ANONYMOUS))) else {
        return frame.clone();
    };
    if request.api_key != ApiKey::SaslAuthenticate {
        return frame.clone();
    }
    let Ok(mut authenticate) = request.decode::<SaslAuthenticateRequest>() else {
        return frame.clone();
    };
    authenticate.auth_bytes = Bytes::from(replace_markers(&authenticate.auth_bytes, seen));
    let header_len = frame.len() - request.body.len();
    let mut out = BytesMut::from(&frame[..header_len]);
    if authenticate.encode(&mut out, request.version).is_err() {
        return frame.clone();
    }
    out.freeze()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn replace_markers(token: &[u8], seen: &ScramSeen) -> Vec<u8> {
    let nonce = seen.server_first.as_deref().and_then(|first| attribute(first, b'r'));
    let final_message = client_final(seen);
    let mut out = Vec::with_capacity(token.len());
    let mut rest = token;
    while !rest.is_empty() {
        if let Some(tail) = rest.strip_prefix(NONCE_MARKER) {
            out.extend_from_slice(nonce.unwrap_or_default());
            rest = tail;
        } else if let Some(tail) = rest.strip_prefix(FINAL_MARKER) {
            out.extend_from_slice(final_message.as_deref().unwrap_or_default());
            rest = tail;
        } else {
            out.push(rest[0]);
            rest = &rest[1..];
        }
    }
    out
}

/// The value of attribute `name` (`r` of `r=...`) in a SCRAM message.
fn attribute(message: &[u8], name: u8) -> Option<&[u8]> {
    message.split(|&b| b == b',').find_map(|part| part.strip_prefix(&[name, b'='][..]))
}

/// The client-final message a real client would send, from the last client-first and
/// server-first, with [`SCRAM_PASSWORD`].
fn client_final(seen: &ScramSeen) -> Option<Vec<u8>> {
    let first = std::str::from_utf8(seen.client_first.as_deref()?).ok()?;
    let server_first = seen.server_first.as_deref()?;
    // gs2 header `n,[a=authzid],`, then the bare message `n=<saslname>,r=<nonce>`.
    let mut parts = first.splitn(3, ',');
    let (_, authzid, bare) = (parts.next()?, parts.next()?, parts.next()?);
    let user = username_of(std::str::from_utf8(attribute(bare.as_bytes(), b'n')?).ok()?).ok()?;
    let nonce = std::str::from_utf8(attribute(bare.as_bytes(), b'r')?).ok()?;
    let mechanism = seen.mechanism?;
    let mut client = ScramClient::with_nonce(mechanism, &user, SCRAM_PASSWORD, nonce);
    if let Some(authzid) = authzid.strip_prefix("a=") {
        client = client.with_authorization_id(&username_of(authzid).ok()?);
    }
    client.client_final(server_first).ok()
}

/// Stores a SCRAM credential (salt `fuzz-salt`, 4096 iterations) through
/// AlterUserScramCredentials, as a client on an unsecured listener would.
pub async fn store_scram_user(
    broker: &Arc<Broker>,
    mechanism: &str,
    user: &str,
    password: &str,
) -> Result<(), String> {
    let mechanism =
        ScramMechanism::from_name(mechanism).ok_or_else(|| format!("no mechanism {mechanism}"))?;
    let salt = b"fuzz-salt".to_vec();
    let salted = salted_password(mechanism, password, &salt, 4096);
    let mut request = AlterUserScramCredentialsRequest::default();
    request.upsertions.push(
        ScramCredentialUpsertion::default()
            .with_name(StrBytes::from_string(user.to_owned()))
            .with_mechanism(mechanism.kafka_type())
            .with_iterations(4096)
            .with_salt(Bytes::from(salt))
            .with_salted_password(Bytes::from(salted)),
    );
    let frame = request_frame(&request, 0, 1);
    let session = Arc::new(Session::local(ANONYMOUS));
    let Outcome::Respond(_, body) = dispatch::handle(broker, frame, &session).await else {
        return Err("AlterUserScramCredentials was not answered".to_owned());
    };
    let response: AlterUserScramCredentialsResponse = decode_response(&body, 0);
    match response.results.first() {
        Some(result) if result.error_code == 0 => Ok(()),
        other => Err(format!("AlterUserScramCredentials failed: {other:?}")),
    }
}

/// The number of ACLs and of SCRAM credentials: what an unauthorized client must not change.
pub fn security_counts(broker: &Broker) -> (usize, usize) {
    let acls = broker.security.describe_acls(&AclBindingFilter::ANY).map_or(0, |acls| acls.len());
    let scram = broker.security.describe_scram().values().map(Vec::len).sum();
    (acls, scram)
}

/// A request frame (header and body, without the size prefix).
fn request_frame<R: Request + Encodable>(request: &R, version: i16, correlation_id: i32) -> Bytes {
    let header = RequestHeader::default()
        .with_request_api_key(R::KEY)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str("fuzz")));
    let mut out = BytesMut::new();
    header.encode(&mut out, R::header_version(version)).expect("header encodes");
    request.encode(&mut out, version).expect("request encodes");
    out.freeze()
}

fn handshake(mechanism: &str, version: i16) -> Bytes {
    let request =
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_string(mechanism.into()));
    request_frame(&request, version, 1)
}

fn authenticate(token: &[u8], version: i16, correlation_id: i32) -> Bytes {
    let request = SaslAuthenticateRequest::default().with_auth_bytes(Bytes::copy_from_slice(token));
    request_frame(&request, version, correlation_id)
}

/// An unsecured (`alg: none`) JWS for `sub`, valid until 2100.
pub fn unsecured_jws(sub: &str) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#);
    let claims = URL_SAFE_NO_PAD.encode(
        format!(r#"{{"sub":"{sub}","iat":1700000000,"exp":4102444800,"scope":"a b"}}"#).as_bytes(),
    );
    format!("{header}.{claims}.")
}

/// Valid exchanges, each a list of frames: handshakes v0 and v1, PLAIN, SCRAM-SHA-256/512
/// (client-first from `ScramClient`, client-final as [`FINAL_MARKER`] or by hand with
/// [`NONCE_MARKER`]), OAUTHBEARER with an unsecured JWS, re-authentication, ApiVersions and a
/// request after authentication. `user` must be a PLAIN and SCRAM user with `password`.
pub fn sasl_seeds(user: &str, password: &str) -> Vec<Vec<Bytes>> {
    let api_versions = request_frame(&ApiVersionsRequest::default(), 0, 7);
    let metadata = request_frame(&MetadataRequest::default().with_topics(None), 12, 9);
    let plain = format!("\0{user}\0{password}").into_bytes();
    let oauth = format!("n,,\x01auth=Bearer {}\x01\x01", unsecured_jws(user)).into_bytes();
    let mut seeds = Vec::new();
    for version in [0, 1, 2] {
        seeds.push(vec![
            api_versions.clone(),
            handshake("PLAIN", 1),
            authenticate(&plain, version, 2),
            metadata.clone(),
            handshake("PLAIN", 1),
            authenticate(&plain, version, 3),
        ]);
        seeds.push(vec![handshake("OAUTHBEARER", 1), authenticate(&oauth, version, 2)]);
    }
    seeds.push(vec![handshake("PLAIN", 0), Bytes::from(plain.clone()), metadata.clone()]);
    seeds.push(vec![handshake("OAUTHBEARER", 0), Bytes::from(oauth)]);
    for mechanism in ScramMechanism::ALL {
        let client = ScramClient::with_nonce(mechanism, user, password, "fuzzclientnonce");
        let first = client.client_first();
        let by_hand = b"c=biws,r=%NONCE%,p=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=".to_vec();
        for version in [1, 2] {
            seeds.push(vec![
                handshake(mechanism.name(), 1),
                authenticate(&first, version, 2),
                authenticate(FINAL_MARKER, version, 3),
                metadata.clone(),
            ]);
            seeds.push(vec![
                handshake(mechanism.name(), 1),
                authenticate(&first, version, 2),
                authenticate(&by_hand, version, 3),
            ]);
        }
        seeds.push(vec![
            handshake(mechanism.name(), 0),
            Bytes::from(first.clone()),
            Bytes::from_static(FINAL_MARKER),
            metadata.clone(),
        ]);
        let with_authzid = ScramClient::with_nonce(mechanism, user, password, "n2")
            .with_authorization_id(user)
            .client_first();
        seeds.push(vec![
            handshake(mechanism.name(), 1),
            authenticate(&with_authzid, 2, 2),
            authenticate(FINAL_MARKER, 2, 3),
        ]);
    }
    seeds
}

/// Joins frames into one `sasl_exchange` input.
pub fn join_frames(frames: &[Bytes]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, frame) in frames.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(FRAME_SEPARATOR);
        }
        out.extend_from_slice(frame);
    }
    out
}

/// Splits a `sasl_exchange` input into frames.
pub fn split_frames(input: &[u8]) -> Vec<Bytes> {
    let mut frames = Vec::new();
    let mut rest = input;
    while let Some(at) = rest.windows(FRAME_SEPARATOR.len()).position(|w| w == FRAME_SEPARATOR) {
        frames.push(Bytes::copy_from_slice(&rest[..at]));
        rest = &rest[at + FRAME_SEPARATOR.len()..];
    }
    frames.push(Bytes::copy_from_slice(rest));
    frames
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::{BrokerConfig, Server};

    /// The seeds authenticate (so the fuzzer starts deep), and a wrong password, a bogus proof
    /// or a request before authentication end the exchange with the close reason.
    #[tokio::test]
    async fn the_seeds_authenticate_and_failures_close() {
        let dir = tempfile::tempdir().expect("tempdir");
        let jaas = format!(
            "org.apache.kafka.common.security.plain.PlainLoginModule required \
             user_alice=\"{SCRAM_PASSWORD}\";"
        );
        let properties: BTreeMap<String, String> = [
            ("log.dirs", dir.path().display().to_string()),
            ("seglog.metrics.listener", String::new()),
            ("seglog.console.listener", String::new()),
            ("listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0".to_owned()),
            (
                "listener.name.sasl_plaintext.sasl.enabled.mechanisms",
                "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER".to_owned(),
            ),
            ("listener.name.sasl_plaintext.plain.sasl.jaas.config", jaas),
            ("connection.failed.authentication.delay.ms", "0".to_owned()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let server = Server::start(BrokerConfig::from_properties(&properties).expect("config"))
            .await
            .expect("starts");
        let broker = Arc::clone(server.broker());
        for mechanism in ["SCRAM-SHA-256", "SCRAM-SHA-512"] {
            store_scram_user(&broker, mechanism, "alice", SCRAM_PASSWORD).await.expect("stored");
        }
        let seeds = sasl_seeds("alice", SCRAM_PASSWORD);
        for (i, seed) in seeds.iter().enumerate() {
            assert_eq!(split_frames(&join_frames(seed)), *seed);
            let outcome = sasl_exchange(&broker, seed, &["alice"]).await;
            // The by-hand client-finals carry a bogus proof: they fail, past the nonce check.
            let by_hand = seed.iter().any(|f| contains(f, b"AAAAAAAAAAAAAAAAAAAAAAAAAAAA"));
            if by_hand {
                let reason = outcome.expect_err("a bogus proof fails");
                assert!(reason.contains("invalid credentials"), "seed {i}: {reason}");
            } else {
                assert_eq!(outcome, Ok(seed.len()), "seed {i}");
            }
        }
        let wrong = vec![handshake("PLAIN", 1), authenticate(b"\0alice\0nope", 2, 2)];
        assert!(sasl_exchange(&broker, &wrong, &["alice"]).await.is_err());
        let early = vec![request_frame(&MetadataRequest::default().with_topics(None), 12, 1)];
        let reason = sasl_exchange(&broker, &early, &["alice"]).await.expect_err("closed");
        assert!(reason.contains("Unexpected Kafka request"), "{reason}");
        server.shutdown().await.expect("shutdown");
    }
}
