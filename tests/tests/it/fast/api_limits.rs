//! The API server's priority-and-fairness limits: a request answered 429 with Retry-After is
//! sent again after the time the server asked for, by the client every provider and backend
//! gets from `gpustack_connect::kubernetes::client`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Answers the first request 429 (Retry-After: 2 s, as kube-apiserver's APF does) and every
/// later one with a Namespace; counts requests.
async fn throttling_server() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(AtomicUsize::new(0));
    let counted = requests.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let counted = counted.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buffer = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buffer).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buffer[..n]),
                    }
                }
                let (status, extra, body) = if counted.fetch_add(1, Ordering::SeqCst) == 0 {
                    (
                        "429 Too Many Requests",
                        "Retry-After: 2\r\n",
                        r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"Too many requests, please try again later.","reason":"TooManyRequests","details":{"retryAfterSeconds":2},"code":429}"#,
                    )
                } else {
                    (
                        "200 OK",
                        "",
                        r#"{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"gpu-operator"}}"#,
                    )
                };
                let response = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
            });
        }
    });
    (address, requests)
}

#[tokio::test]
async fn a_request_the_api_server_throttles_is_sent_again_after_its_retry_after() {
    let (host, requests) = throttling_server().await;
    let client =
        gpustack_connect::kubernetes::client(&gpustack_connect::kubernetes::KubeSettings {
            host: Some(host),
            token: Some("token".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client);
    let started = Instant::now();
    let namespace = namespaces.get("gpu-operator").await.unwrap();
    assert_eq!(namespace.metadata.name.as_deref(), Some("gpu-operator"));
    assert_eq!(requests.load(Ordering::SeqCst), 2);
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "sent again after {:?}, before the 2 s the server asked for",
        started.elapsed()
    );
}
