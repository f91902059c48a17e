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

/// Host and port of an `https://` or `tls://` URL.
fn address(url: &str) -> Result<(String, u16), String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("URL \"{url}\" has no scheme"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => {
            let port: u16 = port
                .parse()
                .map_err(|_| format!("URL \"{url}\" has an invalid port"))?;
            (host, Some(port))
        }
        _ => (authority, None),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(format!("URL \"{url}\" contains no host"));
    }
    let port = match (scheme, port) {
        (_, Some(port)) => port,
        ("https", None) => 443,
        _ => return Err(format!("Port missing from URL: {url}")),
    };
    Ok((host.to_owned(), port))
}

/// The chain the server at `url` presents, in the order it sends it (leaf first).
pub async fn peer_certificates(url: &str, verify: bool) -> Result<Vec<Vec<u8>>, String> {
    gpustack_connect::install_ring();
    let (host, port) = address(url)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = if verify {
        rustls_platform_verifier::BuilderVerifierExt::with_platform_verifier(
            rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
    } else {
        rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyChain(provider)))
            .with_no_client_auth()
    };
    let name = rustls::pki_types::ServerName::try_from(host.clone()).map_err(|e| e.to_string())?;
    let connect = async {
        let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
            .await
            .map_err(|e| e.to_string())?;
        let stream = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
            .map_err(|e| e.to_string())?;
        let (_, connection) = stream.get_ref();
        Ok::<_, String>(
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
        .map_err(|_| {
            format!("unable to execute TLS connection towards {host}:{port}: timed out after 30s")
        })?
        .map_err(|e| format!("unable to execute TLS connection towards {host}:{port}: {e}"))?;
    if chain.is_empty() {
        return Err(format!("got back no certificates from URL '{url}'"));
    }
    Ok(chain)
}

#[cfg(test)]
mod tests {
    use super::address;

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
        assert!(
            address("tls://example.com")
                .unwrap_err()
                .contains("Port missing")
        );
        assert_eq!(address("https://[::1]:9443").unwrap(), ("::1".into(), 9443));
    }
}
