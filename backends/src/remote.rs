//! What the remote backends share: the lock TTL setting, the version a write compares
//! against, lock expiry without trusting another machine's clock, and lock renewal.

use gpustack_state::{Backend, StateError};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// `lock_ttl` of a backend block; the default when unset.
pub(crate) fn lock_ttl(
    kind: &'static str,
    text: Option<&str>,
    default: Duration,
) -> Result<Duration, StateError> {
    let ttl = match text {
        Some(text) => humantime::parse_duration(text).map_err(|e| StateError::Connect {
            kind,
            source: format!("lock_ttl = {text:?}: {e}").into(),
        })?,
        None => default,
    };
    if ttl < Duration::from_secs(3) {
        return Err(StateError::Connect {
            kind,
            source: "lock_ttl must be at least 3s".into(),
        });
    }
    Ok(ttl)
}

/// The version of the stored state (a resourceVersion, an ETag) as this process last read or
/// wrote it, which its next write must compare against.
pub(crate) struct Seen<T>(std::sync::Mutex<Option<Option<T>>>);

impl<T: Clone> Seen<T> {
    pub(crate) fn new() -> Self {
        Self(std::sync::Mutex::new(None))
    }

    /// `None` (the outer one): never looked; `Some(None)`: there was no state.
    fn get(&self) -> Option<Option<T>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn remember(&self, version: Option<T>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(version);
    }

    /// What a write compares against, reading the state first if this process never has.
    pub(crate) async fn before_write(
        &self,
        backend: &dyn Backend,
    ) -> Result<Option<T>, StateError> {
        if let Some(seen) = self.get() {
            return Ok(seen);
        }
        backend.read().await?;
        Ok(self.get().flatten())
    }
}

/// Decides when another run's lock has expired without trusting that run's clock alone: a
/// lock whose version (resourceVersion, ETag) this process has watched stay the same for the
/// TTL has expired, as in client-go's leader election; so has one whose last renewal looks
/// older than twice the TTL by this machine's clock (a holder long gone, seen for the first
/// time), which tolerates clocks that differ by more than the TTL.
#[derive(Default)]
pub(crate) struct Expiry {
    seen: Option<(String, std::time::Instant)>,
}

impl Expiry {
    /// How long the lock has not been renewed, if it has expired.
    pub(crate) fn check(
        &mut self,
        version: &str,
        stamp_age: Option<Duration>,
        ttl: Duration,
    ) -> Option<Duration> {
        let watched = match &self.seen {
            Some((v, since)) if v == version => since.elapsed(),
            _ => {
                self.seen = Some((version.to_owned(), std::time::Instant::now()));
                Duration::ZERO
            }
        };
        let stamp_age = stamp_age.unwrap_or_default();
        if watched > ttl {
            Some(watched.max(stamp_age))
        } else if stamp_age > ttl * 2 {
            Some(stamp_age)
        } else {
            None
        }
    }
}

pub(crate) enum Renewal {
    Renewed,
    /// Someone else holds the lock now (took it over, or force-unlocked it).
    Lost(String),
    Failed(String),
}

/// Renews every third of the TTL, each attempt bounded by that interval. Sets `lost` when the
/// lock is gone, or when it has not been renewed for two thirds of the TTL: from then on
/// another run may soon take it over, so this one must stop starting operations.
pub(crate) async fn keep_renewing<F, Fut>(ttl: Duration, lost: Arc<AtomicBool>, mut renew: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Renewal>,
{
    let every = (ttl / 3).max(Duration::from_secs(1));
    let mut renewed = std::time::Instant::now();
    loop {
        tokio::time::sleep(every).await;
        let outcome = tokio::time::timeout(every, renew())
            .await
            .unwrap_or_else(|_| Renewal::Failed(format!("no answer within {}s", every.as_secs())));
        match outcome {
            Renewal::Renewed => renewed = std::time::Instant::now(),
            Renewal::Lost(why) => {
                eprintln!("Error: {why}: this run no longer holds the state lock.");
                lost.store(true, std::sync::atomic::Ordering::SeqCst);
                return;
            }
            Renewal::Failed(why) => {
                eprintln!("Warning: cannot renew the state lock: {why}");
                if renewed.elapsed() > ttl * 2 / 3 {
                    eprintln!(
                        "Error: the state lock was not renewed for {}s (TTL {}s): this run can no longer count on holding it.",
                        renewed.elapsed().as_secs(),
                        ttl.as_secs()
                    );
                    lost.store(true, std::sync::atomic::Ordering::SeqCst);
                    return;
                }
            }
        }
    }
}
