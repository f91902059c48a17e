//! An HTTP proxy that injects faults in front of a test-world API (moto, the cloud fakes):
//! answers 429 with Retry-After, answers 500, drops the connection, or forwards the request
//! and then loses the answer (the write happened; the client cannot know). Each request is
//! forwarded on a connection of its own, answered with `Connection: close`.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Forwarded as it is: lets matching requests through before the plan's faults.
    Pass,
    /// 429 Too Many Requests with `Retry-After: 1`.
    Throttle,
    /// 500 Internal Server Error, the request not forwarded.
    ServerError,
    /// The connection closed before any answer.
    Drop,
    /// Forwarded, then the answer replaced by a 500: the write happened.
    LoseAnswer,
    /// Forwarded, then the answer held back for a minute: the client waits, and a test kills
    /// it meanwhile (a crash between a create and its record).
    Hang,
}

/// Faults for the requests whose request line contains `matching`, in order, one per request.
pub struct FaultPlan {
    pub matching: String,
    pub faults: VecDeque<Fault>,
}

/// The request lines a proxy saw, each with the fault it injected (if any).
pub type Log = Arc<Mutex<Vec<(String, Option<Fault>)>>>;

pub struct FaultProxy {
    pub endpoint: String,
    pub log: Log,
}

impl FaultProxy {
    /// Proxies to `upstream` (`http://127.0.0.1:PORT`).
    pub fn start(upstream: &str, plan: FaultPlan) -> Self {
        let upstream = upstream
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fault proxy");
        let endpoint = format!("http://{}", listener.local_addr().expect("proxy address"));
        let log = Arc::new(Mutex::new(Vec::new()));
        let plan = Arc::new(Mutex::new(plan));
        let seen = log.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (upstream, plan, seen) = (upstream.clone(), plan.clone(), seen.clone());
                std::thread::spawn(move || {
                    let _ = serve(stream, &upstream, &plan, &seen);
                });
            }
        });
        FaultProxy { endpoint, log }
    }

    /// How many requests matched `text`, and how many of those got a fault.
    pub fn count(&self, text: &str) -> (usize, usize) {
        let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let matching: Vec<_> = log.iter().filter(|(line, _)| line.contains(text)).collect();
        (
            matching.len(),
            matching.iter().filter(|(_, f)| f.is_some()).count(),
        )
    }
}

/// Reads one HTTP/1.1 request: the head (with `Connection: close` forced) and the body.
fn read_request(reader: &mut BufReader<TcpStream>) -> std::io::Result<(String, Vec<u8>)> {
    let mut head = String::new();
    let mut length = 0usize;
    let mut first = true;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if lower.starts_with("transfer-encoding:") || lower.starts_with("expect:") {
            return Err(std::io::Error::other(format!(
                "the fault proxy reads Content-Length bodies only, not {}",
                line.trim()
            )));
        }
        if line == "\r\n" {
            head.push_str("Connection: close\r\n\r\n");
            break;
        }
        if first || !lower.starts_with("connection:") {
            head.push_str(&line);
        }
        first = false;
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok((head, body))
}

fn serve(
    stream: TcpStream,
    upstream: &str,
    plan: &Mutex<FaultPlan>,
    log: &Log,
) -> std::io::Result<()> {
    let timeout = Some(std::time::Duration::from_secs(30));
    stream.set_read_timeout(timeout)?;
    stream.set_write_timeout(timeout)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut client = stream;
    let (head, body) = read_request(&mut reader)?;
    let request_line = head.lines().next().unwrap_or_default().to_owned();
    let fault = {
        let mut plan = plan.lock().unwrap_or_else(|e| e.into_inner());
        if request_line.contains(&plan.matching) {
            plan.faults.pop_front()
        } else {
            None
        }
    }
    .filter(|f| *f != Fault::Pass);
    log.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((request_line, fault));
    // Error answers as AWS REST-JSON services and ARM give them: a code in a header and in
    // the body.
    let reply = |client: &mut TcpStream, status: &str, code: &str, extra: &str| {
        let body = format!(
            "{{\"__type\":\"{code}\",\"message\":\"injected\",\"error\":{{\"code\":\"{code}\",\"message\":\"injected\"}}}}"
        );
        write!(
            client,
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nx-amzn-ErrorType: {code}\r\nx-ms-error-code: {code}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
            body.len()
        )
    };
    match fault {
        Some(Fault::Throttle) => reply(
            &mut client,
            "429 Too Many Requests",
            "ThrottlingException",
            "Retry-After: 1\r\n",
        ),
        Some(Fault::ServerError) => reply(
            &mut client,
            "500 Internal Server Error",
            "ServerException",
            "",
        ),
        Some(Fault::Drop) => Ok(()),
        Some(Fault::Hang) => {
            let answer = forward(upstream, &head, &body)?;
            std::thread::sleep(crate::http::HANG);
            client.write_all(&answer)
        }
        Some(Fault::LoseAnswer) => {
            forward(upstream, &head, &body)?;
            reply(
                &mut client,
                "500 Internal Server Error",
                "ServerException",
                "",
            )
        }
        None | Some(Fault::Pass) => {
            let answer = forward(upstream, &head, &body)?;
            client.write_all(&answer)
        }
    }
}

/// Sends the request upstream on a new connection and returns the whole answer, marked
/// `Connection: close` (this connection ends with it, whatever the upstream said).
fn forward(upstream: &str, head: &str, body: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut server = TcpStream::connect(upstream)?;
    server.set_read_timeout(Some(std::time::Duration::from_secs(30)))?;
    server.write_all(head.as_bytes())?;
    server.write_all(body)?;
    let mut answer = Vec::new();
    server.read_to_end(&mut answer)?;
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(answer.len(), |p| p + 4);
    let head = String::from_utf8_lossy(&answer[..split]);
    let mut rewritten: String = head
        .split_inclusive("\r\n")
        .filter(|line| !line.to_ascii_lowercase().starts_with("connection:"))
        .collect();
    if rewritten.ends_with("\r\n\r\n") {
        rewritten.truncate(rewritten.len() - 2);
        rewritten.push_str("Connection: close\r\n\r\n");
    }
    let mut out = rewritten.into_bytes();
    out.extend_from_slice(&answer[split..]);
    Ok(out)
}
