//! The providers this binary is built with: one Cargo feature per provider family.

use gpustack_protocol::{ProviderFactory, Registry};
use std::sync::Arc;

/// The providers of this build, plus the `test` provider when the build has it (the test
/// suite's) and `GPUSTACK_TEST_PROVIDER=1`.
#[allow(
    clippy::vec_init_then_push,
    unused_mut,
    reason = "each push is behind the feature of its provider family"
)]
pub fn registry() -> Registry {
    let mut providers: Vec<Arc<dyn ProviderFactory>> = Vec::new();
    #[cfg(feature = "local")]
    providers.push(gpustack_provider_local::provider());
    #[cfg(feature = "local")]
    providers.push(gpustack_provider_local::terraform::provider_with(Some(
        Arc::new(TerraformStates),
    )));
    #[cfg(feature = "local")]
    providers.extend([
        gpustack_provider_local::random::provider(),
        gpustack_provider_local::null::provider(),
        gpustack_provider_http::provider(),
        gpustack_provider_local::time::provider(),
        gpustack_provider_local::tls::provider_with(Some(Arc::new(ServerChains))),
        gpustack_provider_local::archive::provider(),
        gpustack_provider_local::cloudinit::provider(),
        gpustack_provider_local::external::provider(),
    ]);
    #[cfg(feature = "kubernetes")]
    providers.push(gpustack_provider_kubernetes::kubernetes());
    #[cfg(feature = "kubernetes")]
    providers.push(gpustack_provider_kubernetes::kubectl());
    #[cfg(feature = "helm")]
    providers.push(gpustack_provider_helm::provider());
    #[cfg(feature = "kubernetes")]
    providers.push(gpustack_provider_kubernetes::gpu());
    #[cfg(feature = "azure")]
    providers.push(gpustack_provider_azure::provider_with(node_drainer()));
    #[cfg(feature = "azure")]
    providers.push(gpustack_provider_azure::azurerm::provider_with(
        node_drainer(),
    ));
    #[cfg(feature = "aws")]
    providers.push(gpustack_provider_aws::provider_with(node_drainer()));
    #[cfg(feature = "gcp")]
    providers.push(gpustack_provider_gcp::provider_with(node_drainer()));
    // Terraform's google-beta serves the same types as google: a resource takes either by
    // its provider argument, and plain `google` owns them.
    #[cfg(feature = "gcp")]
    providers.push(gpustack_provider_gcp::google::provider_with(
        "google-beta",
        node_drainer(),
    ));
    #[cfg(feature = "gcp")]
    providers.push(gpustack_provider_gcp::google::provider_with(
        "google",
        node_drainer(),
    ));
    #[cfg(feature = "test-provider")]
    if std::env::var_os("GPUSTACK_TEST_PROVIDER").is_some_and(|v| v == "1") {
        providers.push(gpustack_provider_test::provider());
    }
    Registry::new(providers).with_provisioner("local-exec", Arc::new(crate::local_exec::LocalExec))
}

/// What drains a cloud pool's nodes before the pool goes: the cluster crate's Kubernetes
/// client, in a build that has one.
#[cfg(any(feature = "aws", feature = "azure", feature = "gcp"))]
fn node_drainer() -> Option<Arc<dyn gpustack_provider_sdk::pool::NodeDrainer>> {
    #[cfg(feature = "kubernetes")]
    return Some(Arc::new(gpustack_cluster::drain::PoolDrain));
    #[cfg(not(feature = "kubernetes"))]
    None
}

/// Reads TLS servers' chains for `data "tls_certificate"`, with the http provider's TLS client.
#[cfg(feature = "local")]
struct ServerChains;

#[cfg(feature = "local")]
#[async_trait::async_trait]
impl gpustack_provider_local::tls::ChainReader for ServerChains {
    async fn chain(
        &self,
        url: &str,
        verify: bool,
    ) -> Result<Vec<Vec<u8>>, Box<dyn std::error::Error + Send + Sync>> {
        Ok(gpustack_provider_http::chain::peer_certificates(url, verify).await?)
    }
}

