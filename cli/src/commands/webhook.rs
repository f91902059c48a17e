//! `drift --webhook URL`: posts the drift report when drift appears, changes or goes away,
//! not on every run, so that a cron every five minutes does not page anyone twice.
//!
//! What was last reported is a note in the state backend (`drift-webhook.json`), so that a
//! cron Job whose disk is new every run remembers it; it is written only after a post
//! succeeded, so a failed post is retried by the next run.

use gpustack_engine::Plan;
use gpustack_state::Backend;
use sha2::{Digest, Sha256};
use std::time::Duration;

const RECORD: &str = "drift-webhook.json";

const ATTEMPTS: u32 = 3;

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub enum Event {
    Detected,
    Changed,
    Resolved,
}

impl Event {
    fn name(self) -> &'static str {
        match self {
            Event::Detected => "drift_detected",
            Event::Changed => "drift_changed",
            Event::Resolved => "drift_resolved",
        }
    }
}

#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Reported {
    /// SHA-256 of the drifted objects and their live values; empty for "no drift".
    fingerprint: String,
    drifted: Vec<String>,
}

fn fingerprint(report: &serde_json::Value) -> String {
    let drift = &report["resource_drift"];
    let gpus = &report["gpu_capacity_drift"];
    if drift.as_array().is_none_or(Vec::is_empty) && gpus.as_array().is_none_or(Vec::is_empty) {
        return String::new();
    }
    format!("{:x}", Sha256::digest(format!("{drift}{gpus}").as_bytes()))
}

/// What to post, given what was reported before (`None`: never) and the report now.
pub fn event(before: Option<&str>, now: &str) -> Option<Event> {
    match (before.unwrap_or(""), now) {
        ("", "") => None,
        ("", _) => Some(Event::Detected),
        (_, "") => Some(Event::Resolved),
        (b, n) if b != n => Some(Event::Changed),
        _ => None,
    }
}

/// The URL without credentials, path and query, which often hold the hook's secret token.
fn redacted(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
            let host = authority.rsplit('@').next().unwrap_or_default();
            format!("{scheme}://{host}/…")
        }
        None => "(the webhook URL)".to_owned(),
    }
}

/// Posts the report if the drift differs from what was last reported; `Ok(None)` when there
/// was nothing new to say.
pub async fn notify(
    url: &str,
    backend: &dyn Backend,
    stack: &str,
    plan: &Plan,
) -> Result<Option<Event>, String> {
    let report = gpustack_engine::drift_json(plan);
    // Without the record the run cannot tell new drift from old: better no post than a
    // repeated page.
    let before: Option<Reported> = backend
        .read_note(RECORD)
        .await
        .map_err(|e| {
            format!(
                "cannot read what the webhook was last sent: {}",
                super::backend::full(&e)
            )
        })?
        .and_then(|b| serde_json::from_slice(&b).ok());
    let now = fingerprint(&report);
    let Some(event) = event(before.as_ref().map(|r| r.fingerprint.as_str()), &now) else {
        return Ok(None);
    };
    let drifted: Vec<String> = plan
        .resource_drift
        .iter()
        .map(|c| c.address.clone())
        .chain(plan.gpu_drift.iter().map(|d| format!("node {}", d.node)))
        .collect();
    let body = serde_json::json!({
        "event": event.name(),
        "stack": stack,
        "drifted": drifted,
        "previously_drifted": before.map(|b| b.drifted).unwrap_or_default(),
        "report": report,
    });
    let target = url.to_owned();
    tokio::task::spawn_blocking(move || post(&target, &body))
        .await
        .map_err(|e| e.to_string())??;
    let reported = Reported {
        fingerprint: now,
        drifted,
    };
    backend
        .write_note(
            RECORD,
            &serde_json::to_vec_pretty(&reported).unwrap_or_default(),
        )
        .await
        .map_err(|e| format!("posted, but cannot record it: {}", super::backend::full(&e)))?;
    Ok(Some(event))
}

/// Posts with retries and backoff.
fn post(url: &str, body: &serde_json::Value) -> Result<(), String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let mut last = String::new();
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            std::thread::sleep(Duration::from_secs(1 << (attempt - 1)));
        }
        match agent
            .post(url)
            .header("Content-Type", "application/json")
            .header(
                "User-Agent",
                concat!("gpustack/", env!("CARGO_PKG_VERSION")),
            )
            .send(body.to_string())
        {
            Ok(_) => return Ok(()),
            Err(e) => last = e.to_string().replace(url, &redacted(url)),
        }
    }
    Err(format!(
        "cannot post to the webhook at {} after {ATTEMPTS} attempts: {last}; the next run tries again",
        redacted(url)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_changes_of_drift_are_posted() {
        assert_eq!(event(None, ""), None);
        assert_eq!(event(Some(""), ""), None);
        assert_eq!(event(None, "abc"), Some(Event::Detected));
        assert_eq!(event(Some("abc"), "abc"), None);
        assert_eq!(event(Some("abc"), "def"), Some(Event::Changed));
        assert_eq!(event(Some("abc"), ""), Some(Event::Resolved));
    }

    #[test]
    fn secret_paths_of_webhook_urls_are_not_shown() {
        assert_eq!(
            redacted("https://user:t0ken@hooks.example.com/x"),
            "https://hooks.example.com/…"
        );
        assert_eq!(
            redacted("https://hooks.slack.com/services/T000/B000/XXXX"),
            "https://hooks.slack.com/…"
        );
    }
}
