//! Who a connection is and what it may do (Kafka's `SocketServer` security, `KafkaPrincipal`,
//! `RequestContext`, the `Authorizer` and the quota managers): TLS listeners (`tls`), the SASL
//! exchange of a connection (`sasl` over `plain`, `scram` and `oauth`), principals (`principal`),
//! ACLs (`acl`), client quotas (`quota`) and the durable store of ACLs, SCRAM credentials and
//! quotas (`store`). docs/security.md says what is supported and how it differs from Kafka.

pub(crate) mod acl;
pub mod admin;
pub(crate) mod client;
pub mod fuzzing;
pub(crate) mod handshake_stream;
pub(crate) mod oauth;
pub(crate) mod plain;
pub(crate) mod principal;
pub(crate) mod quota;
mod runtime;
pub(crate) mod sasl;
pub(crate) mod scram;
pub(crate) mod store;
pub(crate) mod throttle;
pub(crate) mod tls;

use std::net::SocketAddr;

pub use runtime::SecurityError;
pub(crate) use runtime::{Security, record_authentication, record_tls_failure};

/// The principal of a connection that did not authenticate (Kafka's `KafkaPrincipal.ANONYMOUS`).
pub(crate) const ANONYMOUS: &str = "User:ANONYMOUS";

/// Who sent a request (Kafka's `RequestContext` security part): the authenticated principal,
/// the client's address and the listener it came through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Session {
    /// `User:<name>`: the SASL user, the mapped client-certificate name, or `User:ANONYMOUS`.
    pub(crate) principal: String,
    /// The client's address, when known (not for `handle_frame`).
    pub(crate) peer: Option<SocketAddr>,
    /// The index of the listener in `BrokerConfig::listeners`.
    pub(crate) listener: usize,
}

impl Session {
    /// A session on the first listener without a peer, for `handle_frame`.
    pub(crate) fn local(principal: &str) -> Self {
        Self { principal: principal.to_owned(), peer: None, listener: 0 }
    }

    /// The user name of the principal (`alice` of `User:alice`), for quotas.
    pub(crate) fn user(&self) -> &str {
        self.principal.split_once(':').map_or(self.principal.as_str(), |(_, name)| name)
    }

    /// The client's address as ACL host entries name it (`127.0.0.1`; Kafka's
    /// `InetAddress.getHostAddress`).
    pub(crate) fn host(&self) -> String {
        self.peer.map_or_else(|| "127.0.0.1".to_owned(), |peer| peer.ip().to_string())
    }
}

#[cfg(test)]
#[path = "sasl_tests.rs"]
mod sasl_tests;
