//! The Kubernetes client's HTTP stack: kube's default stack, layer for layer, except that the
//! TLS connector offers HTTP/2 by ALPN as client-go does.
//!
//! kube 5 builds its client HTTP/1.1-only. Its connection pool then opens a connection for
//! each concurrent request that finds none idle, so a refresh or an apply at a concurrency of
//! 128 costs hundreds of TLS handshakes, each with a client-certificate signature on both
//! sides. Over HTTP/2 those requests share one connection.
//!
//! **Invariant:** every request is logged at debug level with the target of this module, the
//! message `requesting` and a span carrying its method and full URL (and, on the `stream
//! closed` line of its response, the HTTP version); tests and the Kubernetes benchmark count
//! requests from those lines.

use std::time::Duration;

use http::{HeaderMap, Request, Response};
use hyper::body::Incoming;
use hyper_rustls::FixedServerNameResolver;
use hyper_timeout::TimeoutConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kube::client::{Body, ConfigExt, RustlsTlsError, retry::RetryPolicy};
use rustls::pki_types::ServerName;
use tower::{BoxError, ServiceBuilder, ServiceExt, retry::RetryLayer};
use tower_http::{classify::ServerErrorsFailureClass, trace::TraceLayer};
use tracing::Span;

/// How often an otherwise idle HTTP/2 connection is pinged, and how long the answer may take
/// before the connection counts as dead: client-go's `ReadIdleTimeout` and `PingTimeout`. An
/// idle connection is pinged too, so that the read timeout never closes one a request is
/// about to use.
const PING_INTERVAL: Duration = Duration::from_secs(30);
const PING_TIMEOUT: Duration = Duration::from_secs(15);

/// The client for `config`, which names no proxy (kube's own stack handles those); with
/// `offer_http2` false it speaks HTTP/1.1 only, as kube's own stack does.
pub(super) fn client(config: kube::Config, offer_http2: bool) -> Result<kube::Client, kube::Error> {
    let mut tcp = HttpConnector::new();
    tcp.enforce_http(false);
    let mut tls = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config.rustls_client_config()?)
        .https_or_http();
    if let Some(name) = &config.tls_server_name {
        let name = ServerName::try_from(name.clone())
            .map_err(|e| kube::Error::RustlsTls(RustlsTlsError::InvalidServerName(e)))?;
        tls = tls.with_server_name_resolver(FixedServerNameResolver::new(name));
    }
    let tls = tls.enable_http1();
    let tls = if offer_http2 {
        tls.enable_http2().wrap_connector(tcp)
    } else {
        tls.wrap_connector(tcp)
    };
    let mut connector = TimeoutConnector::new(tls);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);

    let http: hyper_util::client::legacy::Client<_, Body> =
        hyper_util::client::legacy::Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .http2_keep_alive_interval(PING_INTERVAL)
            .http2_keep_alive_timeout(PING_TIMEOUT)
            .http2_keep_alive_while_idle(true)
            .build(connector);

    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(
            config
                .default_retry
                .then(|| RetryLayer::new(ServerRetry(RetryPolicy::server_retry()))),
        )
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .layer(
            // Attribute names of OpenTelemetry's HTTP semantic conventions, as kube names them.
            TraceLayer::new_for_http()
                .make_span_with(|req: &Request<Body>| {
                    tracing::debug_span!(
                        "HTTP",
                        http.method = %req.method(),
                        http.url = %req.uri(),
                        http.status_code = tracing::field::Empty,
                        network.protocol.version = tracing::field::Empty,
                        otel.name = req.extensions().get::<&'static str>().unwrap_or(&"HTTP"),
                        otel.kind = "client",
                        otel.status_code = tracing::field::Empty,
                    )
                })
                .on_request(|_: &Request<Body>, _: &Span| tracing::debug!("requesting"))
                .on_response(|res: &Response<Incoming>, _: Duration, span: &Span| {
                    let status = res.status();
                    span.record("http.status_code", status.as_u16());
                    span.record("network.protocol.version", protocol_version(res.version()));
                    if status.is_client_error() || status.is_server_error() {
                        span.record("otel.status_code", "ERROR");
                    }
                })
                .on_body_chunk(())
                .on_eos(|_: Option<&HeaderMap>, _: Duration, _: &Span| {
                    tracing::debug!("stream closed");
                })
                .on_failure(
                    |class: ServerErrorsFailureClass, _: Duration, span: &Span| {
                        span.record("otel.status_code", "ERROR");
                        match class {
                            ServerErrorsFailureClass::StatusCode(status) => {
                                span.record("http.status_code", status.as_u16());
                                tracing::error!("failed with status {status}");
                            }
                            ServerErrorsFailureClass::Error(error) => {
                                tracing::error!("failed with error {error}");
                            }
                        }
                    },
                ),
        )
        .map_err(BoxError::from)
        .service(http)
        .map_response(|response| {
            response.map(|body| http_body_util::BodyExt::map_err(body, BoxError::from))
        });
    Ok(kube::Client::new(service, config.default_namespace))
}

