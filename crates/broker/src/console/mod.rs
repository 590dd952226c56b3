//! The web console (docs/console.md): an HTTP listener in the broker
//! (`seglog.console.listener`, default `127.0.0.1:9309`) serving a versioned JSON API under
//! `/api/v1` (described by `openapi.json`, served at `/api/v1/openapi.json`) and the pages that
//! draw it, embedded in the binary (`assets/`).
//!
//! - `overview.rs`: the broker, its log directories, live throughput, and the health page
//!   (cleaner, recovery, fsync latency, request rates).
//! - `topics.rs`: topics (paged, sorted, filtered), a topic's partitions and configs, a
//!   partition's segments as a timeline, a segment's dump, and the message browser.
//! - `groups.rs`: consumer groups, their members and lag.
//! - `actions.rs`: the changes, refused unless `seglog.console.actions.enable`.
//! - `auth.rs`: the login (when the broker has a SASL listener or an authorizer) against the
//!   SASL credentials; each call runs as its user, through the ACLs.
//! - `history.rs`: the sampler of throughput and lag, the last hour, bounded.
//! - `kafka.rs`: groups, configs and actions go through the broker's own Kafka handlers.
//!
//! Limits: at most 64 connections at once (`listener.rs`), every call runs within
//! [`REQUEST_TIME_MAX`], storage work on the blocking pool
//! (never on the reactor the Kafka listeners share), lists are paged, a message page reads at
//! most [`topics::MESSAGE_BYTES_MAX`], a dump page at most [`DUMP_LINES_MAX`] lines.

mod actions;
mod auth;
mod groups;
mod history;
mod kafka;
mod listener;
mod overview;
mod topics;
mod traffic;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::Router;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Serialize;
use tokio::net::TcpListener;
use tokio::sync::watch;

pub(crate) use history::History;
pub(crate) use traffic::Traffic;

use crate::Broker;

/// `seglog.console.listener`: where the console is served (`host:port`; empty turns it off).
pub const CONSOLE_LISTENER: &str = "seglog.console.listener";
/// `seglog.console.actions.enable`: whether the console may change anything.
pub const CONSOLE_ACTIONS_ENABLE: &str = "seglog.console.actions.enable";
/// `seglog.console.sample.interval.ms`: how often throughput is sampled (lag every sixth).
pub const CONSOLE_SAMPLE_INTERVAL_MS: &str = "seglog.console.sample.interval.ms";
/// The default console listener.
pub const CONSOLE_LISTENER_DEFAULT: &str = "127.0.0.1:9309";

/// The longest any console call may take before it is answered 503.
pub const REQUEST_TIME_MAX: Duration = Duration::from_secs(10);
/// The largest request body an action takes.
const REQUEST_BODY_BYTES_MAX: usize = 64 << 10;
/// The most dump lines one page returns.
pub const DUMP_LINES_MAX: usize = 1000;
/// The most items a list page returns.
pub const PAGE_ITEMS_MAX: usize = 500;

/// The console's settings (`seglog.console.*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleConfig {
    /// Where the console listens; `None` turns it off.
    pub listener: Option<SocketAddr>,
    /// Whether actions (create or delete a topic, alter configs, delete records, reset a
    /// group's offsets) are allowed.
    pub actions_enable: bool,
    /// How often throughput is sampled, in milliseconds (lag every sixth sample).
    pub sample_interval_ms: u64,
}

impl Default for ConsoleConfig {
    fn default() -> Self {
        Self {
            listener: CONSOLE_LISTENER_DEFAULT.parse().ok(),
            actions_enable: false,
            sample_interval_ms: 5000,
        }
    }
}

/// A segment file's dump, one page of it: what `seglog dump` prints (the tools supply it, as
/// the dump lives in the command-line crate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpRequest {
    /// The `.log`, `.index` or `.timeindex` file.
    pub path: PathBuf,
    /// `--print-data-log`.
    pub print_data_log: bool,
    /// Lines to skip before the page.
    pub skip_lines: usize,
    /// Lines in the page, at most [`DUMP_LINES_MAX`].
    pub lines_max: usize,
}

/// One page of a dump.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DumpPage {
    /// The page's lines, as `seglog dump` prints them.
    pub lines: Vec<String>,
    /// Whether lines follow the page.
    pub more: bool,
}

