//! EC2's view of instance types: the GPUs of a type from DescribeInstanceTypes (cached per
//! run), and the `aws_instance_types` data source on it.

use crate::Connected;
use gpustack_protocol::{ReadDataSourceResponse, Value};
use gpustack_provider_sdk::catalog::Gpus;
use gpustack_provider_sdk::check::strings;
use gpustack_provider_sdk::resource::DataSource;
use indexmap::IndexMap;
use std::sync::Arc;

impl Connected {
    /// GPUs of an instance type and where they came from: EC2's answer, else the built-in
    /// table (saying why).
    pub(crate) async fn gpus_of(&self, instance_type: &str) -> Option<(Gpus, String)> {
        if let Some(known) = self
            .gpus
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(instance_type)
        {
            return known.clone();
        }
        let answer = self
            .ec2
            .describe_instance_types()
            .instance_types(aws_sdk_ec2::types::InstanceType::from(instance_type))
            .send()
            .await;
        let out = match answer {
            Ok(out) => out,
            // Not cached: a denied or failed lookup is asked again; the catalog answers now.
            Err(e) => {
                let why = gpustack_protocol::error_chain(&e);
                tracing::warn!("DescribeInstanceTypes {instance_type}: {why}");
                return gpustack_provider_sdk::catalog::gpus(instance_type).map(|g| {
                    (
                        g,
                        format!(
                            "{} (DescribeInstanceTypes failed: {why})",
                            gpustack_provider_sdk::catalog::BUILT_IN
                        ),
                    )
                });
            }
        };
        let gpus = out.instance_types().first().and_then(|t| {
            // Only NVIDIA's GPUs become nvidia.com/gpu (g4ad has AMD's, dl1 Gaudi).
            let gpu = t.gpu_info()?.gpus().iter().find(|g| {
                g.manufacturer()
                    .is_some_and(|m| m.eq_ignore_ascii_case("NVIDIA"))
            })?;
            Some(Gpus {
                count: u32::try_from(gpu.count()?).ok()?,
                model: gpu.name()?.to_owned(),
                memory_gb: u32::try_from(gpu.memory_info()?.size_in_mib()? / 1024).ok()?,
            })
        });
        let gpus = gpus.map(|g| (g, "EC2 DescribeInstanceTypes".to_owned()));
        self.gpus
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(instance_type.to_owned(), gpus.clone());
        gpus
    }
}

/// GPU details of instance types, from DescribeInstanceTypes.
pub(crate) struct InstanceTypes(pub(crate) Arc<Connected>);

#[async_trait::async_trait]
impl DataSource for InstanceTypes {
    async fn read(&self, config: Value) -> ReadDataSourceResponse {
        let mut gpus = IndexMap::new();
        for instance_type in strings(&config, "instance_types") {
            let value = match self.0.gpus_of(&instance_type).await {
                Some((g, _)) => Value::Object(IndexMap::from([
                    ("count".to_owned(), Value::number(f64::from(g.count))),
                    ("model".to_owned(), Value::string(g.model)),
                    (
                        "memory_gb".to_owned(),
                        Value::number(f64::from(g.memory_gb)),
                    ),
                ])),
                None => Value::Null,
            };
            gpus.insert(instance_type, value);
        }
        let mut state = config;
        gpustack_provider_sdk::check::set(&mut state, "gpus", Value::Object(gpus));
        ReadDataSourceResponse {
            state,
            diagnostics: vec![],
        }
    }
}
