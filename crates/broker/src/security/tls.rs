//! TLS for SSL and SASL_SSL listeners (Kafka's `SslFactory` and `DefaultSslEngineFactory`, on
//! `rustls` with `ring`): PEM keystores and truststores, `ssl.client.auth`, the client
//! certificate's principal, and a reload of the key and trust files when they change, without a
//! restart (Kafka reloads them on a dynamic config update).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::SystemTime;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::pki_types::{ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig,
    SignatureScheme,
};

use crate::config::security::{ClientAuth, PemSource, TlsConfig};

/// Why a listener's TLS settings could not be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsError {
    /// A key or trust file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The PEM text holds no certificate, no key, or something unreadable.
    #[error("{what}: {reason}")]
    Pem { what: String, reason: String },
    /// rustls refused the key, the certificates or the protocol versions.
    #[error("{what}: {source}")]
    Rustls {
        what: String,
        #[source]
        source: rustls::Error,
    },
    /// The truststore could not make a client-certificate verifier.
    #[error("{what}: {reason}")]
    Verifier { what: String, reason: String },
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read { path: path.to_owned(), source })
}

/// Where PEM text came from (for errors), the certificates' PEM and the key's PEM.
type PemText = (String, Vec<u8>, Option<Vec<u8>>);

fn source_text(source: &PemSource) -> Result<PemText, TlsError> {
    match source {
        PemSource::File(path) => {
            let bytes = read(path)?;
            Ok((path.display().to_string(), bytes.clone(), Some(bytes)))
        }
        PemSource::Inline { certificates, key } => Ok((
            "the inline PEM configuration".to_owned(),
            certificates.as_bytes().to_vec(),
            key.as_ref().map(|key| key.expose().as_bytes().to_vec()),
        )),
    }
}

fn certificates(what: &str, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<_, _>>()
        .map_err(|error| TlsError::Pem { what: what.to_owned(), reason: error.to_string() })?;
    if certs.is_empty() {
        return Err(TlsError::Pem {
            what: what.to_owned(),
            reason: "no certificate (-----BEGIN CERTIFICATE-----) in it".to_owned(),
        });
    }
    Ok(certs)
}

fn private_key(what: &str, pem: &[u8]) -> Result<PrivateKeyDer<'static>, TlsError> {
    if pem.windows(29).any(|w| w == b"BEGIN ENCRYPTED PRIVATE KEY--") {
        return Err(TlsError::Pem {
            what: what.to_owned(),
            reason: "the private key is encrypted; seglog needs an unencrypted PKCS#8 key \
                     (openssl pkcs8 -topk8 -nocrypt) in a file only the broker can read"
                .to_owned(),
        });
    }
    PrivateKeyDer::from_pem_slice(pem).map_err(|error| TlsError::Pem {
        what: what.to_owned(),
        reason: format!("no usable private key (PKCS#8, PKCS#1 or SEC1 PEM): {error}"),
    })
}

/// The keystore's certificate chain and key, with where they came from.
fn keystore(
    config: &TlsConfig,
) -> Result<(String, Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), TlsError> {
    let (what, cert_pem, key_pem) = source_text(&config.keystore)?;
    let what = format!("keystore {what}");
    let chain = certificates(&what, &cert_pem)?;
    let key = private_key(&what, key_pem.as_deref().unwrap_or_default())?;
    Ok((what, chain, key))
}

/// `ssl.enabled.protocols` as rustls's versions.
fn versions(config: &TlsConfig) -> Vec<&'static rustls::SupportedProtocolVersion> {
    let mut versions = Vec::new();
    if config.enabled_protocols.iter().any(|p| p == "TLSv1.3") {
        versions.push(&rustls::version::TLS13);
    }
    if config.enabled_protocols.iter().any(|p| p == "TLSv1.2") {
        versions.push(&rustls::version::TLS12);
    }
    versions
}

/// The truststore's certificates as roots, with where they came from.
fn roots(truststore: &PemSource) -> Result<(String, RootCertStore), TlsError> {
    let (what, pem, _) = source_text(truststore)?;
    let what = format!("truststore {what}");
    let mut roots = RootCertStore::empty();
    for cert in certificates(&what, &pem)? {
        roots.add(cert).map_err(|source| TlsError::Rustls { what: what.clone(), source })?;
    }
    Ok((what, roots))
}

