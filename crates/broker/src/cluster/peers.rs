//! Requests from one broker to another (Kafka's `NodeToNodeChannelManager` and the
//! `TransactionMarkerChannelManager`'s network client): the transaction coordinator's
//! WriteTxnMarkers to a partition's leader, and a partition leader's verification of a
//! transactional produce (AddPartitionsToTxn `verify_only`) with the coordinator.
//!
//! They go to the peer's endpoint on `inter.broker.listener.name` as the committed metadata
//! lists it, over one connection per peer (bounded: at most one per registered broker), one
//! request in flight each; a failed call drops the connection, and a kept connection that
//! fails on I/O (its peer restarted) is replaced at once.
//! A connection is made with the listener's own security as a client
//! ([`ClientSecurity`]: TLS with the listener's truststore and keystore, SASL with
//! `sasl.mechanism.inter.broker.protocol`'s login); a peer whose endpoint on the listener
//! registered another protocol is refused with [`PeerError::ProtocolMismatch`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kafka_protocol::protocol::Request;

use super::records::Endpoint;
use crate::security::client::ClientSecurity;
use crate::wire::{Client, WireError};

/// How long one call (connect, send and answer) may take.
const PEER_CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a peer gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("broker {broker_id} has no live endpoint on the inter-broker listener {listener}")]
    NoEndpoint { broker_id: i32, listener: String },
    #[error(
        "broker {broker_id}'s inter-broker listener {listener} is {theirs}, this broker's is \
         {ours}: every broker must map the listener to the same security protocol"
    )]
    ProtocolMismatch { broker_id: i32, listener: String, theirs: &'static str, ours: &'static str },
    #[error("broker {broker_id} did not answer within {PEER_CALL_TIMEOUT:?}")]
    Timeout { broker_id: i32 },
    #[error("broker {broker_id} at {host}:{port}: {source}")]
    Wire {
        broker_id: i32,
        host: String,
        port: u16,
        #[source]
        source: WireError,
    },
}

/// One peer's connection, and the endpoint it was made to.
type Slot = Arc<tokio::sync::Mutex<Option<(Endpoint, Client)>>>;

/// The connections to the other brokers.
#[derive(Debug)]
pub(crate) struct Peers {
    /// `inter.broker.listener.name`.
    listener: String,
    /// How this broker connects on that listener.
    security: ClientSecurity,
    slots: Mutex<HashMap<i32, Slot>>,
}

/// Kafka's `SecurityProtocol` name of an endpoint's id.
fn protocol_name(id: i16) -> &'static str {
    match id {
        0 => "PLAINTEXT",
        1 => "SSL",
        2 => "SASL_PLAINTEXT",
        3 => "SASL_SSL",
        _ => "an unknown security protocol",
    }
}

impl Peers {
    pub(crate) fn new(listener: String, security: ClientSecurity) -> Self {
        Self { listener, security, slots: Mutex::new(HashMap::new()) }
    }

    /// `inter.broker.listener.name`.
    pub(crate) fn listener(&self) -> &str {
        &self.listener
    }

    /// A connection of its own to broker `broker_id` on the inter-broker listener (a follower's
    /// fetcher, which long-polls and must not hold a shared connection).
    pub(crate) async fn connect(
        &self,
        broker_id: i32,
        endpoints: Option<Vec<Endpoint>>,
    ) -> Result<Client, PeerError> {
        let endpoint = self.endpoint(broker_id, endpoints)?;
        let call = self.security.connect(&endpoint.host, endpoint.port);
        match tokio::time::timeout(PEER_CALL_TIMEOUT, call).await {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(source)) => {
                Err(PeerError::Wire { broker_id, host: endpoint.host, port: endpoint.port, source })
            }
            Err(_) => Err(PeerError::Timeout { broker_id }),
        }
    }

    /// Broker `broker_id`'s endpoint on the inter-broker listener, checked for its protocol.
    fn endpoint(
        &self,
        broker_id: i32,
        endpoints: Option<Vec<Endpoint>>,
    ) -> Result<Endpoint, PeerError> {
        let no_endpoint = || PeerError::NoEndpoint { broker_id, listener: self.listener.clone() };
        let endpoint = endpoints
            .and_then(|all| all.into_iter().find(|e| e.name.eq_ignore_ascii_case(&self.listener)))
            .ok_or_else(no_endpoint)?;
        let ours = self.security.protocol().name();
        if protocol_name(endpoint.security_protocol) != ours {
            return Err(PeerError::ProtocolMismatch {
                broker_id,
                listener: self.listener.clone(),
                theirs: protocol_name(endpoint.security_protocol),
                ours,
            });
        }
        Ok(endpoint)
    }

    /// Sends `request` at `version` to broker `broker_id`, whose registered endpoints are
    /// `endpoints` (`None` when it is not a live broker).
    pub(crate) async fn call<R: Request>(
        &self,
        broker_id: i32,
        endpoints: Option<Vec<Endpoint>>,
        request: &R,
        version: i16,
    ) -> Result<R::Response, PeerError> {
        let endpoint = self.endpoint(broker_id, endpoints)?;
        let slot = Arc::clone(
            self.slots.lock().unwrap_or_else(PoisonError::into_inner).entry(broker_id).or_default(),
        );
        let mut slot = slot.lock().await;
        let wire = |source| PeerError::Wire {
            broker_id,
            host: endpoint.host.clone(),
            port: endpoint.port,
            source,
        };
        let call = async {
            // A connection kept from an earlier call may have died with its peer (a restart on
            // the same port): it is tried once, and on an I/O failure a new one is made.
            let reused = slot.as_ref().is_some_and(|(to, _)| *to == endpoint);
            if reused && let Some((_, client)) = slot.as_mut() {
                match client.send(request, version).await {
                    Err(WireError::Io(_)) => {}
                    answer => return answer.map_err(wire),
                }
            }
            let mut client: Client =
                self.security.connect(&endpoint.host, endpoint.port).await.map_err(wire)?;
            let answer = client.send(request, version).await.map_err(wire);
            *slot = Some((endpoint.clone(), client));
            answer
        };
        let answer = match tokio::time::timeout(PEER_CALL_TIMEOUT, call).await {
            Ok(answer) => answer,
            Err(_) => Err(PeerError::Timeout { broker_id }),
        };
        if answer.is_err() {
            *slot = None;
        }
        answer
    }
}