/// Reads the Terraform states of remote backends for `terraform_remote_state`, with the
/// state backends' clients (the provider crate links no SDK).
#[cfg(feature = "local")]
struct TerraformStates;

#[cfg(feature = "local")]
#[async_trait::async_trait]
impl gpustack_provider_local::terraform::StateReader for TerraformStates {
    async fn read(
        &self,
        location: &gpustack_provider_local::terraform::RemoteState,
    ) -> Result<Option<Vec<u8>>, Box<dyn std::error::Error + Send + Sync>> {
        use gpustack_backends::terraform_state::{read_kubernetes, read_s3};
        use gpustack_provider_local::terraform::RemoteState;
        let read = match location {
            RemoteState::S3 {
                bucket,
                key,
                region,
                endpoint,
                profile,
                use_path_style,
            } => {
                read_s3(&gpustack_state::S3Config {
                    bucket: bucket.clone(),
                    key: key.clone(),
                    region: region.clone(),
                    endpoint: endpoint.clone(),
                    profile: profile.clone(),
                    use_path_style: *use_path_style,
                    lock_ttl: None,
                    workspace_key_prefix: None,
                })
                .await
            }
            RemoteState::Kubernetes {
                namespace,
                secret,
                config_paths,
                context,
                cluster,
                user,
                in_cluster,
            } => {
                read_kubernetes(
                    &gpustack_state::KubernetesConfig {
                        namespace: namespace.clone(),
                        secret_suffix: String::new(),
                        config_path: None,
                        config_paths: config_paths.clone(),
                        context: context.clone(),
                        cluster: cluster.clone(),
                        user: user.clone(),
                        in_cluster: *in_cluster,
                        lock_ttl: None,
                    },
                    secret,
                )
                .await
            }
        };
        Ok(read?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_has_one_owner() {
        let registry = registry();
        assert_eq!(registry.owner_of("aks_nodepool"), Some("azure"));
        assert_eq!(registry.owner_of("gpu_smoke_test"), Some("gpu"));
        assert_eq!(registry.owner_of("kubernetes_manifest"), Some("kubernetes"));
        assert_eq!(registry.owner_of("eks_nodegroup"), Some("aws"));
        assert_eq!(registry.owner_of("gke_nodepool"), Some("gcp"));
        assert_eq!(registry.owner_of("helm_release"), Some("helm"));
        assert_eq!(registry.owner_of("terraform_data"), Some("terraform"));
        for t in registry
            .resource_types()
            .chain(registry.data_source_types())
        {
            assert!(registry.owner_of(t).is_some(), "{t} has no owner");
        }
    }

    /// A provider that answers its types and its configuration without building its whole
    /// schema (a run's start-up builds only the schemas its stack uses) answers what its whole
    /// schema says: the same names, the same configuration, each type's schema the same.
    #[test]
    fn each_providers_types_are_its_schemas() {
        use gpustack_protocol::{GetSchemaRequest, ProviderTypes, ResourceMode};
        let registry = registry();
        let names: Vec<String> = registry.names().map(str::to_owned).collect();
        for name in names {
            let provider = registry.provider(&name).unwrap();
            let schema = provider.get_schema(GetSchemaRequest {}).schema;
            let mut types = provider.get_provider_types();
            let mut whole = ProviderTypes::of(&schema);
            for t in [&mut types, &mut whole] {
                t.resources.sort();
                t.data_sources.sort();
            }
            assert_eq!(types, whole, "provider {name}");
            assert_eq!(
                provider.get_config_schema(),
                schema.config,
                "provider {name}'s configuration"
            );
            for (mode, of_mode) in [
                (ResourceMode::Managed, &schema.resources),
                (ResourceMode::Data, &schema.data_sources),
            ] {
                for (type_name, type_schema) in of_mode {
                    assert_eq!(
                        provider.get_type_schema(mode, type_name).as_ref(),
                        Some(type_schema),
                        "{name}: {type_name}"
                    );
                }
            }
        }
    }
}
