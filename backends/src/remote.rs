//! What the remote backends share: the lock TTL setting, the version a write compares
//! against, lock expiry without trusting another machine's clock, and lock renewal.

use gpustack_state::{Backend, Fence, LockInfo, StateError};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    if ttl < MIN_TTL {
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

/// Decides when another run's lock has expired, on this process's own monotonic clock only,
/// as client-go's leader election does (its observed record and observed time): a lock has
/// expired once this process has watched it stay the same — the same version (a
/// resourceVersion, an ETag with the record's write marker) — for the holder's whole TTL.
/// Every renewal changes the version, so a holder that renews is never taken over, however
/// far its clock is from this machine's: no timestamp written by another machine is read.
///
/// A run that meets the lock of a holder long gone therefore waits one TTL of its own
/// watching before it takes the lock over (with `--lock-timeout` at least that long).
#[derive(Default)]
pub(crate) struct Expiry {
    seen: Option<(String, Instant)>,
}

impl Expiry {
    /// How long this process has watched the lock unchanged, once that is at least `ttl`.
    /// `version` must change with every write of the lock.
    pub(crate) fn check(&mut self, version: &str, ttl: Duration) -> Option<Duration> {
        match &self.seen {
            Some((seen, since)) if seen == version => {
                let watched = since.elapsed();
                (watched >= ttl).then_some(watched)
            }
            // Taken when the answer is in: the version was written before that.
            _ => {
                self.seen = Some((version.to_owned(), Instant::now()));
                None
            }
        }
    }
}

/// The TTL a lock record states, never below the least a backend block accepts.
pub(crate) fn recorded_ttl(seconds: u64) -> Duration {
    Duration::from_secs(seconds.max(MIN_TTL.as_secs()))
}

const MIN_TTL: Duration = Duration::from_secs(3);

/// What the notice of a takeover says.
pub(crate) fn takeover_notice(held: &LockInfo, watched: Duration, ttl: Duration) -> String {
    format!(
        "The lock held by {} (pid {}) for {} since {} expired: this run saw it unrenewed for {}s (lock TTL {}s). Taking it over.",
        held.who,
        held.pid,
        held.operation,
        held.created,
        watched.as_secs(),
        ttl.as_secs()
    )
}

pub(crate) enum Renewal {
    Renewed,
    /// Someone else holds the lock now (took it over, or force-unlocked it).
    Lost(String),
    Failed(String),
}

/// How long after a write of the lock was sent its holder may still count on the lock: two
/// thirds of the TTL. A waiter takes the lock over only after watching that write unchanged
/// for the whole TTL, which it cannot start watching before the write was made, so the holder
/// stops a third of the TTL before anyone can take over (room for its monotonic clock to run
/// slower than the waiter's, and for the operation it is finishing).
pub(crate) fn vouched(ttl: Duration) -> Duration {
    ttl * 2 / 3
}

/// Renews every third of the TTL (sooner after a failed attempt), each attempt bounded by that
/// interval. `acquired` is when
/// the write that took the lock was sent; the fence holds until two thirds of the TTL after
/// the last renewal that was confirmed (counted from when it was sent), and is lost then, or
/// as soon as the lock turns out to be someone else's.
pub(crate) async fn keep_renewing<F, Fut>(
    ttl: Duration,
    fence: Arc<Fence>,
    acquired: Instant,
    mut renew: F,
) where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Renewal>,
{
    let every = (ttl / 3).max(Duration::from_secs(1));
    // After a failed attempt, the next comes sooner: there is until the deadline to succeed.
    let again = (every / 4).max(Duration::from_millis(500));
    let mut wait = every;
    let mut renewed = acquired;
    fence.hold_until(renewed + vouched(ttl));
    loop {
        let deadline = tokio::time::Instant::from_std(renewed + vouched(ttl));
        let attempt = async {
            tokio::time::sleep(wait).await;
            let sent = Instant::now();
            let outcome = tokio::time::timeout(every, renew())
                .await
                .unwrap_or_else(|_| {
                    Renewal::Failed(format!("no answer within {}s", every.as_secs()))
                });
            (sent, outcome)
        };
        let (sent, outcome) = tokio::select! {
            () = tokio::time::sleep_until(deadline) => {
                eprintln!(
                    "Error: the state lock was not renewed for {}s (TTL {}s): this run no longer holds the state lock.",
                    renewed.elapsed().as_secs(),
                    ttl.as_secs()
                );
                fence.lose();
                return;
            }
            done = attempt => done,
        };
        match outcome {
            Renewal::Renewed => {
                renewed = sent;
                fence.hold_until(renewed + vouched(ttl));
                wait = every;
            }
            Renewal::Lost(why) => {
                eprintln!("Error: {why}: this run no longer holds the state lock.");
                fence.lose();
                return;
            }
            Renewal::Failed(why) => {
                eprintln!("Warning: cannot renew the state lock: {why}");
                wait = again;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_expires_only_once_watched_unchanged_for_its_ttl() {
        let ttl = Duration::from_millis(300);
        let mut expiry = Expiry::default();
        assert_eq!(
            expiry.check("v1", ttl),
            None,
            "first sight starts the watch"
        );
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(expiry.check("v1", ttl), None);
        // A renewal: the watch starts again.
        assert_eq!(expiry.check("v2", ttl), None);
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(expiry.check("v2", ttl), None);
        std::thread::sleep(Duration::from_millis(150));
        assert!(expiry.check("v2", ttl).is_some_and(|w| w >= ttl));
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_holder_whose_renewals_fail_loses_its_fence_before_anyone_can_take_over() {
        let ttl = Duration::from_secs(3);
        let fence = Fence::new();
        let acquired = Instant::now();
        let renewing = tokio::spawn(keep_renewing(ttl, fence.clone(), acquired, || async {
            // Hangs past the attempt's bound: the deadline must not wait for it.
            tokio::time::sleep(Duration::from_secs(30)).await;
            Renewal::Failed("unreachable".into())
        }));
        while !fence.is_lost() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let lost_after = acquired.elapsed();
        assert!(
            lost_after >= vouched(ttl) && lost_after < ttl,
            "lost after {lost_after:?}"
        );
        renewing.await.unwrap();
    }

    #[test]
    fn a_fence_expires_by_itself_when_no_task_runs() {
        let fence = Fence::new();
        fence.hold_until(Instant::now() + Duration::from_millis(50));
        assert!(!fence.is_lost());
        std::thread::sleep(Duration::from_millis(80));
        assert!(fence.is_lost());
        fence.hold_until(Instant::now() + Duration::from_secs(60));
        assert!(fence.is_lost(), "a lost fence stays lost");
    }
}