/// Builds the rustls configuration of a listener from its settings, reading its files.
pub(crate) fn server_config(config: &TlsConfig) -> Result<ServerConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let (what, chain, key) = keystore(config)?;
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&versions(config))
        .map_err(|source| TlsError::Rustls { what: "ssl.enabled.protocols".to_owned(), source })?;
    let builder = match (&config.truststore, config.client_auth) {
        (Some(truststore), ClientAuth::Requested | ClientAuth::Required) => {
            let (what, roots) = roots(truststore)?;
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if config.client_auth == ClientAuth::Requested {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier
                .build()
                .map_err(|error| TlsError::Verifier { what, reason: error.to_string() })?;
            builder.with_client_cert_verifier(verifier)
        }
        _ => builder.with_no_client_auth(),
    };
    builder.with_single_cert(chain, key).map_err(|source| TlsError::Rustls { what, source })
}

/// Builds the rustls configuration of this broker as a client of a listener (Kafka's
/// `SslFactory` in client mode): the truststore verifies the server, the host name too unless
/// `ssl.endpoint.identification.algorithm` is empty, and the keystore is the client
/// certificate for a server that asks for one.
pub(crate) fn client_config(config: &TlsConfig) -> Result<ClientConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let Some(truststore) = &config.truststore else {
        return Err(TlsError::Pem {
            what: "the client side of the listener".to_owned(),
            reason: "no truststore (ssl.truststore.location or ssl.truststore.certificates) to \
                     verify the server with"
                .to_owned(),
        });
    };
    let (what, roots) = roots(truststore)?;
    let verifier =
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
            .build()
            .map_err(|error| TlsError::Verifier { what, reason: error.to_string() })?;
    let verifier: Arc<dyn ServerCertVerifier> =
        if config.endpoint_identification { verifier } else { Arc::new(AnyHostName(verifier)) };
    let (what, chain, key) = keystore(config)?;
    ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions(config))
        .map_err(|source| TlsError::Rustls { what: "ssl.enabled.protocols".to_owned(), source })?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_client_auth_cert(chain, key)
        .map_err(|source| TlsError::Rustls { what, source })
}

/// A server verifier that checks the chain, the signatures and the validity, but not the host
/// name (`ssl.endpoint.identification.algorithm=`, as Kafka allows).
#[derive(Debug)]
struct AnyHostName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyHostName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The files a listener's TLS reads, with when each last changed.
fn stamps(config: &TlsConfig) -> Vec<(PathBuf, Option<SystemTime>)> {
    [Some(&config.keystore), config.truststore.as_ref()]
        .into_iter()
        .flatten()
        .filter_map(|source| match source {
            PemSource::File(path) => Some(path.clone()),
            PemSource::Inline { .. } => None,
        })
        .map(|path| {
            let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
            (path, modified)
        })
        .collect()
}

/// A listener's TLS acceptor whose configuration is replaced when its files change (Kafka's
/// `SslFactory.reconfigure`): connections accepted after a reload use the new key and trust,
/// open ones keep theirs.
#[derive(Debug)]
pub(crate) struct ReloadingTls {
    config: TlsConfig,
    current: RwLock<Arc<ServerConfig>>,
    stamps: Mutex<Vec<(PathBuf, Option<SystemTime>)>>,
}

impl ReloadingTls {
    pub(crate) fn new(config: TlsConfig) -> Result<Self, TlsError> {
        let stamps = stamps(&config);
        let current = Arc::new(server_config(&config)?);
        Ok(Self { config, current: RwLock::new(current), stamps: Mutex::new(stamps) })
    }

    /// The acceptor for the next connection.
    pub(crate) fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        let config = Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner));
        tokio_rustls::TlsAcceptor::from(config)
    }

    /// Rebuilds the configuration when a file changed. `Ok(true)` after a reload; an error
    /// keeps the old configuration (a half-written new key must not stop new connections).
    pub(crate) fn reload_if_changed(&self) -> Result<bool, TlsError> {
        let now = stamps(&self.config);
        let mut seen = self.stamps.lock().unwrap_or_else(PoisonError::into_inner);
        if *seen == now {
            return Ok(false);
        }
        let config = server_config(&self.config)?;
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(config);
        *seen = now;
        Ok(true)
    }
}
