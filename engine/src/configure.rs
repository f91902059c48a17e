//! Configuring a provider: the one place plan, apply and import turn a provider block's value
//! into a configured provider with its concurrency bound.

use gpustack_protocol::{ConfigureRequest, Diagnostic, Provider, ProviderFactory, Value};
use std::sync::Arc;
use tokio::sync::Semaphore;

/// Calls in flight per provider configuration when its block sets no `max_concurrency`.
pub const DEFAULT_MAX_CONCURRENCY: usize = 128;

/// A configured provider and the permits its calls take.
#[derive(Clone)]
pub(crate) struct Configured {
    pub(crate) instance: Arc<dyn Provider>,
    pub(crate) permits: Arc<Semaphore>,
}

/// The provider block's `max_concurrency`, or [`DEFAULT_MAX_CONCURRENCY`].
fn max_concurrency(config: &Value) -> usize {
    config
        .as_object()
        .and_then(|c| c.get("max_concurrency"))
        .and_then(Value::as_number)
        .filter(|n| *n >= 1.0)
        .map_or(DEFAULT_MAX_CONCURRENCY, |n| n as usize)
}

/// Configures `factory` with a provider block's evaluated value (secrets unmarked: the
/// provider needs them in clear).
pub(crate) async fn configure(
    factory: &Arc<dyn ProviderFactory>,
    config: &Value,
) -> Result<Configured, Vec<Diagnostic>> {
    let permits = Arc::new(Semaphore::new(max_concurrency(config)));
    let instance = factory
        .configure(ConfigureRequest {
            config: config.clone().unmark_deep().0,
        })
        .await?;
    Ok(Configured { instance, permits })
}
