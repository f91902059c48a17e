//! The GPU models the simulator knows: product label, memory, PCI device id and MIG profiles
//! with their maximum count per GPU (GPU-FACTS.md, "MIG").

#[derive(Debug, PartialEq, Eq)]
pub struct GpuModel {
    /// GFD's `nvidia.com/gpu.product` value.
    pub product: &'static str,
    pub memory_mib: u64,
    /// The PCI device id mig-parted's `device-filter` matches (`0x20B210DE`).
    pub device_id: &'static str,
    /// MIG profile → how many fit on one GPU; empty when the GPU has no MIG.
    pub mig_profiles: &'static [(&'static str, u32)],
    /// What NVML names the GPU, and so the DRA driver's `productName`.
    pub dra_product: &'static str,
    /// NVML's architecture and CUDA compute capability, as the DRA driver writes them.
    pub architecture: &'static str,
    pub compute_capability: &'static str,
}

const A100_40: &[(&str, u32)] = &[
    ("1g.5gb", 7),
    ("1g.10gb", 4),
    ("2g.10gb", 3),
    ("3g.20gb", 2),
    ("4g.20gb", 1),
    ("7g.40gb", 1),
];
const GB80: &[(&str, u32)] = &[
    ("1g.10gb", 7),
    ("1g.20gb", 4),
    ("2g.20gb", 3),
    ("3g.40gb", 2),
    ("4g.40gb", 1),
    ("7g.80gb", 1),
];
const H200: &[(&str, u32)] = &[
    ("1g.18gb", 7),
    ("1g.35gb", 4),
    ("2g.35gb", 3),
    ("3g.71gb", 2),
    ("4g.71gb", 1),
    ("7g.141gb", 1),
];

pub const MODELS: &[GpuModel] = &[
    GpuModel {
        product: "Tesla-T4",
        memory_mib: 15360,
        device_id: "0x1EB810DE",
        mig_profiles: &[],
        dra_product: "Tesla T4",
        architecture: "Turing",
        compute_capability: "7.5.0",
    },
    GpuModel {
        product: "Tesla-V100-SXM2-16GB",
        memory_mib: 16384,
        device_id: "0x1DB110DE",
        mig_profiles: &[],
        dra_product: "Tesla V100-SXM2-16GB",
        architecture: "Volta",
        compute_capability: "7.0.0",
    },
    GpuModel {
        product: "NVIDIA-A10G",
        memory_mib: 23028,
        device_id: "0x223710DE",
        mig_profiles: &[],
        dra_product: "NVIDIA A10G",
        architecture: "Ampere",
        compute_capability: "8.6.0",
    },
    GpuModel {
        product: "NVIDIA-L4",
        memory_mib: 23034,
        device_id: "0x27B810DE",
        mig_profiles: &[],
        dra_product: "NVIDIA L4",
        architecture: "Ada Lovelace",
        compute_capability: "8.9.0",
    },
    GpuModel {
        product: "NVIDIA-A100-SXM4-40GB",
        memory_mib: 40960,
        device_id: "0x20B010DE",
        mig_profiles: A100_40,
        dra_product: "NVIDIA A100-SXM4-40GB",
        architecture: "Ampere",
        compute_capability: "8.0.0",
    },
    GpuModel {
        product: "NVIDIA-A100-SXM4-80GB",
        memory_mib: 81920,
        device_id: "0x20B210DE",
        mig_profiles: GB80,
        dra_product: "NVIDIA A100-SXM4-80GB",
        architecture: "Ampere",
        compute_capability: "8.0.0",
    },
    GpuModel {
        product: "NVIDIA-H100-80GB-HBM3",
        memory_mib: 81559,
        device_id: "0x233010DE",
        mig_profiles: GB80,
        dra_product: "NVIDIA H100 80GB HBM3",
        architecture: "Hopper",
        compute_capability: "9.0.0",
    },
    GpuModel {
        product: "NVIDIA-H200",
        memory_mib: 143771,
        device_id: "0x233510DE",
        mig_profiles: H200,
        dra_product: "NVIDIA H200",
        architecture: "Hopper",
        compute_capability: "9.0.0",
    },
];

/// A model by its product label.
pub fn model(product: &str) -> Option<&'static GpuModel> {
    MODELS.iter().find(|m| m.product == product)
}

impl GpuModel {
    /// How many instances of a profile fit on one GPU; `+me` variants fit once.
    pub fn max_instances(&self, profile: &str) -> Option<u32> {
        let base = profile.split('+').next().unwrap_or(profile);
        let max = self
            .mig_profiles
            .iter()
            .find(|(p, _)| *p == base)
            .map(|(_, n)| *n)?;
        Some(if profile.contains('+') { 1 } else { max })
    }
}
