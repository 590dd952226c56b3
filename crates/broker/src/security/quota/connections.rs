//! The per-IP connection limits (the `max.connections.per.ip` part of Kafka's
//! `ConnectionQuotas` in `SocketServer`): a count per client address, with overrides.

#![cfg_attr(
    not(test),
    allow(
        dead_code,
        reason = "Kafka's ConnectionQuotas whole: the dynamic updates serve the tests"
    )
)]

#[allow(clippy::wildcard_imports, reason = "the parent module's errors and constants")]
use super::*;

/// Kafka's `TooManyConnectionsException`: the per-IP connection limit is reached.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("too many connections from {ip} (maximum = {max})")]
pub(crate) struct TooManyConnections {
    /// The client's address.
    pub(crate) ip: IpAddr,
    /// The limit for that address.
    pub(crate) max: u32,
}

#[derive(Debug)]
struct ConnectionCounts {
    max_per_ip: u32,
    overrides: BTreeMap<IpAddr, u32>,
    counts: HashMap<IpAddr, u32>,
}

/// Kafka's `ConnectionQuotas` (the per-IP part): counts the open connections of each client
/// address against `max.connections.per.ip` and its overrides. Thread-safe; an address is
/// forgotten when its last connection closes.
#[derive(Debug)]
pub(crate) struct ConnectionQuotas {
    state: Mutex<ConnectionCounts>,
}

/// Canonical form, so that an IPv4 client on a dual-stack listener (`::ffff:a.b.c.d`) counts as
/// its IPv4 address, as Java's `InetAddress` has it.
fn canonical(ip: IpAddr) -> IpAddr {
    ip.to_canonical()
}

impl ConnectionQuotas {
    /// Limits of `max_per_ip` per address, `overrides` for some addresses.
    pub(crate) fn new(max_per_ip: u32, overrides: BTreeMap<IpAddr, u32>) -> Self {
        Self {
            state: Mutex::new(ConnectionCounts {
                max_per_ip,
                overrides: overrides.into_iter().map(|(ip, n)| (canonical(ip), n)).collect(),
                counts: HashMap::new(),
            }),
        }
    }

    /// Parses `max.connections.per.ip.overrides` as Kafka's `Csv.parseCsvMap`: comma-separated
    /// `host:count`, split at the last colon (so `::1:10` is `::1` -> 10). Hosts must be IP
    /// literals: Kafka resolves host names, this broker does not and refuses them.
    pub(crate) fn parse_overrides(value: &str) -> Result<BTreeMap<IpAddr, u32>, QuotaError> {
        let mut out = BTreeMap::new();
        let mut entries: Vec<&str> = value.split(',').map(str::trim).collect();
        // Java's String.split drops trailing empty strings.
        while entries.last().is_some_and(|e| e.is_empty()) {
            entries.pop();
        }
        for entry in entries {
            let invalid =
                |reason| QuotaError::InvalidConnectionsOverride { entry: entry.to_owned(), reason };
            let Some((host, count)) = entry.rsplit_once(':') else {
                return Err(invalid("expected host:count"));
            };
            let (host, count) = (host.trim(), count.trim());
            let count = count
                .parse::<i32>()
                .map_err(|_| invalid("the count is not an integer"))
                .and_then(|n| u32::try_from(n).map_err(|_| invalid("the count is negative")))?;
            let Ok(ip) = host.parse::<IpAddr>() else {
                let host_chars =
                    host.chars().all(|ch| ch.is_ascii_alphanumeric() || "-%._:".contains(ch));
                return Err(if host_chars && !host.is_empty() {
                    QuotaError::HostnameOverride { host: host.to_owned() }
                } else {
                    invalid("the host is not a valid address")
                });
            };
            out.insert(canonical(ip), count);
        }
        Ok(out)
    }

    /// Kafka's `KafkaConfig` check: a zero default needs overrides.
    pub(crate) fn validate_config(
        max_per_ip: u32,
        overrides: &BTreeMap<IpAddr, u32>,
    ) -> Result<(), QuotaError> {
        if max_per_ip == 0 && overrides.is_empty() {
            return Err(QuotaError::ZeroMaxConnectionsWithoutOverrides);
        }
        Ok(())
    }

    fn lock(&self) -> MutexGuard<'_, ConnectionCounts> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Kafka's `updateMaxConnectionsPerIp` (open connections above a lowered limit stay).
    pub(crate) fn update_max_connections_per_ip(&self, max_per_ip: u32) {
        self.lock().max_per_ip = max_per_ip;
    }

    /// Kafka's `updateMaxConnectionsPerIpOverride`.
    pub(crate) fn update_overrides(&self, overrides: BTreeMap<IpAddr, u32>) {
        self.lock().overrides = overrides.into_iter().map(|(ip, n)| (canonical(ip), n)).collect();
    }

    /// The limit for an address.
    pub(crate) fn max_connections(&self, ip: IpAddr) -> u32 {
        let state = self.lock();
        state.overrides.get(&canonical(ip)).copied().unwrap_or(state.max_per_ip)
    }

    /// Kafka's `inc` (per-IP part): takes a connection slot for `ip`, released when the permit
    /// drops. Unlike Kafka, a refused connection is not counted (Kafka counts it until the
    /// refused socket is closed and `dec` runs).
    pub(crate) fn try_acquire(
        self: &Arc<Self>,
        ip: IpAddr,
    ) -> Result<ConnectionPermit, TooManyConnections> {
        let ip = canonical(ip);
        let mut state = self.lock();
        let max = state.overrides.get(&ip).copied().unwrap_or(state.max_per_ip);
        let count = state.counts.get(&ip).copied().unwrap_or(0);
        if count >= max {
            return Err(TooManyConnections { ip, max });
        }
        state.counts.insert(ip, count + 1);
        drop(state);
        Ok(ConnectionPermit { quotas: Arc::clone(self), ip })
    }

    /// Kafka's `get`: the open connections of `ip`.
    pub(crate) fn get(&self, ip: IpAddr) -> u32 {
        self.lock().counts.get(&canonical(ip)).copied().unwrap_or(0)
    }

    /// How many addresses have open connections.
    pub(crate) fn tracked_ips(&self) -> usize {
        self.lock().counts.len()
    }

    /// Kafka's `dec` (per-IP part).
    fn release(&self, ip: IpAddr) {
        let mut state = self.lock();
        if let Some(count) = state.counts.get_mut(&ip) {
            if *count <= 1 {
                state.counts.remove(&ip);
            } else {
                *count -= 1;
            }
        }
    }
}

/// One open connection's slot in [`ConnectionQuotas`]; dropping it releases the slot.
pub(crate) struct ConnectionPermit {
    quotas: Arc<ConnectionQuotas>,
    ip: IpAddr,
}

impl ConnectionPermit {
    /// The (canonical) address the slot is counted under.
    pub(crate) fn ip(&self) -> IpAddr {
        self.ip
    }
}

impl fmt::Debug for ConnectionPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionPermit").field("ip", &self.ip).finish_non_exhaustive()
    }
}

impl Drop for ConnectionPermit {
    fn drop(&mut self) {
        self.quotas.release(self.ip);
    }
}