/// As OpenTelemetry's `network.protocol.version` writes it.
fn protocol_version(version: http::Version) -> &'static str {
    match version {
        http::Version::HTTP_09 => "0.9",
        http::Version::HTTP_10 => "1.0",
        http::Version::HTTP_11 => "1.1",
        http::Version::HTTP_2 => "2",
        http::Version::HTTP_3 => "3",
        _ => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::sync::{Arc, Mutex};

    use http_body_util::Full;
    use hyper::body::Bytes;
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;

    use super::super::{KubeSettings, client};

    const VERSION: &str = r#"{"major": "1", "minor": "36", "gitVersion": "v1.36.0",
        "gitCommit": "0", "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.26", "compiler": "gc", "platform": "linux/amd64"}"#;

    /// `kubectl proxy` and other plain-HTTP endpoints speak HTTP/1.1 only: offering HTTP/2
    /// happens in the TLS handshake, never by upgrading a cleartext connection.
    #[tokio::test]
    async fn a_cleartext_server_is_spoken_to_in_http_1_1() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            loop {
                let (tcp, _) = listener.accept().await.unwrap();
                let log = log.clone();
                let service = service_fn(move |request: http::Request<_>| {
                    log.lock().unwrap().push(request.version());
                    async {
                        Ok::<_, Infallible>(http::Response::new(Full::new(Bytes::from(VERSION))))
                    }
                });
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tcp), service),
                );
            }
        });
        let settings = KubeSettings {
            host: Some(format!("http://{address}")),
            ..KubeSettings::default()
        };
        let client = client(&settings).await.unwrap();
        let info = client.apiserver_version().await.unwrap();
        assert_eq!(info.git_version, "v1.36.0");
        assert_eq!(*seen.lock().unwrap(), [http::Version::HTTP_11]);
    }
}

/// kube's server retry (429, 503, 504), except for an eviction: its 429 is a
/// PodDisruptionBudget's refusal, which the drain asks again on its own schedule, as
/// `kubectl drain` does, instead of waiting out the transport's retries.
#[derive(Clone)]
struct ServerRetry(RetryPolicy);

fn is_eviction(req: &Request<Body>) -> bool {
    req.uri().path().ends_with("/eviction")
}

impl<Res> tower::retry::Policy<Request<Body>, Response<Res>, BoxError> for ServerRetry {
    type Future =
        <RetryPolicy as tower::retry::Policy<Request<Body>, Response<Res>, BoxError>>::Future;

    fn retry(
        &mut self,
        req: &mut Request<Body>,
        result: &mut Result<Response<Res>, BoxError>,
    ) -> Option<Self::Future> {
        if is_eviction(req) {
            return None;
        }
        self.0.retry(req, result)
    }

    fn clone_request(&mut self, req: &Request<Body>) -> Option<Request<Body>> {
        if is_eviction(req) {
            return None;
        }
        <RetryPolicy as tower::retry::Policy<Request<Body>, Response<Res>, BoxError>>::clone_request(
            &mut self.0,
            req,
        )
    }
}
