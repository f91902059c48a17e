//! Objects a rollout follows, each kind through one watch: a reflector's store kept current by
//! the watch stream, and a counter bumped on every event, so that a waiting step wakes on the
//! change it waits for instead of polling the API server.

use futures::StreamExt;
use kube::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use std::fmt::Debug;
use std::hash::Hash;
use tokio::sync::watch;
use tokio::time::Instant;

/// A handle on watched objects; clones share the one watch.
#[derive(Clone)]
pub struct View<K: kube::Resource + 'static>
where
    K::DynamicType: Eq + Hash + Clone,
{
    pub store: Store<K>,
    changes: watch::Receiver<u64>,
}

/// The watch behind [`View`]s: dropping it ends the watch.
pub struct Watch<K: kube::Resource + 'static>
where
    K::DynamicType: Eq + Hash + Clone,
{
    view: View<K>,
    driver: tokio::task::JoinHandle<()>,
}

impl<K> Watch<K>
where
    K: kube::Resource + Clone + Debug + Send + Sync + serde::de::DeserializeOwned + 'static,
    K::DynamicType: Eq + Hash + Clone + Default + Send + Sync,
{
    pub fn start(api: Api<K>, config: watcher::Config) -> Self {
        let (store, writer) = reflector::store();
        let (tell, changes) = watch::channel(0u64);
        let stream = reflector::reflector(writer, watcher(api, config).default_backoff());
        let driver = tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            let mut events = 0u64;
            // Errors are retried with the watcher's backoff; waits time out on their own.
            while stream.next().await.is_some() {
                events += 1;
                let _ = tell.send(events);
            }
        });
        Self {
            view: View { store, changes },
            driver,
        }
    }

    pub fn view(&self) -> View<K> {
        self.view.clone()
    }
}

impl<K: kube::Resource + 'static> Drop for Watch<K>
where
    K::DynamicType: Eq + Hash + Clone,
{
    fn drop(&mut self) {
        self.driver.abort();
    }
}

impl<K: kube::Resource + Clone + 'static> View<K>
where
    K::DynamicType: Eq + Hash + Clone,
{
    /// Marks every change so far as seen: [`View::changed`] then waits for a newer one.
    pub fn seen(&mut self) {
        self.changes.borrow_and_update();
    }

    /// Waits for a change after the last [`View::seen`]; never returns once the watch ended.
    pub async fn changed(&mut self) {
        if self.changes.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Waits until the first list has arrived (or the deadline).
    pub async fn ready(&self, deadline: Instant) -> bool {
        tokio::time::timeout_at(deadline, self.store.wait_until_ready())
            .await
            .is_ok_and(|r| r.is_ok())
    }
}