/// What prints a segment file as `seglog dump` does (a blocking call; `Err` says why not).
pub type DumpFn = Arc<dyn Fn(&DumpRequest) -> Result<DumpPage, String> + Send + Sync>;

/// What the broker keeps for the console between calls: its counters and the last start's
/// recovery.
#[derive(Debug)]
pub(crate) struct ConsoleState {
    pub(crate) traffic: Traffic,
    /// Filled by the start and the background load.
    pub(crate) recovery: Arc<Mutex<Recovery>>,
}

pub(crate) use overview::Recovery;

/// What every handler is given.
#[derive(Clone)]
struct App {
    broker: Arc<Broker>,
    /// The logged-in sessions.
    sessions: Arc<auth::Sessions>,
    /// Every partition's row, reused for a second.
    rows: Arc<topics::RowsCache>,
    history: Arc<History>,
    dump: Option<DumpFn>,
    started: Instant,
}

impl App {
    /// The session the console's Kafka requests run as: the caller's.
    #[expect(clippy::unused_self, reason = "the caller is the task's, not the app's")]
    fn session(&self) -> crate::security::Session {
        auth::caller()
    }
}

/// An API error: its HTTP status and a message that says what and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    status: StatusCode,
    message: String,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: &'a str,
    message: &'a str,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self { status, message: message.into() }
    }

    /// A bad parameter or body (400).
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// No such topic, partition, segment or group (404).
    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    /// Something the broker could not do (500).
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }

    /// A storage error, mapped to the status that fits.
    pub(crate) fn storage(what: &str, error: &seglog_storage::Error) -> Self {
        use seglog_storage::Error as E;
        let status = match error {
            E::UnknownTopicOrPartition { .. } => StatusCode::NOT_FOUND,
            E::OffsetOutOfRange { .. } | E::InvalidArgument(_) => StatusCode::BAD_REQUEST,
            E::Offline { .. } => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        Self::new(status, format!("{what}: {error}"))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let error = self.status.canonical_reason().unwrap_or("error");
        let body = ErrorBody { error, message: &self.message };
        (self.status, Json(body)).into_response()
    }
}

/// `axum::extract::Query` whose rejection is an [`ApiError`] (a JSON 400 naming the
/// parameter).
#[derive(axum::extract::FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub(crate) struct Query<T>(pub(crate) T);

/// `axum::extract::Path` whose rejection is an [`ApiError`].
#[derive(axum::extract::FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub(crate) struct Path<T>(pub(crate) T);

/// `axum::Json` whose rejection is an [`ApiError`].
#[derive(axum::extract::FromRequest)]
#[from_request(via(Json), rejection(ApiError))]
pub(crate) struct JsonBody<T>(pub(crate) T);

/// A rejected parameter, path or body is a 400 with axum's text, which names it.
macro_rules! rejections_are_bad_requests {
    ($($rejection:ty),*) => {$(
        impl From<$rejection> for ApiError {
            fn from(rejection: $rejection) -> Self {
                Self::bad_request(rejection.body_text())
            }
        }
    )*};
}
rejections_are_bad_requests!(
    axum::extract::rejection::QueryRejection,
    axum::extract::rejection::PathRejection,
    axum::extract::rejection::JsonRejection
);

/// Runs blocking storage work on the blocking pool.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| ApiError::internal(format!("the console's task failed: {error}")))?
}

/// Answers 503 when a call takes longer than [`REQUEST_TIME_MAX`].
async fn time_limit(request: Request, next: Next) -> Response {
    let path = request.uri().path().to_owned();
    match tokio::time::timeout(REQUEST_TIME_MAX, next.run(request)).await {
        Ok(response) => response,
        Err(_) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{path} took longer than {} s", REQUEST_TIME_MAX.as_secs()),
        )
        .into_response(),
    }
}

/// The OpenAPI document of `/api/v1`.
pub const OPENAPI: &str = include_str!("openapi.json");

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type), (header::CACHE_CONTROL, "no-cache")], body)
        .into_response()
}

