//! The `kubernetes`, `kubectl` and `gpu` providers: they share one cluster connection and its API
//! discovery (`cluster`); `kubernetes` and `kubectl` also share their configuration and what a
//! plan learns of the cluster (`connection`). `kubernetes` (its schema and checks in `kubernetes`)
//! applies objects by server-side apply and waits for them (`manifest`, `wait`) and reads the
//! GPU capacity a sharing policy gives the nodes (`capacity`); `gpu` labels GPU nodes and runs
//! smoke tests on them (`gpu`).

mod capacity;
mod cluster_info;
/// The shared cluster connection, under the path the provider's modules name it by.
use gpustack_cluster as cluster;
mod collateral;
mod connection;
mod data;
mod gpu;
mod kubectl;
mod kubernetes;
mod manifest;
mod one_shot;
mod owned_fields;
mod rollout;
mod taint;
mod takeover;
mod typed;
#[rustfmt::skip]
mod typed_fields;
mod typed_vocabulary;
mod types;
mod wait;

use gpustack_protocol::ProviderFactory;
use gpustack_provider_sdk::family::Factory;
use std::sync::Arc;

/// The `kubernetes` provider, for a registry.
pub fn kubernetes() -> Arc<dyn ProviderFactory> {
    Arc::new(Factory(kubernetes::Kubernetes))
}

/// The `kubectl` provider (gavinbunney/kubectl's schema), for a registry.
pub fn kubectl() -> Arc<dyn ProviderFactory> {
    Arc::new(Factory(kubectl::Kubectl))
}

/// The `gpu` provider, for a registry.
pub fn gpu() -> Arc<dyn ProviderFactory> {
    Arc::new(Factory(gpu::Gpu))
}
