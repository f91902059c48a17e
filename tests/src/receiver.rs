//! A webhook receiver for tests: a small HTTP server on 127.0.0.1 that keeps what it got.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// An HTTP server that answers every request with `status` and keeps the bodies it got.
pub struct Receiver {
    pub url: String,
    pub bodies: Arc<Mutex<Vec<serde_json::Value>>>,
    pub status: Arc<Mutex<u16>>,
}

pub fn receiver() -> Receiver {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://{}/hooks/secret-token",
        listener.local_addr().unwrap()
    );
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let status = Arc::new(Mutex::new(200u16));
    let (b, s) = (bodies.clone(), status.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line == "\r\n" || line.is_empty() {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let code = *s.lock().unwrap();
            if code == 200 {
                b.lock()
                    .unwrap()
                    .push(serde_json::from_slice(&body).unwrap());
            }
            write!(
                stream,
                "HTTP/1.1 {code} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            )
            .unwrap();
        }
    });
    Receiver {
        url,
        bodies,
        status,
    }
}
