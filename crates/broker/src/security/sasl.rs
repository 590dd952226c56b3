//! A connection's authentication (Kafka's `SaslServerAuthenticator` and the channel states of
//! `KafkaChannel`): on a SASL listener, only ApiVersions and SaslHandshake are served until
//! SaslAuthenticate (or, after a v0 handshake, raw size-prefixed tokens) completes PLAIN, SCRAM
//! or OAUTHBEARER; then requests are served as the authenticated principal until the session
//! expires (`connections.max.reauth.ms` and the token's lifetime, KIP-368), when the client must
//! re-authenticate on the same connection, as the same principal with the same mechanism.
//!
//! Every failed authentication answers SASL_AUTHENTICATION_FAILED with Kafka's text, which does
//! not say which part was wrong, after `connection.failed.authentication.delay.ms`, and closes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::{
    ApiKey, SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest,
    SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Encodable, StrBytes};
use tokio::time::Instant;

use super::oauth::{OAuthBearerServer, OAuthStep};
use super::scram::{ScramMechanism, ScramServer};
use super::{ANONYMOUS, Session, plain};
use crate::Broker;
use crate::dispatch::{self, parse_header, peek_api_key};
use crate::handlers::now_ms;
use crate::request::Request;
use crate::server::CloseReason;

/// What the connection does with a frame.
pub(crate) enum Step {
    /// Serve it as a request of `session`.
    Dispatch(Bytes, Arc<Session>),
    /// Send this frame (a SASL answer).
    Respond(Bytes, Bytes),
    /// Send this frame, if any, then close.
    Fail { prefix: Option<Bytes>, body: Option<Bytes>, reason: CloseReason },
}

/// One mechanism's server side, mid-exchange.
enum Exchange {
    Plain,
    /// The server, and whether the client-first message was answered.
    Scram(Box<ScramServer>, bool),
    OAuthBearer(OAuthBearerServer),
}

impl std::fmt::Debug for Exchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Plain => "Plain",
            Self::Scram(..) => "Scram",
            Self::OAuthBearer(_) => "OAuthBearer",
        })
    }
}

/// Where the exchange is (Kafka's `SaslState`).
#[derive(Debug)]
enum State {
    /// Waiting for SaslHandshake (ApiVersions is served too).
    Handshake,
    /// A mechanism was chosen; its tokens come in SaslAuthenticate requests, or raw after a v0
    /// handshake.
    Authenticate { mechanism: &'static str, raw: bool, exchange: Exchange },
    /// Authenticated (or nothing to authenticate on this listener).
    Complete,
}

/// A finished exchange.
struct Authenticated {
    response: Vec<u8>,
    user: String,
    /// When the credential expires (ms since the epoch), for OAUTHBEARER tokens.
    credential_expiry_ms: Option<u64>,
}

/// The result of one token.
enum Evaluated {
    Challenge(Vec<u8>),
    Complete(Authenticated),
}

/// A connection's authentication state.
#[derive(Debug)]
pub(crate) struct Authentication {
    listener: usize,
    peer: SocketAddr,
    state: State,
    /// The authenticated session, once there is one.
    session: Option<Arc<Session>>,
    /// The mechanism of the current session (for re-authentication).
    session_mechanism: Option<&'static str>,
    /// When the session expires (KIP-368), if it does.
    session_expiry: Option<Instant>,
    /// When authentication must be done by (`seglog.authentication.timeout.ms`).
    deadline: Option<Instant>,
}

const MECHANISMS: [&str; 4] = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"];

impl Authentication {
    /// A new connection on `listener`; `tls_principal` is the client certificate's mapped
    /// principal on an SSL listener with client authentication.
    pub(crate) fn new(
        broker: &Broker,
        listener: usize,
        peer: SocketAddr,
        tls_principal: Option<String>,
    ) -> Self {
        let sasl = broker.config.listeners.get(listener).is_some_and(|l| l.protocol.is_sasl());
        if sasl {
            let timeout = Duration::from_millis(broker.config.security.authentication_timeout_ms);
            return Self {
                listener,
                peer,
                state: State::Handshake,
                session: None,
                session_mechanism: None,
                session_expiry: None,
                deadline: Some(Instant::now() + timeout),
            };
        }
        let principal = tls_principal.unwrap_or_else(|| ANONYMOUS.to_owned());
        if principal != ANONYMOUS {
            super::record_authentication(broker, listener, "SSL", true);
        }
        Self {
            listener,
            peer,
            state: State::Complete,
            session: Some(Arc::new(Session { principal, peer: Some(peer), listener })),
            session_mechanism: None,
            session_expiry: None,
            deadline: None,
        }
    }

