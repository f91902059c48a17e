//! The names NVIDIA's Kubernetes components publish and read, in one place for the engine's
//! capacity pass and every provider.

/// The extended resource a GPU node advertises.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
/// The resource a shared GPU is advertised as when the sharing config sets `renameByDefault`.
pub const SHARED_GPU_RESOURCE: &str = "nvidia.com/gpu.shared";
/// The node label that picks a node's key of the device-plugin config.
pub const DEVICE_PLUGIN_CONFIG_LABEL: &str = "nvidia.com/device-plugin.config";
/// GPU Feature Discovery's labels: how many GPUs, and which model.
pub const GPU_COUNT_LABEL: &str = "nvidia.com/gpu.count";
pub const GPU_PRODUCT_LABEL: &str = "nvidia.com/gpu.product";
/// The GPU Operator's ClusterPolicy.
pub const CLUSTER_POLICY_API_VERSION: &str = "nvidia.com/v1";
pub const CLUSTER_POLICY_KIND: &str = "ClusterPolicy";
/// GPU Operator's DRA stack (26.7), instead of a ClusterPolicy: one per cluster.
pub const GPU_CLUSTER_API_VERSION: &str = "nvidia.com/v1alpha1";
pub const GPU_CLUSTER_KIND: &str = "GPUCluster";
/// The driver name of NVIDIA's DRA driver in ResourceSlices and DeviceClasses.
pub const DRA_DRIVER: &str = "gpu.nvidia.com";
