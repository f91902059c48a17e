//! The certificates a TLS server presents, for the tls provider's `data "tls_certificate"`:
//! `https://` (port 443 when none is given) and `tls://` (a port required), verified by the
//! platform's verifier unless `verify_chain = false`.

use std::sync::Arc;
use std::time::Duration;

/// Accepts any chain: `verify_chain = false` reads what the server sends, checking nothing.
#[derive(Debug)]
struct AnyChain(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyChain {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
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

/// Why a URL names no TLS server to read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    #[error("URL \"{url}\" has no scheme")]
    NoScheme { url: String },
    #[error("URL \"{url}\" has an invalid port")]
    InvalidPort { url: String },
    #[error("URL \"{url}\" contains no host")]
    NoHost { url: String },
    #[error("Port missing from URL: {url}")]
    NoPort { url: String },
}

/// Why a server's certificates were not read.
#[derive(Debug, thiserror::Error)]
pub enum PeerCertificatesError {
    #[error(transparent)]
    Address(#[from] AddressError),
    /// The TLS client could not be set up (its protocol versions, the platform's verifier).
    #[error(transparent)]
    Configuration(#[from] rustls::Error),
    #[error(transparent)]
    ServerName(#[from] rustls::pki_types::InvalidDnsNameError),
    /// The TCP connection or the TLS handshake failed.
    #[error("unable to execute TLS connection towards {host}:{port}")]
    Connect {
        host: String,
        port: u16,
        #[source]
        source: std::io::Error,
    },
    #[error("unable to execute TLS connection towards {host}:{port}: timed out after 30s")]
    Timeout { host: String, port: u16 },
    #[error("got back no certificates from URL '{url}'")]
    NoCertificates { url: String },
}

/// Host and port of an `https://` or `tls://` URL.
fn address(url: &str) -> Result<(String, u16), AddressError> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| AddressError::NoScheme {
            url: url.to_owned(),
        })?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => {
            let port: u16 = port.parse().map_err(|_| AddressError::InvalidPort {
                url: url.to_owned(),
            })?;
            (host, Some(port))
        }
        _ => (authority, None),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(AddressError::NoHost {
            url: url.to_owned(),
        });
    }
    let port = match (scheme, port) {
        (_, Some(port)) => port,
        ("https", None) => 443,
        _ => {
            return Err(AddressError::NoPort {
                url: url.to_owned(),
            });
        }
    };
    Ok((host.to_owned(), port))
}

/// The chain the server at `url` presents, in the order it sends it (leaf first).
pub async fn peer_certificates(
    url: &str,
    verify: bool,
) -> Result<Vec<Vec<u8>>, PeerCertificatesError> {
    gpustack_connect::install_ring();
    let (host, port) = address(url)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = if verify {
        rustls_platform_verifier::BuilderVerifierExt::with_platform_verifier(
            rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()?,
        )?
        .with_no_client_auth()
    } else {
        rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyChain(provider)))
            .with_no_client_auth()
    };
    let name = rustls::pki_types::ServerName::try_from(host.clone())?;
    let connect = async {
        let tcp = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
        let stream = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await?;
        let (_, connection) = stream.get_ref();
        Ok::<_, std::io::Error>(
            connection
                .peer_certificates()
                .unwrap_or_default()
                .iter()
                .map(|c| c.as_ref().to_vec())
                .collect::<Vec<_>>(),
        )
    };
    let chain = tokio::time::timeout(Duration::from_secs(30), connect)
        .await
        .map_err(|_| PeerCertificatesError::Timeout {
            host: host.clone(),
            port,
        })?
        .map_err(|source| PeerCertificatesError::Connect {
            host: host.clone(),
            port,
            source,
        })?;
    if chain.is_empty() {
        return Err(PeerCertificatesError::NoCertificates {
            url: url.to_owned(),
        });
    }
    Ok(chain)
}

#[cfg(test)]
mod tests {
    use super::{AddressError, address};

    #[test]
    fn https_defaults_to_443_and_tls_needs_a_port() {
        assert_eq!(
            address("https://example.com/x").unwrap(),
            ("example.com".into(), 443)
        );
        assert_eq!(
            address("tls://example.com:8443").unwrap(),
            ("example.com".into(), 8443)
        );
        assert_eq!(
            address("tls://example.com"),
            Err(AddressError::NoPort {
                url: "tls://example.com".into()
            })
        );
        assert_eq!(address("https://[::1]:9443").unwrap(), ("::1".into(), 9443));
    }
}
