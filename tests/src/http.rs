//! What the test world's HTTP fakes share: an HTTP/1 server on its own thread and runtime,
//! over TLS when an acceptor is given, and the answers they build.

use http_body_util::Full;
use hyper::Method;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use serde_json::Value as Json;
use std::collections::VecDeque;
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

/// A fault the fake answers the next matching request with.
#[derive(Debug, Clone)]
pub enum Fault {
    /// 429 with `Retry-After` seconds.
    Throttle(u64),
    /// 500 InternalServerError.
    ServerError,
    /// 409 OperationNotAllowed: another operation on the pool is running.
    Busy,
    /// The connection is closed before the request is looked at.
    Drop,
    /// The request is carried out, then the connection is closed without an answer.
    LoseAnswer,
    /// The request is carried out, and the answer is held back for a minute: the client
    /// waits, and a test kills it meanwhile (a crash between a create and its record).
    Hang,
}

/// How long a [`Fault::Hang`] holds an answer back.
pub const HANG: std::time::Duration = std::time::Duration::from_secs(60);

/// What reached a fake's API, and the faults queued for it.
#[derive(Default)]
pub struct Traffic {
    faults: VecDeque<(Method, Fault)>,
    log: Vec<String>,
}

impl Traffic {
    /// Queues faults for the next requests with `method`.
    pub fn inject(&mut self, method: &Method, faults: &[Fault]) {
        self.faults
            .extend(faults.iter().map(|f| (method.clone(), f.clone())));
    }

    /// "METHOD path" of the requests so far.
    pub fn log(&self) -> Vec<String> {
        self.log.clone()
    }

    /// Logs a request and takes the first fault queued for its method.
    pub fn record(&mut self, method: &Method, path: &str) -> Option<Fault> {
        self.log.push(format!("{method} {path}"));
        let index = self.faults.iter().position(|(m, _)| m == method)?;
        self.faults.remove(index).map(|(_, f)| f)
    }
}