fn router(app: App) -> Router {
    let api = Router::new()
        .route("/overview", get(overview::overview))
        .route("/throughput", get(overview::throughput))
        .route("/health", get(overview::health))
        .route("/topics", get(topics::list).post(actions::create_topic))
        .route("/topics/{topic}", get(topics::describe).delete(actions::delete_topic))
        .route("/topics/{topic}/configs", post(actions::alter_configs))
        .route("/topics/{topic}/partitions/{partition}/segments", get(topics::segments))
        .route(
            "/topics/{topic}/partitions/{partition}/segments/{base_offset}/dump",
            get(topics::dump),
        )
        .route("/topics/{topic}/partitions/{partition}/messages", get(topics::messages))
        .route(
            "/topics/{topic}/partitions/{partition}/delete-records",
            post(actions::delete_records),
        )
        .route("/groups", get(groups::list))
        .route("/groups/{group}", get(groups::describe))
        .route("/groups/{group}/reset-offsets", post(actions::reset_offsets))
        .route("/openapi.json", get(|| async { asset("application/json", OPENAPI) }))
        .route("/login", post(auth::login))
        .route("/logout", post(auth::logout))
        .route("/session", get(auth::session))
        .fallback(|| async { ApiError::not_found("no such API path") });
    Router::new()
        .nest("/api/v1", api)
        .route("/", get(|| async { asset("text/html; charset=utf-8", INDEX_HTML) }))
        .route("/assets/app.js", get(|| async { asset("text/javascript", APP_JS) }))
        .route("/assets/style.css", get(|| async { asset("text/css", STYLE_CSS) }))
        .route("/assets/favicon.svg", get(|| async { asset("image/svg+xml", FAVICON_SVG) }))
        .layer(axum::middleware::from_fn_with_state(app.clone(), auth::require_login))
        .layer(axum::extract::DefaultBodyLimit::max(REQUEST_BODY_BYTES_MAX))
        .layer(axum::middleware::from_fn(time_limit))
        .with_state(app)
}

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const STYLE_CSS: &str = include_str!("assets/style.css");
const FAVICON_SVG: &str = include_str!("assets/favicon.svg");

/// The console's own thread's niceness: the kernel runs the broker's threads first when both
/// want a core, so that loading pages does not move the producers' latency.
const CONSOLE_NICE: i32 = 10;
/// Threads the console's runtime may start for storage reads.
const CONSOLE_BLOCKING_THREADS_MAX: usize = 2;

/// Starts the console on a thread of its own, with its own runtime and blocking pool, at a
/// lower priority than the broker's (nice [`CONSOLE_NICE`]; threads it starts inherit it): no
/// page ever waits in the queue of the reactor that serves Kafka clients, or takes a core from
/// it. It ends at shutdown.
pub(crate) fn spawn(
    broker: Arc<Broker>,
    listener: TcpListener,
    stopped: watch::Receiver<bool>,
    dump: Option<DumpFn>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let listener = listener.into_std()?;
    std::thread::Builder::new().name("seglog-console".to_owned()).spawn(move || {
        if let Err(error) =
            rustix::process::setpriority_process(Some(rustix::thread::gettid()), CONSOLE_NICE)
        {
            tracing::debug!(%error, "the console thread keeps the broker's priority");
        }
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .thread_name("seglog-console")
            .max_blocking_threads(CONSOLE_BLOCKING_THREADS_MAX)
            .build()
        {
            Ok(runtime) => runtime,
            Err(error) => {
                tracing::error!(%error, "the console cannot start its runtime");
                return;
            }
        };
        runtime.block_on(async move {
            match TcpListener::from_std(listener) {
                Ok(listener) => serve(broker, listener, stopped, dump).await,
                Err(error) => tracing::error!(%error, "the console cannot listen"),
            }
        });
    })
}

/// Serves the console on `listener` until shutdown, and samples the history meanwhile.
async fn serve(
    broker: Arc<Broker>,
    listener: TcpListener,
    mut stopped: watch::Receiver<bool>,
    dump: Option<DumpFn>,
) {
    let history = Arc::new(History::default());
    let app = App {
        broker,
        sessions: Arc::new(auth::Sessions::default()),
        rows: Arc::new(topics::RowsCache::default()),
        history: Arc::clone(&history),
        dump,
        started: Instant::now(),
    };
    let sampler = tokio::spawn(history::sample(app.clone(), stopped.clone()));
    let service = router(app).into_make_service_with_connect_info::<listener::Peer>();
    let served = axum::serve(listener::Limited::new(listener), service)
        .with_graceful_shutdown(async move {
            let _ = stopped.changed().await;
        })
        .await;
    if let Err(error) = served {
        tracing::error!(%error, "the console stopped");
    }
    sampler.abort();
}
