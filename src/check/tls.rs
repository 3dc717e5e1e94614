//! SSL_GET's TLS: keepalived's client context (no certificate verified,
//! the `SSL` block's client certificate if any) and, with the extension
//! `ca_file`, one that verifies the server's chain (and, with
//! `verify_hostname`, its name). Used by [`super::http`] for the
//! handshake, and by genhash.

use super::conn::{ConnOpts, Failure};
use crate::config::model::SslBlock;
use std::io;
use std::sync::Arc;

/// TLS settings for SSL_GET: keepalived's defaults (no verification) and
/// the optional client certificate of the top-level `SSL` block; or, with
/// the extension `ca_file`, the server's certificate verified.
#[derive(Debug, Clone)]
pub struct Tls {
    config: Arc<rustls::ClientConfig>,
    /// `ca_file` and `verify_hostname` given, `enable_sni`: what sets this
    /// context apart from keepalived's.
    verify: Option<(String, bool, bool)>,
}

// keepalived's context serves every SSL_GET of a configuration (the SSL
// block is global), so two checks differ only by the extension's
// verification: SSL_GET against HTTP_GET is `Option<Tls>`'s Some against
// None.
impl PartialEq for Tls {
    fn eq(&self, o: &Self) -> bool {
        self.verify == o.verify
    }
}

impl Eq for Tls {}

impl std::hash::Hash for Tls {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.verify.hash(h);
    }
}

/// The extension's verification: the chain against `ca_file`, and the
/// name only when asked (`verify_hostname`).
#[derive(Debug)]
struct VerifyChain {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
    check_name: bool,
}

impl rustls::client::danger::ServerCertVerifier for VerifyChain {
    fn verify_server_cert(
        &self,
        end_entity: &rustls::pki_types::CertificateDer<'_>,
        intermediates: &[rustls::pki_types::CertificateDer<'_>],
        server_name: &rustls::pki_types::ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        use rustls::{CertificateError, Error};
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.check_name => Ok(rustls::client::danger::ServerCertVerified::assertion()),
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// keepalived never sets a verify mode: any certificate is accepted.
#[derive(Debug)]
struct AcceptAny(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Why the `SSL` block could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A certificate or key file could not be read.
    #[error("SSL: cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: io::Error,
    },
    /// The file held no usable key.
    #[error("SSL: no private key in {0}")]
    NoKey(String),
    /// rustls refused the settings.
    #[error("SSL: {0}")]
    Rustls(#[from] rustls::Error),
    /// `ca_file` held no usable CA certificate.
    #[error("SSL_GET ca_file {0}: no usable CA certificate")]
    NoCa(String),
}

impl Tls {
    /// The client context: keepalived's `TLS_method()` with no verification;
    /// a client certificate when the `SSL` block names one.
    pub fn new(block: Option<&SslBlock>) -> Result<Tls, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        Self::with_verifier(block, Arc::new(AcceptAny(provider.clone())), provider, None)
    }

    /// The context of an SSL_GET with `ca_file` (extension): the server's
    /// chain must lead to one of its CAs, and with `check_name` the
    /// certificate must be for the name the check connects with
    /// ([`HttpProbe::verify_name`]). `enable_sni` as the checker says.
    pub fn verifying(
        block: Option<&SslBlock>,
        ca_file: &str,
        check_name: bool,
        enable_sni: bool,
    ) -> Result<Tls, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let pem = std::fs::read(ca_file).map_err(|source| TlsError::Read {
            path: ca_file.to_string(),
            source,
        })?;
        let mut roots = rustls::RootCertStore::empty();
        for c in rustls_pemfile::certs(&mut &pem[..]) {
            let c = c.map_err(|source| TlsError::Read {
                path: ca_file.to_string(),
                source,
            })?;
            // A certificate that is not a CA is left out; none left is an
            // error below.
            let _ = roots.add(c);
        }
        if roots.is_empty() {
            return Err(TlsError::NoCa(ca_file.to_string()));
        }
        let inner = rustls::client::WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .build()
        .map_err(|e| TlsError::Rustls(rustls::Error::General(e.to_string())))?;
        let mut t = Self::with_verifier(
            block,
            Arc::new(VerifyChain { inner, check_name }),
            provider,
            Some((ca_file.to_string(), check_name, enable_sni)),
        )?;
        Arc::make_mut(&mut t.config).enable_sni = enable_sni;
        Ok(t)
    }

    fn with_verifier(
        block: Option<&SslBlock>,
        verifier: Arc<dyn rustls::client::danger::ServerCertVerifier>,
        provider: Arc<rustls::crypto::CryptoProvider>,
        verify: Option<(String, bool, bool)>,
    ) -> Result<Tls, TlsError> {
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let read = |path: &str| {
            std::fs::read(path).map_err(|source| TlsError::Read {
                path: path.to_string(),
                source,
            })
        };
        let config = match block.and_then(|b| b.certificate.as_deref().map(|c| (b, c))) {
            Some((b, cert_path)) => {
                let certs: Vec<_> = rustls_pemfile::certs(&mut &read(cert_path)?[..])
                    .collect::<Result<_, _>>()
                    .map_err(|source| TlsError::Read {
                        path: cert_path.to_string(),
                        source,
                    })?;
                let key_path = b.key.as_deref().unwrap_or(cert_path);
                let key = rustls_pemfile::private_key(&mut &read(key_path)?[..])
                    .map_err(|source| TlsError::Read {
                        path: key_path.to_string(),
                        source,
                    })?
                    .ok_or_else(|| TlsError::NoKey(key_path.to_string()))?;
                builder.with_client_auth_cert(certs, key)?
            }
            None => builder.with_no_client_auth(),
        };
        Ok(Tls {
            config: Arc::new(config),
            verify,
        })
    }

    /// The handshake, within `timeout`; `sni` is sent when set.
    pub async fn connect(
        &self,
        tcp: tokio::net::TcpStream,
        sni: Option<&str>,
        conn: &ConnOpts,
    ) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, Failure> {
        use rustls::pki_types::ServerName;
        // An IP address as server name sends no SNI extension.
        let name = sni
            .and_then(|s| ServerName::try_from(s.to_string()).ok())
            .unwrap_or(ServerName::IpAddress(conn.dst.ip().into()));
        let connector = tokio_rustls::TlsConnector::from(self.config.clone());
        match tokio::time::timeout(conn.timeout(), connector.connect(name, tcp)).await {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err(Failure::Protocol(format!("SSL handshake failed: {e}"))),
            Err(_) => Err(Failure::Timeout("SSL handshake")),
        }
    }
}
