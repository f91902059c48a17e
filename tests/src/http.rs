//! What the test world's HTTP fakes share: an HTTP/1 server on its own thread and runtime,
//! over TLS when an acceptor is given, and the answers they build.

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use serde_json::Value as Json;
use std::future::Future;

/// An answer, or an error that makes the server close the connection without one (a fault).
pub type Answer = Result<Response<Full<Bytes>>, std::io::Error>;

/// Serves `listener` on a thread of its own. `setup` runs once on the server's runtime and
/// returns the handler of every request.
pub fn serve<S, SF, H, HF>(
    listener: std::net::TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    setup: S,
) where
    S: FnOnce() -> SF + Send + 'static,
    SF: Future<Output = H>,
    H: Fn(Request<Incoming>) -> HF + Clone + Send + Sync + 'static,
    HF: Future<Output = Answer> + Send + 'static,
{
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let handler = setup().await;
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let (handler, tls) = (handler.clone(), tls.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(handler);
                    let http = hyper::server::conn::http1::Builder::new();
                    let _ = match tls {
                        Some(acceptor) => match acceptor.accept(tcp).await {
                            Ok(stream) => {
                                http.serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                                    .await
                            }
                            Err(_) => return,
                        },
                        None => {
                            http.serve_connection(hyper_util::rt::TokioIo::new(tcp), service)
                                .await
                        }
                    };
                });
            }
        });
    });
}

/// The connection closes without an answer.
pub fn dropped() -> Answer {
    Err(std::io::Error::new(
        std::io::ErrorKind::ConnectionAborted,
        "fault: connection dropped",
    ))
}

pub fn json_response(
    status: StatusCode,
    body: &Json,
    headers: &[(&str, String)],
) -> Response<Full<Bytes>> {
    let mut response = Response::builder()
        .status(status)
        .header("content-type", "application/json");
    for (name, value) in headers {
        response = response.header(*name, value);
    }
    response
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}
