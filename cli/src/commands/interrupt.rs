//! Ctrl-C and SIGTERM. A command that holds the state lock never leaves it behind when it is
//! interrupted: plan, drift, the state commands, import and init release every lock they hold
//! and exit at the first signal (130 for Ctrl-C, 143 for SIGTERM); apply, destroy and test
//! first stop starting operations and let the ones in flight finish, and a second signal
//! releases the locks and exits at once.
//!
//! **Invariant:** the signal listener is in place before a lock is taken, and a lock being
//! taken when the signal comes is released too once it is held (waited for a few seconds)
//! (`fast::locks::an_interrupted_command_leaves_no_lock`,
//! `world::backends::*_locks_with_*`). A local lock also ends with the
//! process whatever ends it; a remote lock whose release cannot reach its store stays until a
//! run waiting for it has watched it unrenewed for its TTL.

use gpustack_state::{LockGuard, LockHandle};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The locks this process holds or held (releasing one twice is harmless).
static LOCKS: Mutex<Vec<LockHandle>> = Mutex::new(Vec::new());
/// Locks being taken right now.
static ACQUIRING: AtomicUsize = AtomicUsize::new(0);
/// The stop flag of a command that stops gracefully at the first signal.
static GRACEFUL: Mutex<Option<Arc<AtomicBool>>> = Mutex::new(None);
/// Whether the listener runs in the current runtime.
static LISTENING: AtomicBool = AtomicBool::new(false);

/// How long an interrupted command waits for a lock it is taking before it exits.
const ACQUIRE_GRACE: Duration = Duration::from_secs(5);

/// A lock being taken: counted until dropped, so that an interrupt meanwhile waits for it.
pub struct Acquiring(());

impl Drop for Acquiring {
    fn drop(&mut self) {
        ACQUIRING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Call before taking a lock (in the runtime that will hold it).
pub fn acquiring() -> Acquiring {
    listen();
    ACQUIRING.fetch_add(1, Ordering::SeqCst);
    Acquiring(())
}

/// A lock now held, released if the command is interrupted.
pub fn hold(guard: &LockGuard) {
    LOCKS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(guard.handle());
}

/// The flag the first Ctrl-C or SIGTERM sets: operations in flight finish and the state is
/// saved. A second signal releases the locks and exits.
pub fn graceful() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    *GRACEFUL.lock().unwrap_or_else(|e| e.into_inner()) = Some(stop.clone());
    listen();
    stop
}

/// Starts the listener in the current runtime, once.
fn listen() {
    if LISTENING.swap(true, Ordering::SeqCst) {
        return;
    }
    /// Lets a later runtime start its own listener once this one's is gone.
    struct Listening;
    impl Drop for Listening {
        fn drop(&mut self) {
            LISTENING.store(false, Ordering::SeqCst);
        }
    }
    let signals = Signals::new();
    tokio::spawn(async move {
        let _listening = Listening;
        let mut signals = signals;
        let mut interrupted = false;
        loop {
            let code = signals.next().await;
            let stop = GRACEFUL.lock().unwrap_or_else(|e| e.into_inner()).clone();
            if let Some(stop) = stop
                && !interrupted
            {
                interrupted = true;
                eprintln!(
                    "\nInterrupt received: waiting for operations in flight, then saving the state. Press Ctrl-C again to abort."
                );
                stop.store(true, Ordering::SeqCst);
                continue;
            }
            release_all().await;
            std::process::exit(code);
        }
    });
}

async fn release_all() {
    let waited = tokio::time::Instant::now();
    while ACQUIRING.load(Ordering::SeqCst) > 0 && waited.elapsed() < ACQUIRE_GRACE {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let handles: Vec<LockHandle> =
        std::mem::take(&mut *LOCKS.lock().unwrap_or_else(|e| e.into_inner()));
    if handles.is_empty() {
        return;
    }
    futures::future::join_all(handles.iter().map(LockHandle::release)).await;
    eprintln!("\nInterrupted: the state lock was released.");
}

/// Ctrl-C and SIGTERM, as the exit code each ends the process with.
struct Signals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    /// Registered at once, so that a signal from now on is caught rather than killing the
    /// process with its lock.
    fn new() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Self {
                term: signal(SignalKind::terminate()).ok(),
                int: signal(SignalKind::interrupt()).ok(),
            }
        }
        #[cfg(not(unix))]
        {
            Self {}
        }
    }

    async fn next(&mut self) -> i32 {
        #[cfg(unix)]
        {
            let Self { term, int } = self;
            let term = async {
                match term.as_mut() {
                    Some(term) => term.recv().await,
                    None => std::future::pending().await,
                }
            };
            let int = async {
                match int.as_mut() {
                    Some(int) => int.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = int => 130,
                _ = term => 143,
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            130
        }
    }
}
