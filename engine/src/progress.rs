//! Progress of long operations on stderr: on a terminal a live status line of what is in
//! flight under the finished lines; elsewhere (CI logs) plain lines, with
//! `Still creating... [1m10s elapsed]` every 10 s for each operation still running.

use indexmap::IndexMap;
use std::io::Write;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const STILL_EVERY: Duration = Duration::from_secs(10);

struct Operation {
    verb: &'static str,
    started: Instant,
    reported: Instant,
}

pub(crate) struct Progress {
    live: bool,
    operations: Mutex<IndexMap<String, Operation>>,
}

pub(crate) fn elapsed(d: Duration) -> String {
    let secs = d.as_secs();
    if secs >= 60 {
        format!("{}m{}s", secs / 60, secs % 60)
    } else {
        format!("{secs}s")
    }
}

impl Progress {
    pub(crate) fn new(live: bool) -> Self {
        Self {
            live,
            operations: Mutex::new(IndexMap::new()),
        }
    }

    /// How often `tick` should run.
    pub(crate) fn interval(&self) -> Duration {
        if self.live {
            Duration::from_millis(250)
        } else {
            Duration::from_secs(1)
        }
    }

    pub(crate) fn start(&self, address: &str, verb: &'static str) {
        let now = Instant::now();
        self.lock().insert(
            address.to_owned(),
            Operation {
                verb,
                started: now,
                reported: now,
            },
        );
        self.line(&format!("{address}: {verb}..."));
    }

    /// Ends an operation; `done` is what to say about it (e.g. "Creation complete").
    pub(crate) fn finish(&self, address: &str, done: Option<&str>) {
        let operation = self.lock().shift_remove(address);
        if let (Some(op), Some(done)) = (operation, done) {
            self.line(&format!(
                "{address}: {done} after {}",
                elapsed(op.started.elapsed())
            ));
        } else if self.live {
            self.redraw();
        }
    }

    pub(crate) fn tick(&self) {
        if self.live {
            self.redraw();
            return;
        }
        let mut lines = Vec::new();
        for (address, op) in self.lock().iter_mut() {
            if op.reported.elapsed() >= STILL_EVERY {
                op.reported = Instant::now();
                lines.push(format!(
                    "{address}: Still {}... [{} elapsed]",
                    op.verb.to_lowercase(),
                    elapsed(op.started.elapsed())
                ));
            }
        }
        for line in lines {
            eprintln!("{line}");
        }
    }

    /// Clears the status line when the run is over.
    pub(crate) fn close(&self) {
        if self.live {
            eprint!("\r\x1b[2K");
            let _ = std::io::stderr().flush();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, IndexMap<String, Operation>> {
        self.operations.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn line(&self, text: &str) {
        if self.live {
            eprint!("\r\x1b[2K{text}\n");
            self.redraw();
        } else {
            eprintln!("{text}");
        }
    }

    fn redraw(&self) {
        let status = {
            let operations = self.lock();
            if operations.is_empty() {
                String::new()
            } else {
                let items: Vec<String> = operations
                    .iter()
                    .take(4)
                    .map(|(a, op)| format!("{a} ({})", elapsed(op.started.elapsed())))
                    .collect();
                let more = operations.len().saturating_sub(4);
                let tail = if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                };
                format!(
                    "… {} in progress: {}{tail}",
                    operations.len(),
                    items.join(", ")
                )
            }
        };
        let width = 120;
        let status: String = status.chars().take(width).collect();
        eprint!("\r\x1b[2K{status}");
        let _ = std::io::stderr().flush();
    }
}