    /// The largest frame accepted now: `sasl.server.max.receive.size` until authenticated.
    pub(crate) fn frame_bytes_max(&self, broker: &Broker) -> u32 {
        if self.session.is_some() && matches!(self.state, State::Complete) {
            broker.config.socket_request_max_bytes
        } else {
            broker.config.security.sasl_server_max_receive_size
        }
    }

    /// When the next frame must have arrived by: the authentication deadline, until
    /// authenticated.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        if matches!(self.state, State::Complete) { None } else { self.deadline }
    }

    fn anonymous(&self) -> Arc<Session> {
        Arc::new(Session {
            principal: ANONYMOUS.to_owned(),
            peer: Some(self.peer),
            listener: self.listener,
        })
    }

    /// Decides what to do with one frame.
    pub(crate) async fn on_frame(&mut self, broker: &Arc<Broker>, frame: Bytes) -> Step {
        if let State::Authenticate { raw: true, .. } = self.state {
            return self.raw_token(broker, &frame).await;
        }
        let authenticating = !matches!(self.state, State::Complete);
        // The hot path: an authenticated connection's request (the whole of a PLAINTEXT or SSL
        // listener's traffic) needs only its API key here; dispatch parses the header once.
        // An unreadable key is dispatch's to refuse (it answers an unknown ApiVersions).
        let Some(api_key) = peek_api_key(&frame) else {
            return Step::Dispatch(frame, self.current_or_anonymous());
        };
        let sasl_api = matches!(api_key, ApiKey::SaslHandshake | ApiKey::SaslAuthenticate);
        if sasl_api && self.is_sasl(broker) {
            let Ok(request) = parse_header(&frame, self.current_or_anonymous()) else {
                return Step::Dispatch(frame, self.current_or_anonymous());
            };
            if api_key == ApiKey::SaslHandshake {
                return self.handshake(broker, &request).await;
            }
            if matches!(self.state, State::Authenticate { raw: false, .. }) {
                return self.authenticate(broker, &request).await;
            }
        }
        match api_key {
            ApiKey::ApiVersions => Step::Dispatch(frame, self.current_or_anonymous()),
            _ if authenticating => {
                let stage = if matches!(self.state, State::Handshake) {
                    "handshake"
                } else {
                    "authentication"
                };
                Step::Fail {
                    prefix: None,
                    body: None,
                    reason: CloseReason::Authentication(format!(
                        "Unexpected Kafka request of type {api_key:?} during SASL {stage}"
                    )),
                }
            }
            _ => match &self.session {
                Some(session) => {
                    if self.session_expiry.is_some_and(|expiry| Instant::now() >= expiry) {
                        return Step::Fail {
                            prefix: None,
                            body: None,
                            reason: CloseReason::SessionExpired,
                        };
                    }
                    Step::Dispatch(frame, Arc::clone(session))
                }
                None => Step::Dispatch(frame, self.anonymous()),
            },
        }
    }

    fn current_or_anonymous(&self) -> Arc<Session> {
        self.session.clone().unwrap_or_else(|| self.anonymous())
    }

    fn is_sasl(&self, broker: &Broker) -> bool {
        broker.config.listeners.get(self.listener).is_some_and(|l| l.protocol.is_sasl())
    }

