//! How gpustack reaches what it manages, in one place for providers and state backends alike:
//! a Kubernetes client from the settings kubectl reads (`kubernetes`), the AWS SDK's shared
//! configuration (`aws`), and the one TLS implementation of the binary ([`install_ring`]).
//!
//! **Invariant:** every TLS client in the binary uses rustls with ring, so that no second
//! crypto library (aws-lc-rs, OpenSSL) is linked: the SDKs' TLS defaults are off in the
//! workspace manifest, and every client that builds its own TLS configuration calls
//! [`install_ring`] first.

#[cfg(feature = "aws")]
pub mod aws;
#[cfg(feature = "kubernetes")]
pub mod kubernetes;

/// Makes rustls with ring the process default (once; later calls do nothing).
pub fn install_ring() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
