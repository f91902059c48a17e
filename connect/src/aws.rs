//! The AWS SDK's shared configuration, with the binary's TLS (rustls with ring).

/// Where an AWS client points: empty fields leave the SDK's standard chain (environment,
/// profile, instance metadata) to decide.
#[derive(Debug, Clone, Default)]
pub struct AwsSettings {
    pub region: Option<String>,
    pub profile: Option<String>,
    /// Another endpoint than AWS's (moto, MinIO, a VPC endpoint).
    pub endpoint: Option<String>,
}

/// A configuration loader with these settings and the ring TLS client; callers add what is
/// theirs (retries, credentials) and `load()` it.
pub fn loader(settings: &AwsSettings) -> aws_config::ConfigLoader {
    let http_client = aws_smithy_http_client::Builder::new()
        .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
            aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
        ))
        .build_https();
    let mut loader =
        aws_config::defaults(aws_config::BehaviorVersion::latest()).http_client(http_client);
    if let Some(region) = &settings.region {
        loader = loader.region(aws_config::Region::new(region.clone()));
    }
    if let Some(profile) = &settings.profile {
        loader = loader.profile_name(profile);
    }
    if let Some(endpoint) = &settings.endpoint {
        loader = loader.endpoint_url(endpoint);
    }
    loader
}