    fn enabled_mechanisms<'a>(&self, broker: &'a Broker) -> &'a [String] {
        broker
            .config
            .security
            .listeners
            .get(self.listener)
            .and_then(|l| l.sasl.as_ref())
            .map_or(&[], |sasl| sasl.enabled_mechanisms.as_slice())
    }

    async fn handshake(&mut self, broker: &Arc<Broker>, request: &Request) -> Step {
        let handshake: SaslHandshakeRequest = match request.decode() {
            Ok(handshake) => handshake,
            Err(error) => {
                return Step::Fail {
                    prefix: None,
                    body: None,
                    reason: CloseReason::Invalid(error),
                };
            }
        };
        let enabled = self.enabled_mechanisms(broker);
        let asked = handshake.mechanism.to_string();
        let mechanism =
            MECHANISMS.into_iter().find(|m| *m == asked && enabled.iter().any(|e| e == m));
        let mut response = SaslHandshakeResponse::default();
        response.mechanisms = enabled.iter().map(|m| StrBytes::from_string(m.clone())).collect();
        let reauthenticating = self.session.is_some();
        let bad_reauth =
            reauthenticating && mechanism.is_some() && self.session_mechanism != mechanism;
        let Some(mechanism) = mechanism.filter(|_| !bad_reauth) else {
            response.error_code = ResponseError::UnsupportedSaslMechanism.code();
            super::record_authentication(broker, self.listener, &asked, false);
            let reason = if bad_reauth {
                format!(
                    "SASL mechanism '{asked}' requested by client is not supported for \
                     re-authentication of mechanism '{}'",
                    self.session_mechanism.unwrap_or_default()
                )
            } else {
                format!("Unsupported SASL mechanism {asked}")
            };
            return self
                .fail_with(broker, request, &response, CloseReason::Authentication(reason))
                .await;
        };
        let exchange = match mechanism {
            "PLAIN" => Exchange::Plain,
            "OAUTHBEARER" => Exchange::OAuthBearer(OAuthBearerServer::default()),
            scram => {
                let scram = ScramMechanism::from_name(scram).unwrap_or(ScramMechanism::Sha256);
                match ScramServer::new(scram) {
                    Ok(server) => Exchange::Scram(Box::new(server), false),
                    Err(error) => {
                        return Step::Fail {
                            prefix: None,
                            body: None,
                            reason: CloseReason::Authentication(error.to_string()),
                        };
                    }
                }
            }
        };
        self.state = State::Authenticate { mechanism, raw: request.version == 0, exchange };
        if reauthenticating {
            // Re-authentication has its own deadline.
            let timeout = Duration::from_millis(broker.config.security.authentication_timeout_ms);
            self.deadline = Some(Instant::now() + timeout);
        }
        respond(request, &response)
    }

    /// Runs one token through the mechanism.
    fn evaluate(&mut self, broker: &Broker, token: &[u8]) -> Result<Evaluated, String> {
        let State::Authenticate { exchange, .. } = &mut self.state else {
            return Err("no SASL exchange is in progress".to_owned());
        };
        let listener = self.listener;
        match exchange {
            Exchange::Plain => {
                let credentials = plain::parse_plain(token).map_err(|e| e.to_string())?;
                if broker.security.verify_plain(
                    listener,
                    &credentials.username,
                    &credentials.password,
                ) {
                    Ok(Evaluated::Complete(Authenticated {
                        response: Vec::new(),
                        user: credentials.username.clone(),
                        credential_expiry_ms: None,
                    }))
                } else {
                    Err("invalid credentials".to_owned())
                }
            }
            Exchange::Scram(server, first_done) => {
                if *first_done {
                    let outcome = server.client_final(token).map_err(|e| e.to_string())?;
                    return Ok(Evaluated::Complete(Authenticated {
                        response: outcome.server_final,
                        user: outcome.username,
                        credential_expiry_ms: None,
                    }));
                }
                let mechanism = server.mechanism();
                let first = server
                    .client_first(token, |user| broker.security.scram_credential(user, mechanism))
                    .map_err(|e| e.to_string())?;
                *first_done = true;
                Ok(Evaluated::Challenge(first))
            }
            Exchange::OAuthBearer(server) => {
                let validator = broker.security.oauth_validator(listener)?;
                match server.evaluate(token, &validator, now_ms().max(0).cast_unsigned()) {
                    Ok(OAuthStep::Challenge(challenge)) => Ok(Evaluated::Challenge(challenge)),
                    Ok(OAuthStep::Complete { principal_name, lifetime_ms }) => {
                        Ok(Evaluated::Complete(Authenticated {
                            response: Vec::new(),
                            user: principal_name,
                            credential_expiry_ms: Some(lifetime_ms),
                        }))
                    }
                    Err(error) => Err(error.to_string()),
                }
            }
        }
    }

    /// Completes the session: the principal, its expiry, and the session lifetime to tell the
    /// client (0 when it does not expire). Re-authentication must keep the principal.
    fn complete(&mut self, broker: &Broker, done: &Authenticated) -> Result<i64, String> {
        let principal = format!("User:{}", done.user);
        if let Some(session) = &self.session
            && session.principal != principal
        {
            return Err(format!(
                "Cannot change principals during re-authentication from {}: {principal}",
                session.principal
            ));
        }
        let mechanism = match &self.state {
            State::Authenticate { mechanism, .. } => Some(*mechanism),
            _ => None,
        };
        let max_reauth_ms = broker.config.security.connections_max_reauth_ms;
        let now = now_ms().max(0).cast_unsigned();
        let credential_ms = done.credential_expiry_ms.map(|expiry| expiry.saturating_sub(now));
        let lifetime_ms = match (credential_ms, max_reauth_ms) {
            (None, 0) => None,
            (None, max) => Some(max),
            (Some(credential), 0) => Some(credential),
            (Some(credential), max) => Some(credential.min(max)),
        };
        self.session_expiry = lifetime_ms.map(|ms| Instant::now() + Duration::from_millis(ms));
        if self.session.is_none() {
            self.session = Some(Arc::new(Session {
                principal,
                peer: Some(self.peer),
                listener: self.listener,
            }));
        }
        self.session_mechanism = mechanism;
        self.state = State::Complete;
        self.deadline = None;
        Ok(lifetime_ms.map_or(0, |ms| i64::try_from(ms).unwrap_or(i64::MAX)))
    }

    fn mechanism(&self) -> &'static str {
        match &self.state {
            State::Authenticate { mechanism, .. } => mechanism,
            _ => self.session_mechanism.unwrap_or("SASL"),
        }
    }

    async fn authenticate(&mut self, broker: &Arc<Broker>, request: &Request) -> Step {
        let authenticate: SaslAuthenticateRequest = match request.decode() {
            Ok(authenticate) => authenticate,
            Err(error) => {
                return Step::Fail {
                    prefix: None,
                    body: None,
                    reason: CloseReason::Invalid(error),
                };
            }
        };
        let mechanism = self.mechanism();
        let reauthenticating = self.session.is_some();
        let mut response = SaslAuthenticateResponse::default();
        let failure = match self.evaluate(broker, &authenticate.auth_bytes) {
            Ok(Evaluated::Challenge(challenge)) => {
                response.auth_bytes = Bytes::from(challenge);
                return respond(request, &response);
            }
            Ok(Evaluated::Complete(done)) => match self.complete(broker, &done) {
                Ok(lifetime_ms) => {
                    super::record_authentication(broker, self.listener, mechanism, true);
                    response.auth_bytes = Bytes::from(done.response);
                    response.session_lifetime_ms = lifetime_ms;
                    return respond(request, &response);
                }
                Err(reason) => reason,
            },
            Err(reason) => reason,
        };
        super::record_authentication(broker, self.listener, mechanism, false);
        let text = if reauthenticating { "re-authentication" } else { "authentication" };
        response.error_code = ResponseError::SaslAuthenticationFailed.code();
        response.error_message = Some(StrBytes::from_string(format!(
            "Authentication failed during {text} due to invalid credentials with SASL mechanism \
             {mechanism}"
        )));
        tracing::info!(
            peer = %self.peer,
            mechanism,
            "failed {text} with SASL mechanism {mechanism} from {}",
            self.peer.ip()
        );
        tracing::debug!(peer = %self.peer, %failure, "why the authentication failed");
        self.fail_with(broker, request, &response, CloseReason::Authentication(failure)).await
    }

    /// A token after a v0 handshake: no Kafka header, the answer is a size-prefixed token.
    async fn raw_token(&mut self, broker: &Arc<Broker>, token: &[u8]) -> Step {
        let mechanism = self.mechanism();
        let failure = match self.evaluate(broker, token) {
            Ok(Evaluated::Challenge(challenge)) => return raw(challenge),
            Ok(Evaluated::Complete(done)) => match self.complete(broker, &done) {
                Ok(_) => {
                    super::record_authentication(broker, self.listener, mechanism, true);
                    return raw(done.response);
                }
                Err(reason) => reason,
            },
            Err(reason) => reason,
        };
        super::record_authentication(broker, self.listener, mechanism, false);
        delay(broker).await;
        Step::Fail { prefix: None, body: None, reason: CloseReason::Authentication(failure) }
    }

    async fn fail_with<T: Encodable>(
        &self,
        broker: &Broker,
        request: &Request,
        response: &T,
        reason: CloseReason,
    ) -> Step {
        delay(broker).await;
        match respond(request, response) {
            Step::Respond(prefix, body) => {
                Step::Fail { prefix: Some(prefix), body: Some(body), reason }
            }
            other => other,
        }
    }
}

/// `connection.failed.authentication.delay.ms` before a failure is answered.
async fn delay(broker: &Broker) {
    let delay_ms = broker.config.security.failed_authentication_delay_ms;
    if delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
    }
}

fn raw(token: Vec<u8>) -> Step {
    let mut prefix = BytesMut::with_capacity(4);
    prefix.put_u32(u32::try_from(token.len()).unwrap_or(u32::MAX));
    Step::Respond(prefix.freeze(), Bytes::from(token))
}

fn respond<T: Encodable>(request: &Request, response: &T) -> Step {
    let mut body = BytesMut::new();
    if let Err(error) = response.encode(&mut body, request.version) {
        return Step::Fail {
            prefix: None,
            body: None,
            reason: CloseReason::Invalid(crate::error::Error::Encode {
                what: "sasl response",
                source: error.into(),
            }),
        };
    }
    match dispatch::frame(request.api_key, request.version, request.header.correlation_id, body) {
        Ok((prefix, body)) => Step::Respond(prefix, body),
        Err(error) => Step::Fail { prefix: None, body: None, reason: CloseReason::Invalid(error) },
    }
}
