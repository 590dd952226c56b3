//! The console's login, when the broker has security: a SASL listener or an authorizer.
//! `POST /api/v1/login` checks a user name and password against the same credentials SASL
//! PLAIN checks (a listener's PLAIN users, else the SCRAM credentials of `seglog users`), and
//! answers with an `HttpOnly`, `SameSite=Strict` session cookie. Every other call then runs as
//! `User:<name>`: the console's Kafka requests carry that principal through the broker's ACLs,
//! and its direct reads of logs check `Describe` (and `Read` for records) on the topic.
//! Without security every call runs as `User:ANONYMOUS`, as a PLAINTEXT client does.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::{ApiError, App, JsonBody};
use crate::Broker;
use crate::security::acl::{AclOperation, ResourceType};
use crate::security::{ANONYMOUS, Session};

/// The session cookie's name.
const COOKIE: &str = "seglog_console";
/// How long a login lasts.
const SESSION_TTL: Duration = Duration::from_hours(8);
/// Sessions held at most; the oldest goes first.
const SESSIONS_MAX: usize = 1000;
/// How long a failed login waits before it answers (Kafka's
/// `connection.failed.authentication.delay.ms` idea), so guessing is slow.
const FAILED_LOGIN_DELAY: Duration = Duration::from_millis(500);

tokio::task_local! {
    /// The session of the call being served.
    static CALLER: Session;
}

/// The logged-in sessions by token.
#[derive(Debug, Default)]
pub(super) struct Sessions {
    by_token: Mutex<HashMap<String, (String, Instant)>>,
}

impl Sessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, Instant)>> {
        self.by_token.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn insert(&self, principal: String) -> Result<String, ApiError> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes)
            .map_err(|error| ApiError::internal(format!("no randomness for a session: {error}")))?;
        let token = bytes.iter().fold(String::with_capacity(64), |mut text, byte| {
            let _ = write!(text, "{byte:02x}");
            text
        });
        let now = Instant::now();
        let mut sessions = self.lock();
        sessions.retain(|_, (_, expires)| *expires > now);
        if sessions.len() >= SESSIONS_MAX
            && let Some(oldest) =
                sessions.iter().min_by_key(|(_, (_, expires))| *expires).map(|(t, _)| t.clone())
        {
            sessions.remove(&oldest);
        }
        sessions.insert(token.clone(), (principal, now + SESSION_TTL));
        Ok(token)
    }

    fn principal(&self, token: &str) -> Option<String> {
        let sessions = self.lock();
        let (principal, expires) = sessions.get(token)?;
        (*expires > Instant::now()).then(|| principal.clone())
    }

    fn remove(&self, token: &str) {
        self.lock().remove(token);
    }
}

/// Whether the console asks for a login: the broker has a SASL listener or an authorizer.
pub(super) fn login_required(broker: &Broker) -> bool {
    broker.config.security.authorizer.is_some()
        || broker.config.listeners.iter().any(|listener| listener.protocol.is_sasl())
}

/// Whether `password` is `username`'s on any SASL listener, or in the SCRAM credentials.
fn verify(broker: &Broker, username: &str, password: &str) -> bool {
    let sasl = broker
        .config
        .listeners
        .iter()
        .enumerate()
        .filter(|(_, listener)| listener.protocol.is_sasl());
    let mut listeners: Vec<usize> = sasl.map(|(i, _)| i).collect();
    // An index past the listeners has no PLAIN users: the SCRAM credentials decide.
    listeners.push(usize::MAX);
    listeners.into_iter().any(|listener| broker.security.verify_plain(listener, username, password))
}

fn token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|cookies| cookies.split(';'))
        .find_map(|cookie| cookie.trim().strip_prefix(COOKIE)?.strip_prefix('='))
}

/// Runs every API call but the login's as its session's principal; 401 without one when a
/// login is required.
pub(super) async fn require_login(
    State(app): State<App>,
    ConnectInfo(super::listener::Peer(peer)): ConnectInfo<super::listener::Peer>,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    let open = ["/api/v1/login", "/api/v1/session", "/api/v1/openapi.json"].contains(&path)
        || !path.starts_with("/api/");
    let principal = if login_required(&app.broker) {
        match token(request.headers()).and_then(|token| app.sessions.principal(token)) {
            Some(principal) => principal,
            None if open => ANONYMOUS.to_owned(),
            None => {
                return ApiError::new(StatusCode::UNAUTHORIZED, "log in first: POST /api/v1/login")
                    .into_response();
            }
        }
    } else {
        ANONYMOUS.to_owned()
    };
    let session = Session { principal, peer: Some(peer), listener: 0 };
    CALLER.scope(session, next.run(request)).await
}

/// The session of the call being served (anonymous outside one).
pub(super) fn caller() -> Session {
    CALLER.try_with(Clone::clone).unwrap_or_else(|_| Session::local(ANONYMOUS))
}

/// Whether the caller may `operation` the topic `name` (always, without an authorizer).
pub(super) fn may(app: &App, operation: AclOperation, topic: &str) -> bool {
    app.broker.security.authorize(&caller(), operation, ResourceType::Topic, topic)
}

/// [`may`], or a 403 that names what is missing.
pub(super) fn check(app: &App, operation: AclOperation, topic: &str) -> Result<(), ApiError> {
    if may(app, operation, topic) {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!("{} may not {operation:?} topic {topic:?}", caller().principal),
        ))
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Login {
    username: String,
    password: String,
}

#[derive(Debug, Serialize)]
pub(super) struct SessionView {
    login_required: bool,
    principal: Option<String>,
}

/// `POST /api/v1/login`.
pub(super) async fn login(
    State(app): State<App>,
    JsonBody(body): JsonBody<Login>,
) -> Result<Response, ApiError> {
    if !login_required(&app.broker) {
        return Err(ApiError::bad_request(
            "this broker has no SASL listener and no authorizer: the console needs no login",
        ));
    }
    let broker = std::sync::Arc::clone(&app.broker);
    let (username, password) = (body.username.clone(), body.password);
    let ok = super::blocking(move || Ok(verify(&broker, &username, &password))).await?;
    if !ok {
        tokio::time::sleep(FAILED_LOGIN_DELAY).await;
        return Err(ApiError::new(StatusCode::UNAUTHORIZED, "wrong user name or password"));
    }
    let principal = format!("User:{}", body.username);
    let token = app.sessions.insert(principal.clone())?;
    let cookie = format!(
        "{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
        SESSION_TTL.as_secs()
    );
    let view = SessionView { login_required: true, principal: Some(principal) };
    Ok(([(header::SET_COOKIE, cookie)], Json(view)).into_response())
}

/// `POST /api/v1/logout`.
pub(super) async fn logout(State(app): State<App>, headers: HeaderMap) -> Response {
    if let Some(token) = token(&headers) {
        app.sessions.remove(token);
    }
    let cookie = format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
    let view = SessionView { login_required: login_required(&app.broker), principal: None };
    ([(header::SET_COOKIE, cookie)], Json(view)).into_response()
}

/// `GET /api/v1/session`: whether a login is needed, and who is logged in.
pub(super) async fn session(State(app): State<App>, headers: HeaderMap) -> Json<SessionView> {
    let required = login_required(&app.broker);
    let principal = if required {
        token(&headers).and_then(|token| app.sessions.principal(token))
    } else {
        Some(ANONYMOUS.to_owned())
    };
    Json(SessionView { login_required: required, principal })
}
