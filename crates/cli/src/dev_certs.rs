//! `seglog serve --generate-dev-certs DIR`: a CA, a server certificate for localhost and a
//! client certificate, as PEM files, for local TLS and mTLS (made with `rcgen`). Never for
//! production: the keys are unencrypted and the CA signs whatever this machine asks.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
};

/// The files written, for the caller to print.
#[derive(Debug)]
pub(crate) struct DevCerts {
    pub(crate) ca: PathBuf,
    pub(crate) server_keystore: PathBuf,
    pub(crate) client_certificate: PathBuf,
    pub(crate) client_key: PathBuf,
    pub(crate) properties: PathBuf,
}

fn name(common_name: &str) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::OrganizationName, "seglog development");
    name.push(DnType::CommonName, common_name);
    name
}

fn write(path: &Path, text: &str, secret: bool) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    if secret {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("cannot make {} private", path.display()))?;
    }
    Ok(())
}

/// Writes `ca.pem`, `server.pem` (key and chain, a Kafka PEM keystore), `client.crt`,
/// `client.key` and `secure.properties` into `dir` (created if needed).
pub(crate) fn generate(dir: &Path) -> Result<DevCerts> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let dir = dir.canonicalize().with_context(|| format!("cannot resolve {}", dir.display()))?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).context("CA parameters")?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name = name("seglog development CA");
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca_key = KeyPair::generate().context("CA key")?;
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key).context("CA certificate")?;

    let hosts = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
    let mut server_params = CertificateParams::new(hosts).context("server parameters")?;
    server_params.distinguished_name = name("localhost");
    // Client use too: a broker presents its keystore to the others (the quorum's mutual TLS,
    // an SSL inter-broker listener).
    server_params.extended_key_usages =
        vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth];
    server_params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    let server_key = KeyPair::generate().context("server key")?;
    let server = server_params.signed_by(&server_key, &ca).context("server certificate")?;

    let mut client_params = CertificateParams::new(Vec::<String>::new()).context("client")?;
    client_params.distinguished_name = name("seglog-client");
    client_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    client_params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    let client_key = KeyPair::generate().context("client key")?;
    let client = client_params.signed_by(&client_key, &ca).context("client certificate")?;

    let certs = DevCerts {
        ca: dir.join("ca.pem"),
        server_keystore: dir.join("server.pem"),
        client_certificate: dir.join("client.crt"),
        client_key: dir.join("client.key"),
        properties: dir.join("secure.properties"),
    };
    write(&certs.ca, &ca.pem(), false)?;
    let keystore = format!("{}{}{}", server_key.serialize_pem(), server.pem(), ca.pem());
    write(&certs.server_keystore, &keystore, true)?;
    write(&certs.client_certificate, &client.pem(), false)?;
    write(&certs.client_key, &client_key.serialize_pem(), true)?;
    let properties = format!(
        "# Written by `seglog serve --generate-dev-certs`: TLS on 9093 (client certificates\n\
         # required; the principal is the certificate's CN), SASL_SSL with SCRAM on 9094, ACLs\n\
         # on, User:admin a super user. Development only: the keys are not encrypted.\n\
         listeners=SSL://127.0.0.1:9093,SASL_SSL://127.0.0.1:9094\n\
         ssl.keystore.type=PEM\n\
         ssl.keystore.location={keystore}\n\
         ssl.truststore.type=PEM\n\
         ssl.truststore.location={ca}\n\
         listener.name.ssl.ssl.client.auth=required\n\
         ssl.principal.mapping.rules=RULE:^.*CN=([^,]+).*$/$1/,DEFAULT\n\
         sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512\n\
         authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n\
         super.users=User:admin\n",
        keystore = certs.server_keystore.display(),
        ca = certs.ca.display(),
    );
    write(&certs.properties, &properties, false)?;
    Ok(certs)
}
